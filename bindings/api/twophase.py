"""Two-phase use on the host: ``block.load(np.int32, 128, 4, "direct")`` -> an object for
kernels. Arguments follow the ``host`` order (cuda.coop's); template arguments become the
object's fixed keywords, method arguments are passed by every call. Bad values raise
``ValueError`` here, as in cuda.coop, not at the first kernel compile."""
import re
import types as pytypes

from ..model import backends, registry
from ..model.errors import CoopgenError
from ..resolve.operators import StatefulFunction
from ..resolve.shape import CallShape, is_int_constant, pick
from ..resolve.templates import check_host_keywords
from ..types import cpp

#: Positional order of a function without a ``host`` row: cuda.coop's two leading arguments.
DEFAULT_HOST = {"block": ("dtype", "threads_per_block"), "warp": ("dtype", "threads_in_warp")}


def _stateful(value) -> bool:
    return isinstance(value, StatefulFunction)


def host_arguments(p, args: tuple, kws: dict) -> tuple[dict, dict]:
    """(template keywords, fixed call arguments) of a two-phase constructor call of ``p``."""
    shape = p.shape or CallShape(p.name, None)
    slots = list(p.host or DEFAULT_HOST[p.cls.scope])
    declared = [x for ms in p.methods.values() for m in ms for x in m.params]
    operators = {x.name for x in declared if x.role == "operator"}
    # cuda.coop's scans are also made as (dtype, threads, items_per_thread, op): an integer in
    # the operator's slot before items_per_thread, then an operator, swap the two slots
    i = slots.index("items_per_thread") - 1 if "items_per_thread" in slots else -1
    if 0 <= i < len(args) - 1 and is_int_constant(args[i]) \
            and shape.rename.get(slots[i], slots[i]) in operators \
            and (callable(args[i + 1]) or isinstance(args[i + 1], str)):
        slots[i:i + 2] = slots[i + 1], slots[i]
    named = shape.with_slots(slots).name_arguments(tuple(args), dict(kws), error=TypeError)
    template_names = p.template_keywords() - {"temp_storage"}
    params = {x.name for x in declared}
    fixed, call, given = dict(p.fixed), {}, []
    for name, value, _ in named:
        spellings = (name,) if isinstance(name, str) else name
        name = spellings[0]
        if name in template_names:
            fixed[name] = value
            continue
        if name not in params and name not in shape.bit_range_names():
            raise HostArgumentError(f"{p.name}: unexpected argument {name!r} on the host; "
                                    f"template keywords are {', '.join(sorted(template_names))}")
        # A StatefulFunction declares the prefix callback, whose state each call passes; a
        # Python function is compiled as a device function, as when a kernel passes one.
        if not _stateful(value):
            call[name] = backends.provided("device_function")(value) \
                if isinstance(value, pytypes.FunctionType) else value
        if name not in shape.bit_range_names() and name not in shape.only:
            given.append(spellings)
    for k, v in shape.defaults_for(set(fixed) | set(call)).items():
        fixed.setdefault(k, v)
    bit_range = {k: call[k] for k in shape.bit_range_names() if k in call}
    try:
        if bit_range:  # the template arguments the key bit range implies (radix_bits)
            fixed.update(shape.digit_arguments(bit_range)[0])
        check_template_values(p, fixed)
    except CoopgenError as e:  # numba's error text carries terminal colours
        raise ValueError(re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip()) from None
    # The call arguments fixed must be ones a single overload takes together (no CUB scan takes
    # an initial value and a prefix callback).
    selector = fixed.get(p.select) if p.select else None
    methods = p.pick_methods(selector) if selector is not None or not p.select else \
        tuple(m for ms in p.methods.values() for m in ms)
    _one_item_scan_rules(p, fixed, methods, {names[0] for names in given})
    if given and not any(all(set(names) & {x.name for x in m.params} for names in given)
                         for m in methods):
        together = ", ".join(names[0] for names in given)
        names = ", ".join(sorted({m.name for m in methods}))
        raise HostArgumentError(f"{p.name}: no CUB overload ({names}) takes {together} "
                                f"together")
    return fixed, call


def _one_item_scan_rules(p, fixed: dict, methods, given: set) -> None:
    """cuda.coop's rules, in its words, for an initial value at one item per thread: CUB's
    InclusiveScan of one item takes none, nor does its ExclusiveScan with a prefix callback."""
    if "initial_value" not in given or fixed.get("items_per_thread", 1) != 1 or not methods:
        return
    inclusive = all(m.name.startswith("Inclusive") for m in methods)
    prefix = {x.name for m in methods for x in m.params if x.role == "prefix_callback"}
    if inclusive:
        rule = "inclusive scans with items_per_thread == 1"
    elif given & prefix:
        rule = ("exclusive scans with items_per_thread == 1 and a block prefix callback "
                "operator")
    else:
        return
    raise HostArgumentError(f"{p.name}: initial_value is not supported for {rule} "
                            f"({p.cls.name}'s scans of one item take none there)")


class HostArgumentError(TypeError, ValueError):
    """A two-phase constructor's arguments that no CUB overload takes (cuda.coop raises
    ValueError for such combinations; Python raises TypeError for an unknown argument)."""


