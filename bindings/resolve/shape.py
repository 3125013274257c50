"""cuda.coop's call shape, one rule driven by each function's ``PythonicSpec`` (pythonic.toml):
positionals take the names of ``args`` (kernels), ``host`` (two-phase constructors) or
``instance`` (two-phase objects) in order (an unnamed one is an error, never dropped); names are
then spelled as CUB spells them, omitted in-place outputs get their input again, defaults fill
the rest. So ``block.load(src, dst, 4)`` means items_per_thread=4, as in cuda.coop."""
import dataclasses
import enum
from dataclasses import dataclass, field

from ..model.errors import CoopgenError
from ..types.desc import Array, Function, Literal, Omitted, Other, Scalar, Struct


def is_int_constant(ty) -> bool:
    """An integer known when the kernel compiles (a literal, or a Python int on the host)."""
    if isinstance(ty, Literal):
        ty = ty.value if isinstance(ty.value, int) and ty.type is not None else None
    return isinstance(ty, int) and not isinstance(ty, bool)


def _value(ty):
    return ty.value if isinstance(ty, Literal) else ty


def is_operator(ty) -> bool:
    """An operator argument: a function, a device function, a name."""
    return isinstance(ty, Function) or (isinstance(ty, Literal) and isinstance(ty.value, str)) \
        or (isinstance(ty, Other) and ty.callable)


#: Accepted by every function for cuda.coop's sake and not needed: ``methods=`` gives a user
#: type's C++ construct/assign code, but C++ only copies coopgen's opaque struct of its bytes.
NOT_NEEDED = frozenset({"methods"})


