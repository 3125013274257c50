"""An entry point a kernel calls, as data: one class's overloads (optionally several methods
picked by a ``select`` keyword), its call shape and what a two-phase constructor fixed. The
user-facing object (coopgen.api.primitives.Primitive) is one of these with host behaviour."""
from dataclasses import KW_ONLY, dataclass, field

from ..model.errors import CoopgenError
from ..model.spec import ClassSpec, MSpec
from .shape import CallShape, pick
from .templates import template_keywords


@dataclass(eq=False)  # compared by identity: numba registers each entry point
class Entry:
    name: str
    cls: ClassSpec
    methods: dict[str, tuple[MSpec, ...]]  # selector value ("" when none) -> overloads
    _: KW_ONLY
    select: str | None = None
    fixed: dict | None = None  # template keywords a two-phase constructor fixed
    constructor: bool = False  # calls build a parent object
    parent: object = None  # calls are methods of this constructed object (an ObjectKind)
    infer: str | None = None  # object factory: the method whose call infers the template args
    bind: tuple = ()  # ... the arguments the object keeps
    aliases: dict | None = None  # ... and its snake_case method names
    shape: CallShape | None = None  # cuda.coop's call shape (None: the faithful surface)
    host: tuple | None = None  # positional order of the two-phase host call
    instance: tuple | None = None  # ... and of the objects it returns
    call_fixed: dict | None = None  # call arguments a two-phase constructor fixed (an operator)
    method_args: dict | None = None  # object methods' positional order
    refused: dict | None = None  # argument -> why this entry takes none (cuda.coop)
    required: dict | None = None  # argument -> the error when it is not given (cuda.coop)

    def __post_init__(self):
        self.bind = tuple(self.bind)
        for name in ("fixed", "call_fixed", "method_args", "refused", "required"):
            setattr(self, name, dict(getattr(self, name) or {}))

    def __repr__(self):
        fixed = ", ".join(f"{k}={v!r}" for k, v in self.fixed.items())
        return f"<coopgen {self.name}({fixed})>"

    def class_template_kws(self) -> dict:
        """The fixed template keywords that are the class's (not the method selector)."""
        return {k: v for k, v in self.fixed.items() if k != self.select}

    def template_keywords(self) -> set[str]:
        return template_keywords(self.cls) | ({self.select} if self.select else set())

    def pick_methods(self, selector) -> tuple[MSpec, ...]:
        if self.select is None:
            return self.methods[""]
        if selector is None:
            raise CoopgenError(f"{self.name}: missing required argument {self.select}=; "
                               f"allowed: {', '.join(map(repr, self.methods))}")
        chosen = pick(self.name, self.select, list(self.methods), selector)
        return tuple(m for key in chosen for m in self.methods[key])


@dataclass(frozen=True)
class ObjectKind:
    """What a backend's type of a constructed CUB object holds (it adds the arguments the
    object keeps, as its own types): the class, its template arguments and block shape, the
    constructor's template keywords, and for the Pythonic surface the snake_case method names
    and their call shapes (pythonic.toml's method_args)."""
    cls: ClassSpec
    template_args: tuple
    block_dims: tuple | None
    template_kws: tuple
    aliases: tuple | None  # (snake_case, CUB method) pairs
    shape_slots: tuple  # (CUB method, its call shape's slots): what tells two shapes apart
    shapes: tuple = field(compare=False)  # (CUB method, CallShape) pairs

    @classmethod
    def of(cls, ctor: Entry, resolved, template_kws: tuple) -> "ObjectKind":
        aliases = dict(ctor.aliases) if ctor.aliases else None
        shapes = tuple((m, ctor.shape.with_slots(ctor.method_args[a]))
                       for a, m in (aliases or {}).items()
                       if ctor.shape is not None and a in ctor.method_args)
        return cls(resolved.cls, resolved.template_args, resolved.block_dims, template_kws,
                   tuple(aliases.items()) if aliases else None,
                   tuple(sorted((m, s.slots) for m, s in shapes)), shapes)

    def method_names(self) -> dict:
        """The names kernels call -> the CUB methods."""
        return dict(self.aliases) if self.aliases else {m: m for m in self.cls.method_names}

    def method_entry(self, attr: str) -> Entry:
        """The CUB method ``attr`` called on the object."""
        return Entry(f"{self.cls.scope}.{self.cls.name}.{attr}", self.cls,
                     {"": self.cls.overloads(attr)}, fixed=dict(self.template_kws),
                     parent=self, shape=dict(self.shapes).get(attr))

    def kept_keywords(self, bound: tuple, method: str) -> dict:
        """The kept arguments (``bound``: (name, type) pairs) the method takes, as keywords."""
        names = {x.name for m in self.cls.overloads(method) for x in m.params}
        return {n: t for n, t in bound if n in names}
