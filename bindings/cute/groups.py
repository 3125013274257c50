"""cuda.coop's group-first calls in CuTe DSL kernels: ``coop.sum(coop.this_block(), x)``.

CuTe DSL runs the kernel's Python as it traces it, so no IR is rewritten: the group is the value
passed, and the call's plan (coopgen.resolve.groups, which numba's rewrite carries out too) is
carried out here on the traced values, its target called as a kernel calls it (the same specs,
plans and shims as ``block``/``warp``). The group helpers (coopgen.resolve.group_helpers) run
as plain Python on CuTe's registers; those that branch on a run-time value have CuTe forms."""
import types

import cutlass
import cutlass.cute as cute
from cutlass._mlir import ir
from cutlass._mlir.dialects import llvm
from cutlass.base_dsl.enums import AddressSpace

from ..model.errors import CoopgenError, CoopgenUnsupported
from ..resolve import group_helpers
from ..resolve.group_kinds import Group
from ..resolve.groups import PYTHON_NUMBERS, Constant, check_bit_range
from ..resolve.kernel_ir import UNKNOWN
from .bundle import launch_dims
from .describe import NAMES, NUMBERS, dtype_of, number_class


class _Axes:
    """``cuda.threadIdx`` and the like: ``.x``, ``.y``, ``.z`` of a register read."""

    def __init__(self, read):
        self._read = read

    def __getattr__(self, axis):
        return self._read()["xyz".index(axis)]


def _block_dim():  # the launch's static shape where CuTe DSL knows it, else the registers
    shape = launch_dims(False)
    return tuple(shape) + (1,) * (3 - len(shape)) if shape else cute.arch.block_dim()


CUDA = types.SimpleNamespace(threadIdx=_Axes(cute.arch.thread_idx),
                             blockIdx=_Axes(cute.arch.block_idx),
                             gridDim=_Axes(cute.arch.grid_dim), blockDim=_Axes(_block_dim),
                             syncthreads=cute.arch.barrier, syncwarp=cute.arch.sync_warp)


def _when(condition, then):
    if isinstance(condition, bool):  # known now
        return then() if condition else None
    cutlass.if_generate(condition, then)


def _select(condition, a, b):
    return (a if condition else b) if isinstance(condition, (bool, int)) else \
        cutlass.select_(condition, a, b)


def _restore_unloaded(items, saved, valid, rank):
    for i in range(items.shape[0]):
        items[i] = _select(rank * items.shape[0] + i >= valid, saved[i], items[i])


def _through(shared, slot, value, writer, read):
    """``value`` of the threads ``writer`` picks into ``shared[slot]``, then ``read()``
    between barriers."""
    _when(writer, lambda: shared.__setitem__(slot, value))
    cute.arch.barrier()
    out = read()
    cute.arch.barrier()  # the slots may be written again by a later call
    return out


def _block_broadcast(shared, value):
    return _through(shared, 0, value, H["block_rank"]() == 0, lambda: shared[0])


def _striped_read(shared, out):
    cute.arch.barrier()
    rank, count, bins, cls = H["block_rank"](), H["block_count"](), shared.shape[0], \
        out.t.element_type
    for i in range(out.shape[0]):
        b = rank + i * count
        out[i] = _select(b < bins, cls(shared[cutlass.min(b, bins - 1)]), cls(0))
    cute.arch.barrier()


def _mapped_gather(shared, partial, width):
    first = H["warp_rank_divided"](width) * width
    return _through(shared, H["warp_rank"](), partial, H["lane"]() == 0, lambda: shared[
        first + cutlass.min(H["lane"](), H["mapped_warps"](width) - 1)])


def _mapped_result(shared, total, result, member):
    return _through(shared, H["warp_rank"](), total, H["lane"]() == 0, lambda: _select(
        member, shared[H["warp_rank"]()], type(total)(0)))


def _trap():
    llvm.intr_trap()


#: The group helpers as CuTe DSL traces them (run-length decoding's are not used).
H = group_helpers.for_backend(CUDA, lambda fn: fn, _trap, own={
    "check_within": lambda value, low, high: _when((value < low) | (value > high), _trap),
    "check_not_negative": lambda value: _when(value < 0, _trap),
    "restore_unloaded": _restore_unloaded, "block_broadcast": _block_broadcast,
    "striped_read": _striped_read, "mapped_gather": _mapped_gather,
    "mapped_result": _mapped_result, "min": cutlass.min})


