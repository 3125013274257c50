"""The entry points users call: ``block.exclusive_sum``, ``block.BlockScan.ExclusiveSum``,
``block.BlockRadixSort``. In kernels their calls are typed and lowered by each installed backend; on the
host, called with a dtype and template arguments, they return two-phase objects with those
fixed, which kernels call in turn."""
import dataclasses
import functools
import inspect

from ..codegen.layout import temp_storage_layout
from ..codegen.storage import SHARING
from ..model import backends, registry
from ..model.spec import ClassSpec, MSpec
from ..resolve.entry import Entry
from ..resolve.templates import check_host_keywords


class NothingToLink(list):
    """``obj.files`` of a two-phase object: empty, since ``cuda.jit(link=...)`` has nothing to
    add (each kernel links the code it uses), yet true, as cuda.coop's objects' lists were and
    as code written for them checks: old cuda.coop code passing ``link=obj.files`` works."""

    def __bool__(self) -> bool:
        return True


class _TempStorageLayout:
    """``temp_storage_bytes``/``_alignment``: the TempStorage of the fixed template arguments."""

    temp_storage_bytes = property(lambda self: self._layout()[0])
    temp_storage_alignment = property(lambda self: self._layout()[1])


class Primitive(_TempStorageLayout, Entry):
    """A callable entry point (see coopgen.resolve.entry.Entry), registered with numba."""

    def __init__(self, name: str, cls: ClassSpec, methods: dict[str, tuple[MSpec, ...]],
                 **kws):
        super().__init__(name, cls, methods, **kws)
        self.__doc__ = registry.docstrings().get(name)  # help(): the reference's section
        self.__signature__ = _signature(self)  # inspect.signature, help(), IPython
        backends.register("entry", self)

    def __call__(self, *args, **kws):
        """Two-phase use on the host: fix the dtype, template arguments and operators now,
        call the returned object inside kernels. ``block.sum(np.int32, 128, 4)``,
        ``block.load(np.int32, 128, 4, "warp_transpose")``: cuda.coop's positional order."""
        traced = backends.call_in_trace(self, args, kws)
        if traced is not backends.NOT_TRACING:  # inside a kernel CuTe DSL traces
            return traced
        from .twophase import host_arguments, object_shape

        fixed, call_fixed = host_arguments(self, args, kws)
        return dataclasses.replace(self, fixed=fixed, call_fixed=call_fixed,
                                   shape=object_shape(self, fixed, call_fixed, args, kws),
                                   host=None, instance=None, refused=None, required=None)

    def __getattr__(self, name):
        """An object factory's methods (``histo.init``, ``rld.decode``) exist on the host too, as
        cuda.coop's objects have them; they are called on the object a kernel makes, and on
        a two-phase object (``make_histogram``) on their own: ``histo.init(counters)``."""
        if name in (self.__dict__.get("aliases") or {}) and self.fixed and self.constructor:
            return _object_method(self, name)
        if name in (self.__dict__.get("aliases") or {}):
            def method(*args, **kws):
                raise TypeError(f"{self.name}.{name}: call it inside a kernel, on the object "
                                f"{self.name}(...) returns there")
            method.__name__ = name
            return method
        raise AttributeError(f"{self.__dict__.get('name', type(self).__name__)!r} has no "
                             f"attribute {name!r}")

    files = property(lambda self: NothingToLink(), doc=NothingToLink.__doc__)

    def _layout(self) -> tuple[int, int]:
        return temp_storage_layout(self.cls, self.class_template_kws())


class ObjectMethod(Primitive):
    """A two-phase object's method as an entry of its own: CUB's method with the object's
    template arguments (``histo.init.temp_storage_bytes``), called only in kernels."""

    def __call__(self, *args, **kws):
        """On the host, a method of an object its constructor makes (``rld.decode``) gives
        cuda.coop's fused call (coopgen.api.twophase.FusedCall); others are kernels' only."""
        owner = self.__dict__.get("owner")
        if owner is None or owner.infer is not None:
            raise TypeError(f"{self.label}: call it inside a kernel")
        from .twophase import FusedCall
        return FusedCall(owner, self.label.rsplit(".", 1)[1], args, kws)


@functools.cache  # one entry per object and method (numba registers each)
def _object_method(obj: Primitive, name: str) -> ObjectMethod:
    method = obj.aliases[name]
    fixed = {obj.cls.value_type.keyword if k == "dtype" else k: v for k, v in obj.fixed.items()}
    entry = ObjectMethod(f"{obj.cls.scope}.{obj.cls.name}.{method}", obj.cls,
                         {"": obj.cls.overloads(method)}, fixed=fixed)
    entry.label, entry.owner = f"{obj.name}.{name}", obj
    return entry


