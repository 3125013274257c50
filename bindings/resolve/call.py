"""A call of an entry point -> its plan: the call shape names the arguments, template keywords
are read as constants, the constants the call passes by itself (fixed operators, an identity
initial value, a digit extractor) are added, and the overload is resolved."""
import dataclasses

import numpy as np

from ..model import registry
from ..model.errors import CoopgenError
from ..types.desc import (Array, DtypeValue, Function, Literal, Omitted, Scalar, Tuple,
                          item_type)
from . import hooks
from .entry import Entry
from .operators import identity_of
from .overloads import resolve
from .plan import Plan
from .shape import pick
from .templates import class_template_args, same_value

#: cuda.coop's shifts of one item per thread, which CUB has as ``Offset`` only: (class, method)
#: -> the sign of Offset's distance (Up: thread i gets thread i - distance's item).
SCALAR_SHIFTS = {("BlockShuffle", "Up"): -1, ("BlockShuffle", "Down"): 1}


@dataclasses.dataclass
class SplitCall:
    """A call's arguments sorted for the resolver (positionals: the faithful surface's only),
    and where each resolver argument sits in the call's folded arguments."""
    args: tuple
    mkws: dict
    alternatives: dict  # keyword -> CUB spellings when the overloads differ
    origins: list
    tkws: dict
    storage: tuple | None
    n_folded: int  # the call's own arguments; then come the constants it passes by itself
    constants: list = dataclasses.field(default_factory=list)  # (description, value)

    def add_constant(self, name: str, value) -> None:
        ty = hooks.describe_constant(value)
        self.mkws[name] = ty
        self.origins.append(self.n_folded + len(self.constants))
        self.constants.append((ty, value))


def split_call(p: Entry, args: tuple, kws: dict) -> SplitCall:
    shape = p.shape
    if shape is not None and shape.slots is not None:
        named, pos = shape.name_arguments(tuple(args), dict(kws)), ()
    else:
        named, pos = [(k, v, len(args) + j) for j, (k, v) in enumerate(kws.items())], tuple(args)
    tkw_names = p.template_keywords() - {"temp_storage"}
    split = SplitCall(pos, {}, {}, list(range(len(pos))), dict(p.fixed), None, len(args) + len(kws))
    bit_range = shape.bit_range_names() if shape is not None else ()
    bits = {}  # begin_bit / end_bit of a digit range (CallShape.digits)
    for name, ty, origin in named:
        spellings = (name,) if isinstance(name, str) else tuple(name)
        name = spellings[0]
        if name in p.refused:
            raise CoopgenError(f"{p.name}: {p.refused[name]}")
        if name == "temp_storage":
            split.storage = (origin, ty)
        elif name in tkw_names or name in bit_range:  # must be a compile-time constant
            if isinstance(ty, (Literal, Omitted)):
                value = ty.value
            elif isinstance(ty, Tuple) and all(isinstance(t, Literal) for t in ty.items):
                value = tuple(t.value for t in ty.items)
            elif isinstance(ty, DtypeValue):
                value = ty.dtype
            else:
                raise CoopgenError(f"{p.name}: {name}= must be a compile-time constant, got {ty}")
            # the method selector may differ per call (one class, so one TempStorage)
            if name in p.fixed and name != p.select and not same_value(p.fixed[name], value):
                raise CoopgenError(f"{p.name}: {name}={value!r}, but this object was made "
                                       f"with {name}={p.fixed[name]!r}")
            (bits if name in bit_range else split.tkws)[name] = value
        else:
            split.mkws[name] = ty
            split.origins.append(origin)
            if len(spellings) > 1:
                split.alternatives[name] = spellings
    for name in set(p.required) - set(split.mkws):
        raise CoopgenError(p.required[name])
    fixed = dict(shape.fixed) if shape is not None else {}
    for name in set(fixed) & (set(split.mkws) | set(split.tkws)):
        raise CoopgenError(f"{p.name}: {name}= is not an argument of {p.name}, which always "
                               f"passes {name}={fixed[name]!r}")
    # what a two-phase constructor fixed, unless the call passes it again (cuda.coop's
    # scan objects take the initial value in the call as well): the call's value is used
    fixed.update({k: v for k, v in p.call_fixed.items() if k not in split.mkws})
    for name, value in fixed.items():
        if name in bit_range:
            bits[name] = value
        else:
            split.add_constant(name, value)
    if bits or (bit_range and shape.digits[2] not in split.mkws):
        template, (first, count) = shape.digit_arguments(bits)
        split.tkws.update(template)
        keys = split.mkws.get(shape.rename.get(shape.slots[0], shape.slots[0])) \
            if shape.slots else None  # the first argument: the keys, ranked by their order
        dtype = keys.dtype.name if isinstance(keys, Array) and isinstance(keys.dtype, Scalar) \
            else None
        split.add_constant(shape.digits[2], hooks.bit_field_digits(first, count, dtype))
    if shape is not None:
        for k, v in shape.defaults_for(set(split.tkws) | set(split.mkws)).items():
            if k in tkw_names:
                split.tkws.setdefault(k, v)
            else:  # a call argument's default (warp.shuffle_up's member_mask): a constant
                split.add_constant(k, v)
        # an argument only newer CUB has: say which CCCL to select, rather than 'unknown'
        have = {x.name for ms in p.methods.values() for m in ms for x in m.params}
        for name, version in shape.since.items():
            if shape.rename.get(name, name) in split.mkws.keys() - have:
                raise CoopgenError(f"{p.name}: {name}= needs CCCL {version} or newer (this is "
                                   f"CCCL {registry.package().CCCL}); set COOPGEN_CCCL={version} "
                                   f"to use it")
        _scalar_shift(p, split)
        _drop_only(p, split)
        _inject_identity(p, split)
    return split