class _Items:
    """A tensor as the helpers index it (``shape[0]``: its items)."""

    def __init__(self, t):
        self.t, self.shape = t, (cute.size(t),)

    def __getitem__(self, i):
        return self.t[i]

    def __setitem__(self, i, value):
        self.t[i] = value


def _is_fragment(value) -> bool:
    return isinstance(value, cute.Tensor) and value.memspace == AddressSpace.rmem


def _value_of(value):
    """A host value (a constant, a function, a dtype), or UNKNOWN for a traced one."""
    return UNKNOWN if isinstance(value, (cute.Tensor, cutlass.Numeric, ir.Value)) else value


def _like(t, dtype=None, per=None):
    n = cute.size(t)
    return cute.make_rmem_tensor(-(-n // per) if per else n,
                                 NUMBERS[dtype] if dtype else t.element_type)


def _one(value, cls):
    one = cute.make_rmem_tensor(1, cls)
    one[0] = value
    return one


def _copy(t):
    out = _like(t)
    H["copy_items"](_Items(t), _Items(out))
    return out


def _shared(n: int, cls):
    return cutlass.memory.SmemAllocator().allocate_tensor(cls, cute.make_layout(n), 16)


def _prepare(plan, kws: dict):
    """The target's arguments as the plan says (as GroupCallRewrite._prepare_arguments)."""
    if plan.wrap:  # one item as a one-item fragment of the other argument's dtype
        kws[plan.wrap[0]] = _one(kws[plan.wrap[0]], kws[plan.wrap[1]].element_type)
    offset = plan.offset
    if plan.warp_tile is not None and _is_fragment(kws.get(plan.warp_tile)):
        tile = H["warp_tile_start"](plan.width, plan.width * cute.size(kws[plan.warp_tile]))
        offset = tile if offset is None else offset + tile
    if offset is not None:  # source[offset:]
        t = kws[plan.offset_of or plan.like]
        kws[plan.offset_of or plan.like] = cute.make_tensor(
            t.iterator + offset, cute.make_layout(cute.size(t) - offset))
    for value, helper, arguments in plan.checks:
        H[helper](value, *[a if not isinstance(a, tuple) else cute.size(kws[a[1]])
                           if _is_fragment(kws[a[1]]) else 1 for a in arguments])
    kept = None
    for key, value in plan.extra:
        kind, name = key[1:].split(":")
        if kind == "tile":  # top-k of a full tile: its item count
            kws[name] = H["tile_size"](_Items(value))
        elif kind == "keep":  # a partial load's slots past the valid items, put back after
            kept = (name, _copy(kws[name]),
                    value.value if isinstance(value, Constant) else value)
        elif kind == "pair":
            raise CoopgenError(f"{plan.target.name}: prefix callbacks (stateful operators) "
                               f"are not bound for CuTe DSL kernels yet")
        elif _is_fragment(kws[name]):  # "_copy:src": CUB works in place on a copy
            kws[name] = _copy(kws[name])
    return kept


def _histogram(plan, kws):
    """CUB's counts in a shared array of ``bins``, read back striped."""
    extra = dict(plan.extra_constants)
    shared = _shared(extra["bins"], NUMBERS[extra["counted_dtype"]])
    plan.target(**kws, histogram=shared)
    out = cute.make_rmem_tensor(extra["bins_per_thread"], NUMBERS[extra["counter_dtype"]])
    H["striped_read"](_Items(shared), _Items(out))
    return out


def _mapped_reduce(plan, kws):
    """Over a block's groups of warps: each warp's reduction, then its group's warps'."""
    extra = dict(plan.extra_constants)
    if _is_fragment(kws["src"]):
        raise CoopgenError(f"coop.{plan.target.name.split('.')[-1]}: over this_block()."
                           f"group_by({extra['warps']}) takes one value a thread (a scalar), "
                           f"not a per-thread array")
    partial = plan.target(**kws)
    shared = _shared(group_helpers.WARP, type(partial))
    gathered = H["mapped_gather"](shared, partial, extra["warps"])
    total = plan.target(**dict(kws, src=gathered,
                               valid_items=H["mapped_warps"](extra["warps"])))
    helper, consts = group_helpers.query("warps_within_block", extra["warps"], "is_member",
                                         None, extra["exhaustive"])
    return H["mapped_result"](shared, total, None, H[helper](*consts))


SPECIALS = {"histogram": _histogram, "mapped_reduce": _mapped_reduce}


def traced(what, args: tuple, kws: dict):
    """A group call, a group's query ((group, name)) or ``coop.ThreadData``, traced."""
    if isinstance(what, tuple):
        helper, constants, dtype = group_helpers.query_call(*what, args, kws)
        if helper not in H:
            raise CoopgenUnsupported(f"coop.{what[0].describe()}.{what[1]}: not available in "
                                     f"CuTe DSL kernels yet")
        value = H[helper](*constants)
        return value if dtype is None else number_class(dtype_of(dtype))(value)
    if getattr(what, "_coopgen_thread_data", False):
        if args[1] is None or not isinstance(args[0], int):
            raise CoopgenError(f"coop.ThreadData{args!r}: CuTe DSL kernels take a constant "
                               f"item count and a dtype")
        return cute.make_rmem_tensor(args[0], number_class(dtype_of(args[1])))
    return call(what, args, kws)


def call(group_call, args: tuple, kws: dict):
    """``coop.<name>(group, ...)`` carried out in the kernel being traced."""
    if not args or not isinstance(args[0], Group):
        raise CoopgenError(f"coop.{group_call.name}: the first argument must be a group "
                           f"(coop.this_block(), coop.this_warp(), coop.this_warp()."
                           f"group_by(n)); got {type(args[0]).__name__ if args else 'none'}")
    plan = group_call.plan(args[0], list(args[1:]), dict(kws), _value_of, _is_fragment)
    kws = {k: v.value if isinstance(v, Constant) else v for k, v in plan.kws}
    keys = kws.get("keys", kws.get("items"))
    if _is_fragment(keys):
        check_bit_range(group_call.name, {k: _value_of(kws[k]) for k in ("begin_bit", "end_bit")
                                          if k in kws}, NAMES[keys.element_type])
    if plan.special is not None and plan.special not in SPECIALS:  # run-length decoding
        raise CoopgenUnsupported(f"coop.{group_call.name}: not provided in CuTe DSL kernels "
                                 f"yet (block.BlockRunLengthDecode is)")
    kept = _prepare(plan, kws)
    if plan.special is not None:
        return SPECIALS[plan.special](plan, kws)
    result = kws[plan.outputs[0]] if plan.result == "output" else None
    if plan.result == "new":
        outs = [_like(kws[plan.like], plan.output_dtype,
                      plan.width if plan.output_size == "batched" else None)
                for _ in plan.outputs]
        kws.update(zip(plan.outputs, outs))
        result = outs[0] if len(outs) == 1 else tuple(outs)
    elif plan.result == "items":  # scalars, as one-item fragments of their types
        kws.update({n: _one(kws[n], type(kws[n]) if isinstance(kws[n], cutlass.Numeric) else
                            NUMBERS[PYTHON_NUMBERS.get(type(kws[n]), "int32")])
                    for n in plan.inputs})
        result = [kws[n] for n in plan.inputs]
    elif plan.result == "copy":
        kws.update({n: _copy(kws[n]) for n in plan.inputs})
        result = kws[plan.inputs[0]] if len(plan.inputs) == 1 else \
            tuple(kws[n] for n in plan.inputs)
    if isinstance(plan.target, str):  # a thread's sum of its items (of a scalar: itself)
        first = kws[plan.like]
        value = H[plan.target[7:]](_Items(first)) if _is_fragment(first) else first
    else:
        value = plan.target(**kws)
    if plan.broadcast == "warp":  # the first lane's result in every lane of the warp
        result = plan.warp_broadcast(input=value, src_lane=0, threads_in_warp=plan.width)
    elif plan.broadcast == "block":
        result = H["block_broadcast"](_shared(1, type(value)), value)
    elif result is None:
        result = value
    if plan.result == "items":
        result = result[0][0] if len(result) == 1 else tuple(a[0] for a in result)
    if kept is not None:
        name, saved, valid = kept
        rank = H["lane"]() % plan.width if plan.family == "warp" else H["block_rank"]()
        H["restore_unloaded"](_Items(kws[name]), _Items(saved), valid, rank)
    return result