def _signature(p: Entry) -> inspect.Signature:
    """What a kernel may pass: the positional slots (cuda.coop's, or CUB's parameter order),
    then CUB's other parameter names and the template keywords, by keyword."""
    P = inspect.Parameter
    params = [x.name for ms in p.methods.values() for m in ms for x in m.params]
    slots = list(p.shape.slots) if p.shape is not None and p.shape.slots is not None else \
        [x for x in dict.fromkeys(params) if x != "temp_storage"]
    named = [P(n, P.POSITIONAL_OR_KEYWORD, default=P.empty if not i else None)
             for i, n in enumerate(slots)]
    rename = p.shape.rename if p.shape is not None else {}
    spelled = {c for n in slots for c in ((rename.get(n, n),) if isinstance(rename.get(n, n), str)
                                            else rename.get(n, n))}
    rest = (set(params) | p.template_keywords()) - set(slots) - spelled - set(p.fixed)
    return inspect.Signature(named + [P(n, P.KEYWORD_ONLY, default=None) for n in sorted(rest)
                                      if n.isidentifier()])


class PrimitiveClass(_TempStorageLayout):
    """``block.BlockRadixSort`` (faithful surface): methods as attributes; called on the host
    with a dtype and template keywords it returns a two-phase object with those fixed."""

    def __init__(self, scope: str, cls: ClassSpec, fixed: dict | None = None):
        self._scope = scope
        self._cls = cls
        self._fixed = dict(fixed or {})
        self.__doc__ = registry.docstrings().get(f"{scope}.{cls.name}")
        self._methods = {name: Primitive(f"{scope}.{cls.name}.{name}", cls,
                                         {"": cls.overloads(name)}, fixed=self._fixed)
                         for name in cls.method_names}

    def __getattr__(self, name):
        if name in self.__dict__.get("_methods", {}):
            return self._methods[name]
        raise AttributeError(f"{self.__dict__.get('_cls').name} has no method {name!r}")

    def __dir__(self):
        return list(self._methods) + ["temp_storage_bytes", "temp_storage_alignment"]

    @functools.cached_property
    def constructor(self) -> Primitive:
        """The in-kernel constructor (made once: each Primitive registers typing/lowering)."""
        return Primitive(f"{self._scope}.{self._cls.name}", self._cls,
                         {"": self._cls.constructors}, fixed=self._fixed, constructor=True)

    def __repr__(self):
        return f"<coopgen {self._scope}.{self._cls.name} {self._fixed or ''}>"

    def __call__(self, *args, **template_kws):
        if backends.tracing():  # a CUB object made in a kernel CuTe DSL traces
            return backends.call_in_trace(self.constructor, args, template_kws)
        if len(args) > 1:
            raise TypeError(f"{self!r}: the host call takes the dtype and template keywords")
        dtype = args[0] if args else template_kws.pop("dtype", None)
        fixed = dict(self._fixed)
        if dtype is not None:
            fixed[self._cls.value_type.keyword] = dtype
        fixed.update(template_kws)
        check_host_keywords(f"{self._scope}.{self._cls.name}", self._cls, fixed, registry.enums())
        return PrimitiveClass(self._scope, self._cls, fixed)

    def _layout(self) -> tuple[int, int]:
        return temp_storage_layout(self._cls, self._fixed)


# callees in kernels, or kernel arguments (two-phase objects)
backends.register("entry_classes", (Primitive, PrimitiveClass))


def kernel_temp_storage(*objects, sharing: str = "shared") -> tuple[int, int]:
    """(bytes, alignment) that two-phase primitives need together, before any launch:
    the largest of them ("shared") or all of them in aligned slices ("exclusive")."""
    if sharing not in SHARING:
        raise ValueError(f"kernel_temp_storage: sharing={sharing!r}; allowed: "
                         f"{', '.join(map(repr, SHARING))}")
    layouts = [(o.temp_storage_bytes, o.temp_storage_alignment) for o in objects]
    align = max((a for _, a in layouts), default=1)
    if sharing == "shared":
        return max((s for s, _ in layouts), default=0), align
    total = 0
    for size, a in layouts:
        total = -(-total // a) * a + size
    return -(-total // align) * align, align
