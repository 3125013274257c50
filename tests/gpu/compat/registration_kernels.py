"""cuda.coop's kernels as its suite and docs write them, with numpy checks: prefix callbacks whose
class is registered through ``numba.core.extending`` (as cuda.coop's tests, docs and Mamba kernel
do) with a state of two numeric fields, in ``cuda.local.array`` or ``coop.local.array``,
single-phase and two-phase, one or more items per thread; scalar ``block.shuffle`` Up/Down by
any distance; a ``ThreadData`` whose dtype comes from a ``prim[temp_storage](...)`` call.

Each ``case_*`` returns a coop_kernels.Case; tests/gpu/compat/test_coop_containers.py launches
them, tests/cpu/test_coop_compile.py links them for sm_90 as their launches would.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import cuda, types
from numba.core import cgutils
from numba.core.extending import (lower_builtin, make_attribute_wrapper, models,
                                  register_model, type_callable, typeof_impl)

from coop_kernels import Case
from coopgen import coop


def _register_running_total(name: str, total_type):
    """A prefix callback class with a state (total: ``total_type``, calls: int64), registered as
    cuda.coop's suite registers its own: ``__call__`` returns the total before the tile (a
    ``total_type`` value, converted to the items' type) and counts its calls."""
    cls = type(name, (), {})

    def __init__(self, total, calls):
        self.total, self.calls = total, calls

    def __call__(self_ptr, block_aggregate):
        old = self_ptr[0].total
        self_ptr[0] = cls(old + block_aggregate, self_ptr[0].calls + 1)
        return old

    cls.__init__, cls.__call__ = __init__, __call__
    state_type = type(f"{name}Type", (types.Type,), {
        "__init__": lambda self: types.Type.__init__(self, name=name)})()
    typeof_impl.register(cls)(lambda val, c: state_type)
    accepted = types.Integer if isinstance(total_type, types.Integer) else types.Number

    @type_callable(cls)
    def _typer(context):
        def typer(total, calls):
            if isinstance(total, accepted) and isinstance(calls, types.Integer):
                return state_type
        return typer

    @register_model(type(state_type))
    class _Model(models.StructModel):
        def __init__(self, dmm, fe_type):
            super().__init__(dmm, fe_type, [("total", total_type), ("calls", types.int64)])

    make_attribute_wrapper(type(state_type), "total", "total")
    make_attribute_wrapper(type(state_type), "calls", "calls")

    @lower_builtin(cls, accepted, types.Integer)
    def _make(context, builder, sig, args):
        state = cgutils.create_struct_proxy(sig.return_type)(context, builder)
        state.total = context.cast(builder, args[0], sig.args[0], total_type)
        state.calls = context.cast(builder, args[1], sig.args[1], types.int64)
        return state._getvalue()

    return cls, state_type


IntTotal, INT_TOTAL = _register_running_total("CoreIntTotal", types.int64)
FloatTotal, FLOAT_TOTAL = _register_running_total("CoreFloatTotal", types.float64)
THREADS, TILES, BLOCKS = 96, 4, 2  # three warps per block, a segment of TILES tiles per block


def _prefix_scan(dtype, ipt, container, form):
    """Each block scans its segment tile by tile, the callback carrying the running total;
    thread 0 reports how often its callback was called. ``form``: the cuda.coop call."""
    cls, state_type = (FloatTotal, FLOAT_TOTAL) if np.dtype(dtype).kind == "f" else \
        (IntTotal, INT_TOTAL)
    item = numba.from_dtype(np.dtype(dtype))
    tile, local = THREADS * ipt, container == "cuda.local"
    inclusive = form == "inclusive_sum"
    made = coop.block.make_exclusive_sum(item, THREADS, ipt, prefix_op=coop.StatefulFunction(
        cls, state_type)) if form == "two_phase" else None

    @cuda.jit
    def kernel(d_in, d_out, d_calls):
        if local:
            state = cuda.local.array(1, dtype=state_type)
        else:
            state = coop.local.array(1, dtype=state_type)
        state[0] = cls(0, 0)
        items = coop.local.array(ipt, dtype=item)
        seg = cuda.blockIdx.x * tile * TILES
        for t in range(TILES):
            base = seg + t * tile + cuda.threadIdx.x * ipt
            for i in range(ipt):
                items[i] = d_in[base + i]
            if form == "scan_positional":
                coop.block.scan(items, items, ipt, prefix_op=state)
            elif form == "inclusive_sum":
                coop.block.inclusive_sum(items, items, prefix_op=state)
            else:
                made(items, items, state)
            for i in range(ipt):
                d_out[base + i] = items[i]
        if cuda.threadIdx.x == 0:
            d_calls[cuda.blockIdx.x] = state[0].calls
    return kernel, inclusive