@dataclass(frozen=True)
class CallShape:
    """How one Pythonic function names its arguments (see the module docstring)."""
    prim: str
    slots: tuple[str, ...] | None  # positional names; None: CUB's parameter order
    rename: dict = field(default_factory=dict)  # name -> CUB name(s)
    defaults: dict = field(default_factory=dict)
    inplace: dict = field(default_factory=dict)  # omitted output -> the input passed instead
    fixed: dict = field(default_factory=dict)  # arguments always passed (warp.max's operator)
    since: dict = field(default_factory=dict)  # argument -> the first CCCL that has it
    deduced: frozenset = frozenset()  # accepted for cuda.coop; C++ deduces them
    identity: tuple = ()  # (argument to fill, operator, argument that makes it unnecessary)
    digits: tuple = ()  # (begin bit, end bit, digit extractor, radix bits): a key bit range
    # Two-phase objects' calls (``for_objects``): an output CUB returns for a scalar first
    # argument has no slot; what the object fixed (a template argument, an operator) may be
    # passed again, else a value of another kind skips its slot (sort(keys, begin_bit, end_bit)).
    object_scalar_output: str | None = None
    scalar_output: str | None = None
    fixed_slots: frozenset = frozenset()
    operator_slots: frozenset = frozenset()
    fixed_values: dict = field(default_factory=dict)  # a fixed slot's value: another skips it
    scalar_slots: frozenset = frozenset()  # CUB has a number there: an array skips it
    # coopgen.coop: a Python operator's scans start from 0 without an initial value, as
    # cuda.coop's do (coopgen.block/warp keep CUB's undefined first output)
    python_zero: bool = False
    only: dict = field(default_factory=dict)  # argument -> its one value where CUB has none
    # cuda.coop.numba_mlir's single-phase calls (``coop._block.load(src, dst, n, oob,
    # items_per_thread=4)``): positionals fill the slots no keyword names; ``name=True`` for a
    # name in ``declared`` says that its value is passed positionally, after the others; a
    # keyword of ``dtype_keywords`` given a dtype rather than an array names that dtype
    # (``keys="int32"`` is ``dtype="int32"``). None: Python's rules.
    declared: frozenset | None = None
    dtype_keywords: dict = field(default_factory=dict)
    offset_first: bool = False  # ``offset=n`` passes the first argument from its item n on

    @classmethod
    def of_row(cls, prim: str, row, keywords) -> "CallShape":
        rename = dict(keywords, **{k: v[0] if len(v) == 1 else v for k, v in row.rename})
        return cls(prim, row.args, rename, dict(row.defaults), dict(row.inplace),
                   dict(row.fixed), dict(row.since), frozenset(row.deduced) | NOT_NEEDED,
                   row.identity, row.digits, row.scalar_output, only=dict(row.only))

    def with_slots(self, slots) -> "CallShape":
        return dataclasses.replace(self, slots=None if slots is None else tuple(slots))

    def for_objects(self, slots, fixed, call_fixed, scalars=()) -> "CallShape":
        """The shape of a two-phase object's calls: positional ``slots``; ``fixed`` the
        template arguments its constructor fixed, ``call_fixed`` its call arguments,
        ``scalars`` the slots where CUB takes a number (``sort(keys, values)``)."""
        operators = {k for k, v in call_fixed.items() if callable(v) or isinstance(v, str)}
        return dataclasses.replace(
            self, slots=tuple(slots), scalar_output=self.object_scalar_output,
            fixed_slots=frozenset(n for n in slots if n in fixed),
            fixed_values={n: fixed[n] for n in slots if n in fixed},
            operator_slots=frozenset(n for n in slots if self.rename.get(n, n) in operators),
            scalar_slots=frozenset(scalars))

    def name_arguments(self, args: tuple, kws: dict, *, error=CoopgenError) -> list[tuple]:
        """The call's arguments as (CUB's name, or its several spellings: the resolver picks the
        overload's; value; origin: in kernels an index into the folded arguments, positionals
        then keywords). ``error`` is raised for a call Python itself would refuse."""
        slots = list(self.slots)
        keywords = [(k, v, len(args) + j) for j, (k, v) in enumerate(kws.items())]
        if self.declared is not None:
            slots, keywords = self._single_phase_slots(len(args), slots, keywords)
        # one item (a number, a record, a struct) first, not an array or a tuple
        if self.scalar_output in slots and args and not is_operator(args[0]) \
                and isinstance(args[0], (Scalar, Struct, Literal, Other)):
            slots.remove(self.scalar_output)
        for i, a in enumerate(args):
            # a value that cannot fill a slot goes to the next one: an operator is no per-thread
            # count (a newcomer's block.reduce(items, op), where cuda.coop's order has
            # items_per_thread second), and an object's fixed slots take only their kind
            while i < len(slots) and (
                    slots[i] in self.fixed_slots and not (is_int_constant(a) and _value(a) ==
                                                          self.fixed_values.get(slots[i]))
                    or slots[i] in self.scalar_slots and isinstance(a, Array)
                    or slots[i] in self.operator_slots and not is_operator(a)
                    or slots[i] == "items_per_thread" and is_operator(a)):
                del slots[i]
        if len(args) > len(slots):
            raise error(f"{self.prim}: takes at most {len(slots)} positional arguments "
                        f"({', '.join(slots)}), got {len(args)}; pass the others by keyword")
        given = [(slots[i], a, i) for i, a in enumerate(args)] + keywords
        out, seen = [], {}  # CUB's name -> (the name given, value, origin)
        for name, value, origin in given:
            # dst=None, an omitted optional or a host None: the argument is not given
            if value is None or isinstance(value, Omitted) and value.value is None \
                    or name in self.deduced:
                continue
            spelled = self.rename.get(name, name)
            key = spelled if isinstance(spelled, str) else spelled[0]
            if key in seen:
                first, _, first_origin = seen[key]
                if first_origin < len(args):
                    raise error(f"{self.prim}: argument {name!r} is given both positionally "
                                f"and by keyword (the positional {first!r})")
                raise error(f"{self.prim}: argument {name!r} is given twice (also as {first!r})")
            seen[key] = (name, value, origin)
            out.append((spelled, value, origin))
        for missing, source in self.inplace.items():
            spelled, source = self.rename.get(missing, missing), self.rename.get(source, source)
            source = source if isinstance(source, str) else source[0]
            if spelled not in seen and source in seen:
                out.append((spelled, *seen[source][1:]))
        return out

    def _single_phase_slots(self, n_args: int, slots: list, keywords: list):
        """The positional slots and keywords of a call under ``declared`` (see there)."""
        def canonical(name):
            spelled = self.rename.get(name, name)
            return spelled if isinstance(spelled, str) else spelled[0]

        keywords = [(self.dtype_keywords[k], v, o) if k in self.dtype_keywords
                    and not isinstance(v, Array) else (k, v, o) for k, v, o in keywords]
        marked = {k for k, v, _ in keywords if k in self.declared and k in slots
                  and _value(v) is True}
        named = {canonical(k) for k, _, _ in keywords}
        free = [s for s in slots if canonical(s) not in named]
        order = [s for s in slots if s in marked]  # the declared ones take the last positionals
        if len(order) > n_args:
            raise CoopgenError(f"{self.prim}: {', '.join(f'{k}=True' for k in order)} declare "
                               f"{len(order)} trailing positional arguments, but the call "
                               f"passes {n_args} positionals")
        slots = free[:max(0, n_args - len(order))] + order + free[n_args - len(order):]
        return slots, [(k, v, o) for k, v, o in keywords if k not in marked]

    def bit_range_names(self) -> tuple:
        return tuple(self.digits[:2])

    def digit_arguments(self, bits: dict) -> tuple[dict, object]:
        """cuda.coop ranks the key bits [begin_bit, end_bit): CUB's radix bits (a template
        argument) and the (first bit, bit count) a digit extractor takes."""
        begin_name, end_name, _, radix_bits = self.digits
        begin, end = bits.get(begin_name, 0), bits.get(end_name)
        if end is None:
            raise CoopgenError(f"{self.prim}: missing required argument {end_name!r} (the "
                                   f"key bits [{begin_name}, {end_name}) to rank)")
        for name, v in ((begin_name, begin), (end_name, end)):
            if isinstance(v, bool) or not isinstance(v, int):
                raise CoopgenError(f"{self.prim}: {name}={v!r} must be an integer constant")
        if not 0 <= begin < end:
            raise CoopgenError(f"{self.prim}: {begin_name}={begin}, {end_name}={end} is not "
                                   f"a bit range (0 <= {begin_name} < {end_name})")
        return {radix_bits: end - begin}, (begin, end - begin)

    def defaults_for(self, names) -> dict:
        """Defaults of the arguments not in ``names``, under CUB's spelling."""
        return {self.rename.get(k, k): v for k, v in self.defaults.items()
                if self.rename.get(k, k) not in names}