def _drop_keyword(split: SplitCall, name: str) -> None:
    del split.origins[len(split.args) + list(split.mkws).index(name)]
    del split.mkws[name]


def _scalar_shift(p: Entry, split: SplitCall) -> None:
    """Up/Down of a scalar (``SCALAR_SHIFTS``): CUB's Offset by -distance or +distance."""
    chosen = pick(p.name, p.select, list(p.methods), split.tkws[p.select]) \
        if split.tkws.get(p.select) is not None else ()
    sign = SCALAR_SHIFTS.get((p.cls.name, chosen[0])) if len(chosen) == 1 else None
    items = split.mkws.get(p.shape.rename.get("items", "items"))
    if sign is None or items is None or isinstance(items, Array):
        return
    distance = split.mkws.get("distance")
    if distance is not None and not isinstance(distance, (Literal, Omitted)):
        raise CoopgenError(f"{p.name}: distance= of a scalar {chosen[0]} must be a compile-time "
                           f"constant (CUB's Offset takes -distance for Up), got {distance}")
    if distance is not None:
        _drop_keyword(split, "distance")
    value = getattr(distance, "value", None)
    split.add_constant("distance", sign * (1 if value is None else value))
    split.tkws[p.select] = "Offset"


def _drop_only(p: Entry, split: SplitCall) -> None:
    """An argument cuda.coop passes where the chosen methods have no such parameter (the
    table's ``only``): dropped at its one value, else an error saying why."""
    methods = p.pick_methods(split.tkws.get(p.select))
    for name, value in p.shape.only.items():
        ty = split.mkws.get(name)
        if ty is None or any(x.name == name for m in methods for x in m.params):
            continue
        given = ty.value if isinstance(ty, Literal) else ty
        if given != value:
            names = ", ".join(sorted({m.name for m in methods}))
            raise CoopgenError(f"{p.name}: {name}={given} is not supported by CUB's {p.cls.name}"
                               f"::{names}, which takes no {name} ({name}={value!r} only)")
        _drop_keyword(split, name)


def _inject_identity(p: Entry, split: SplitCall) -> None:
    """Scans without an initial value start from the operator's identity (CUB has no public
    exclusive scan of arrays without one); the ``identity`` row names (the argument to fill,
    the operator[, the argument that makes it unnecessary]). In coopgen.coop
    (``CallShape.python_zero``) a Python operator's scans start from 0, as in cuda.coop."""
    if not p.shape.identity:
        return
    target, op_name, unless = (p.shape.rename.get(n, n) for n in (*p.shape.identity, "")[:3])
    if target in split.mkws or unless in split.mkws or op_name not in split.mkws:
        return
    # Arrays only: CUB's scans of one scalar take no initial value where it is not needed
    value_type = p.cls.value_type.name if p.cls.value_type else None
    items = next((split.mkws[x.name] for ms in p.methods.values() for m in ms
                  for x in m.params if x.base == value_type and x.name in split.mkws), None)
    if not isinstance(items, Array) and not p.shape.python_zero:
        return
    # Only where CUB's documented API needs it: an inclusive scan of arrays takes the operator
    # alone, and an injected value there is no identity for float items (+inf min the dtype's
    # max is not +inf). (CUB's undocumented exclusive scans without one leave thread 0's first
    # output undefined: they serve operators without a known identity.)
    methods = p.pick_methods(split.tkws.get(p.select))
    if any(op_name in names and target not in names and unless not in names
           for names in ({x.name for x in m.params} for m in methods if not m.hidden
                         if any(x.extent and x.base == value_type for x in m.params))):
        return
    op, dtype = split.mkws[op_name], item_type(items)
    value = identity_of(op, dtype)
    if value is None and p.shape.python_zero and isinstance(op, Function) \
            and op.builtin is None and isinstance(dtype, Scalar):
        value = np.dtype(dtype.name).type(0)
    if value is not None:
        split.add_constant(target, value)