def _prefix_case(rng, dtype, ipt, container, form):
    kernel, inclusive = _prefix_scan(dtype, ipt, container, form)
    n = BLOCKS * TILES * THREADS * ipt
    if np.dtype(dtype).kind == "f":
        x = rng.uniform(-1, 1, n).astype(dtype)
    else:
        x = rng.integers(-50, 50, n).astype(dtype)
    segs = x.reshape(BLOCKS, -1).astype(np.float64)
    running = np.cumsum(segs, axis=1)
    want = (running if inclusive else running - segs).ravel()

    def check(arrays):
        np.testing.assert_allclose(arrays[1], want.astype(dtype), rtol=1e-4, atol=1e-3)
        np.testing.assert_array_equal(arrays[2], TILES)  # one call per tile
    return Case(kernel, BLOCKS, THREADS, (x, np.zeros_like(x), np.zeros(BLOCKS, np.int64)),
                check)


def case_core_prefix_scan_positional_int32_over_int64_state_cuda_local(rng):
    return _prefix_case(rng, np.int32, 3, "cuda.local", "scan_positional")


def case_core_prefix_scan_positional_int64_one_item_coop_local(rng):
    return _prefix_case(rng, np.int64, 1, "coop.local", "scan_positional")


def case_core_prefix_inclusive_sum_float64_coop_local(rng):
    return _prefix_case(rng, np.float64, 4, "coop.local", "inclusive_sum")


def case_core_prefix_inclusive_sum_float32_one_item_cuda_local(rng):
    return _prefix_case(rng, np.float32, 1, "cuda.local", "inclusive_sum")


def case_core_prefix_two_phase_int16_cuda_local(rng):
    return _prefix_case(rng, np.int16, 2, "cuda.local", "two_phase")


def case_core_prefix_two_phase_int32_one_item_coop_local(rng):
    return _prefix_case(rng, np.int32, 1, "coop.local", "two_phase")


def _shift(kind, distance):
    @cuda.jit
    def kernel(d_in, d_out):
        tid = cuda.threadIdx.x
        value = d_in[tid]
        shuffled = coop.block.shuffle(value, block_shuffle_type=kind, distance=distance)
        source = tid - distance if kind == coop.block.BlockShuffleType.Up else tid + distance
        d_out[tid] = shuffled if 0 <= source < cuda.blockDim.x else value
    return kernel


def _shift_case(rng, kind, distance, dtype, threads):
    """cuda.coop's documented scalar shift: Up gives thread t thread t - distance's value."""
    x = (rng.uniform(-100, 100, threads) if np.dtype(dtype).kind == "f"
         else rng.integers(-100, 100, threads)).astype(dtype)
    want = x.copy()
    if kind == coop.block.BlockShuffleType.Up:
        want[distance:] = x[:threads - distance]
    else:
        want[:threads - distance] = x[distance:]

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], want)
    return Case(_shift(kind, distance), 1, threads, (x, np.zeros_like(x)), check)


UP, DOWN = coop.block.BlockShuffleType.Up, coop.block.BlockShuffleType.Down


def case_shuffle_up_scalar_documented(rng):
    return _shift_case(rng, UP, 2, np.int32, 64)


def case_shuffle_up_scalar_one_float64_odd_block(rng):
    return _shift_case(rng, UP, 1, np.float64, 96)