def spelled_for(method, named: dict, alternatives: dict) -> dict:
    """``named`` keyword types with each several-spellings name replaced by the spelling this
    overload has (``src`` is BlockReduce.Sum's ``input`` or ``inputs``)."""
    if not alternatives:
        return named
    have = {p.name for p in method.params}
    return {next((c for c in alternatives.get(k, (k,)) if c in have),
                 alternatives.get(k, (k,))[0]): v for k, v in named.items()}


def selector_value(value):
    """A selector's Python value as a key to match: enum members by name, booleans as
    ``"true"``/``"false"``, strings in any case with or without underscores."""
    if isinstance(value, enum.Enum):
        value = value.name
    if isinstance(value, bool):
        value = "true" if value else "false"
    if isinstance(value, str):
        return value.strip().replace("_", "").lower()
    return value


def pick(prim: str, keyword: str, choices: list[str], value) -> list[str]:
    """The choices (the table's selector keys) ``value`` names: a key, an enum member, an int
    (1-based, in table order, as cuda.coop's IntEnums count), or a tuple of them (all)."""
    if isinstance(value, (tuple, list)):
        return [c for v in value for c in pick(prim, keyword, choices, v)]
    key = selector_value(value)
    if isinstance(key, str):
        for c in choices:
            if selector_value(c) == key:
                return [c]
    elif isinstance(key, int) and 1 <= key <= len(choices):
        return [choices[key - 1]]
    allowed = ", ".join(repr(c) for c in choices)
    raise CoopgenError(f"{prim}: unknown {keyword}={value!r}; allowed: {allowed} (or "
                           f"their 1-based numbers)")