def _resolved(p: Entry, split: SplitCall, methods, **kws) -> Plan:
    """``resolve``, the plan's argument indices made indices into the call's folded arguments."""
    r = resolve(p.name, p.cls, methods, split.args, split.mkws, alternatives=split.alternatives,
                **kws)
    _check_thread_data(p.name, r)
    return dataclasses.replace(r, bindings=tuple(
        dataclasses.replace(b, arg_index=split.origins[b.arg_index])
        if b.arg_index is not None else b for b in r.bindings))


def _check_thread_data(prim: str, r: Plan) -> None:
    """cuda.coop gives a ThreadData one dtype in every primitive: arrays of its template type
    and those its items come from or go to (CUB would convert: iterators, OutputT) have it."""
    arrays = [b for b in r.bindings if isinstance(b.type, Array)]
    for b in (b for b in arrays if b.type.thread_data):
        for o in arrays:
            if o.type.dtype != b.type.dtype and (
                    o.param.base in (b.param.base, "OutputT") or "iterator" in o.param.role):
                raise CoopgenError(
                    f"{prim}: {o.param.name} has dtype {o.type.dtype}, but the ThreadData passed "
                    f"as {b.param.name} holds {b.type.dtype}, from its first use: it needs a "
                    f"consistent dtype for ThreadData across primitives (or give it dtype=)")


def resolve_call(p: Entry, args: tuple, kws: dict, block_dims=None) -> Plan:
    if p.parent is None:
        return _resolve_split(p, split_call(p, args, kws), block_dims)
    # a method of a constructed object: its template arguments are fixed
    split = split_call(p, args, kws) if p.shape is not None else SplitCall(
        tuple(args), dict(kws), {}, list(range(len(args) + len(kws))), {}, None, 0)
    return _resolved(p, split, p.pick_methods(None), template_kws={},
                     block_dims=p.parent.block_dims, pinned=p.parent.template_args)


def _resolve_split(p: Entry, split: SplitCall, block_dims=None) -> Plan:
    tkws = dict(split.tkws)
    methods = p.pick_methods(tkws.pop(p.select, None))
    needs_block = p.cls.scope == "block" or p.cls.temp_storage != "none"
    dims = block_dims or hooks.launch_dims(needs_block and "threads_per_block" not in tkws)
    if p.constructor:  # TempStorage& overloads when temp_storage= is given (or no other)
        with_ts = _with_storage(methods, True)
        methods = with_ts if split.storage is not None else (_with_storage(methods, False)
                                                             or with_ts)
    return _resolved(p, split, methods, template_kws=tkws, block_dims=dims,
                     temp_storage=split.storage)


def _with_storage(methods, storage: bool) -> tuple:
    """The overloads that take a TempStorage& (``storage``), or those that do not."""
    return tuple(m for m in methods if any(x.role == "temp_storage" for x in m.params) == storage)


def resolve_object(p: Entry, args: tuple, kws: dict):
    """An object factory call (``block.histogram(items, bins)``): infer the class's template
    arguments from a call of ``p.infer`` with these arguments, then pick the constructor.
    Returns (constructor resolution, bound arguments as (name, type, argument index))."""
    inf = Entry(p.name, p.cls, {"": p.cls.overloads(p.infer)}, fixed=p.fixed, shape=p.shape,
                refused=p.refused, required=p.required)
    split = split_call(inf, args, kws)
    storage, split.storage = split.storage, None
    if not split.mkws and p.fixed:
        # a two-phase object called with nothing to infer from (cuda.coop's h() before
        # h.init(hist)): the host fixed the template arguments; methods take every argument
        tkws = {k: v for k, v in split.tkws.items() if k != p.select}
        targs = class_template_args(p.name, p.cls, tkws, registry.enums())
        by_keyword = {t.keyword: v for t, v in targs}
        dims = tuple(int(by_keyword.get(f"block_dim_{a}", 1)) for a in "xyz")
        pinned, bindings = targs, ()
    else:
        r_inf = _resolve_split(inf, split)
        pinned, dims, bindings = r_inf.template_args, r_inf.block_dims, r_inf.bindings
    r = resolve(p.name, p.cls, _with_storage(p.cls.constructors, storage is not None), (), {},
                template_kws={}, block_dims=dims, temp_storage=storage, pinned=pinned)
    bound = tuple((b.param.name, b.type, b.arg_index) for b in bindings
                  if b.param.name in p.bind and b.source == "arg")
    return r, bound