def case_shuffle_up_scalar_past_a_warp_int16(rng):
    return _shift_case(rng, UP, 33, np.int16, 64)


def case_shuffle_down_scalar_int64_odd_block(rng):
    return _shift_case(rng, DOWN, 5, np.int64, 96)


def case_shuffle_down_scalar_float32(rng):
    return _shift_case(rng, DOWN, 31, np.float32, 128)


def _thread_data_sugar(ipt, exclusive):
    @cuda.jit
    def kernel(d_in, d_out):
        if exclusive:
            load_storage = coop.TempStorage(sharing="exclusive")
            store_storage = coop.TempStorage(sharing="exclusive")
        else:
            load_storage = store_storage = coop.TempStorage()
        items = coop.ThreadData(ipt)
        base = cuda.blockIdx.x * cuda.blockDim.x * ipt
        coop.block.load[load_storage](d_in[base:], items,
                                      algorithm=coop.BlockLoadAlgorithm.TRANSPOSE)
        for i in range(ipt):
            items[i] = items[i] * 3
        coop.block.store[store_storage](d_out[base:], items,
                                        algorithm=coop.BlockStoreAlgorithm.TRANSPOSE)
    return kernel


def _thread_data_case(rng, dtype, ipt, threads, exclusive):
    x = (rng.uniform(-10, 10, 2 * threads * ipt) if np.dtype(dtype).kind == "f"
         else rng.integers(-1000, 1000, 2 * threads * ipt)).astype(dtype)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], x * dtype(3))
    return Case(_thread_data_sugar(ipt, exclusive), 2, threads, (x, np.zeros_like(x)), check)


def case_thread_data_dtype_from_getitem_sugar_int16(rng):
    return _thread_data_case(rng, np.int16, 3, 96, False)


def case_thread_data_dtype_from_getitem_sugar_two_storages_float32(rng):
    return _thread_data_case(rng, np.float32, 5, 128, True)


def _inclusive_scan_without_initial_value(ipt):
    scan = coop.block.make_inclusive_scan(dtype=numba.complex64, threads_per_block=64,
                                          scan_op="*", items_per_thread=ipt)

    @cuda.jit
    def kernel(d_in, d_out):
        items = coop.local.array(ipt, dtype=numba.complex64)
        base = cuda.threadIdx.x * ipt
        for i in range(ipt):
            items[i] = d_in[base + i]
        scan(items, items)
        for i in range(ipt):
            d_out[base + i] = items[i]
    return kernel


def case_inclusive_scan_object_of_arrays_without_initial_value(rng):
    """CUB's InclusiveScan of arrays takes the operator alone (cuda.coop asks for an initial
    value here): a running product of unit complex numbers."""
    x = np.exp(1j * rng.uniform(-np.pi, np.pi, 64 * 3)).astype(np.complex64)

    def check(arrays):
        np.testing.assert_allclose(arrays[1], np.cumprod(x.astype(np.complex128)), atol=1e-3)
    return Case(_inclusive_scan_without_initial_value(3), 1, 64, (x, np.zeros_like(x)), check)


CASES = [case_inclusive_scan_object_of_arrays_without_initial_value, case_core_prefix_scan_positional_int32_over_int64_state_cuda_local,
         case_core_prefix_scan_positional_int64_one_item_coop_local,
         case_core_prefix_inclusive_sum_float64_coop_local,
         case_core_prefix_inclusive_sum_float32_one_item_cuda_local,
         case_core_prefix_two_phase_int16_cuda_local,
         case_core_prefix_two_phase_int32_one_item_coop_local,
         case_shuffle_up_scalar_documented, case_shuffle_up_scalar_one_float64_odd_block,
         case_shuffle_up_scalar_past_a_warp_int16, case_shuffle_down_scalar_int64_odd_block,
         case_shuffle_down_scalar_float32,
         case_thread_data_dtype_from_getitem_sugar_int16,
         case_thread_data_dtype_from_getitem_sugar_two_storages_float32]