def check_template_values(p, fixed: dict) -> None:
    """cuda.coop's host errors (raised as ValueError by host_arguments): items_per_thread < 1,
    an unknown algorithm or type, an unsupported dtype."""
    ipt = fixed.get("items_per_thread")
    if ipt is not None and (isinstance(ipt, bool) or not isinstance(ipt, int) or ipt < 1):
        raise CoopgenError(f"{p.name}: items_per_thread={ipt!r} must be an integer >= 1")
    enums = registry.enums()
    for t in p.cls.template_params:
        if t.keyword in fixed and t.cpp_type in enums:
            cpp.template_value(p.name, t, fixed[t.keyword], enums)
    if p.select and p.select in fixed:
        pick(p.name, p.select, list(p.methods), fixed[p.select])
    if "dtype" in fixed:
        cpp.as_dtype(fixed["dtype"], p.name, "dtype")
    # the rest (block shape, logical warp size, per-thread counts, other dtypes, aliases)
    check_host_keywords(p.name, p.cls, fixed, enums, also=(p.select,) if p.select else ())


def object_shape(p, fixed: dict, call_fixed: dict, args: tuple, kws: dict):
    """The call shape of the object a host call of ``p`` returns (None: CUB's order)."""
    if p.shape is None:
        return None
    instance = p.instance
    if instance is None and p.shape.slots is not None:
        # cuda.coop's objects take the single-phase call less its template arguments and
        # the operators the host call fixed; a value the host call gave (an initial value,
        # a valid count) keeps its slot, so ws(x, 0) passes the initial value again
        operators = {k for k, v in call_fixed.items() if callable(v) or isinstance(v, str)}
        taken = set(fixed) | operators | p.template_keywords()
        instance = tuple(n for n in p.shape.slots
                         if p.shape.rename.get(n, n) not in taken and n not in taken)
    if instance is None:
        return p.shape.with_slots(None)
    # An argument the host call declared rather than gave (a StatefulFunction: each call passes
    # its state) comes right after the leading two arrays in the object's calls, as in
    # cuda.coop's scan objects: ``scan(ts, items, out, state)``, ``scan(ts, item, state)``.
    declared = {k for k, v in kws.items() if _stateful(v)}
    declared |= {slot for slot, v in zip(p.host or (), args) if _stateful(v)}
    rest = [n for n in instance if n not in declared]
    instance = tuple(rest[:2] + [n for n in instance if n in declared] + rest[2:])
    params = [x for ms in p.methods.values() for m in ms for x in m.params]
    scalars = [n for n in instance if (xs := [x for x in params if x.name == p.shape.rename.get(
        n, n)]) and all(x.role == "count" and x.extent is None for x in xs)]
    return p.shape.for_objects(instance, fixed, call_fixed, scalars)


class FusedCall:
    """cuda.coop's fused form of a two-phase object's method, made on the host
    (``rld.decode(run_length_dtype, ..., with_relative_offsets=True)``): called in a kernel
    with the constructor's arguments, then the method's arrays and values, it makes the object
    and calls the method on it (the shared rewrite writes the two calls). The dtypes are
    checked here; coopgen reads the types from the arrays the kernel passes. ``with_<name>``
    adds one of the method's optional arguments to the call."""
    _coopgen_fused_call = True

    def __init__(self, owner, alias: str, args: tuple, kws: dict):
        self.owner, self.alias, label = owner, alias, f"{owner.name}.{alias}"
        params = {x.name: x for m in owner.cls.overloads(owner.aliases[alias]) for x in m.params}
        spelled = {n: owner.shape.rename.get(n, n) for n in owner.method_args[alias]}
        everywhere = set.intersection(*({x.name for x in m.params} for m in
                                        owner.cls.overloads(owner.aliases[alias])))
        optional = {n for n, cub in spelled.items()
                    if cub not in everywhere or params[cub].default is not None}
        dtypes = list(args) + [v for k, v in kws.items() if k.endswith("_dtype")]
        for k, v in kws.items():
            if not (k.endswith("_dtype") or k.startswith("with_") and k[5:] in optional):
                raise TypeError(f"{label}: unexpected keyword {k!r} on the host; it takes "
                                f"dtypes and {', '.join(sorted('with_' + n for n in optional))}")
        try:
            for i, value in enumerate(dtypes):
                if value is not None:
                    cpp.as_dtype(value, label, f"argument {i + 1}")
        except CoopgenError as e:
            raise ValueError(str(e)) from None
        taken = owner.template_keywords()
        ctor = [n for n in owner.shape.slots if owner.shape.rename.get(n, n) not in taken
                and n not in taken]
        method = [n for n in owner.method_args[alias]
                  if n not in optional or kws.get(f"with_{n}")]
        # the method's arrays, then its values (cuda.coop's order: outputs before an offset)
        method.sort(key=lambda n: params[spelled[n]].extent is None)
        self.slots, self.constructor_slots = tuple(ctor + method), len(ctor)
        # the method's positional call: (name, or None for CUB's default, that default)
        order = [(n, params[spelled[n]].default) for n in owner.method_args[alias]]
        while order[-1][0] not in method:
            order.pop()
        self.method_call = tuple((n if n in method else None, d) for n, d in order)
        self.label = label

    temp_storage_bytes = property(lambda self: self.owner.temp_storage_bytes)
    temp_storage_alignment = property(lambda self: self.owner.temp_storage_alignment)
    files = property(lambda self: self.owner.files)

    def __call__(self, *args, **kws):
        raise TypeError(f"{self.label}: call it inside a kernel")

    def __repr__(self):
        return f"<coopgen {self.label}({', '.join(self.slots)})>"
