"""cuda.coop-style kernels, written with ``from coopgen import coop`` only, and their checks.

Each ``case_*`` function returns a :class:`Case` on fresh random input: the kernel, its launch
shape, its arguments (numpy arrays and scalars) and a check of the arrays after the launch
against numpy. tests/gpu/compat/test_coop_containers.py launches them on a GPU;
tests/cpu/test_coop_compile.py links each for sm_90 as its launch would compile it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numba
import numpy as np
from numba import cuda
from numba.cuda import cgutils
from numba.cuda.extending import (lower_builtin, make_attribute_wrapper, models,
                                  register_model, type_callable)

from coopgen import coop


@dataclass
class Case:
    kernel: object
    grid: int
    block: object
    args: tuple
    check: Callable  # (arrays after the launch, in argument order) -> None
    sharedmem: int = 0  # dynamic shared memory of the launch, bytes

    @property
    def name(self) -> str:
        return self.kernel.__name__


def _ints(rng, n, dtype=np.int32, lo=-1000, hi=1000):
    out = rng.integers(lo, hi, n, dtype=dtype)
    out[0] = 1 if not out.any() else out[0]
    return out


# --- sizes and dtypes from kernel arguments -----------------------------------------------

@cuda.jit
def copy_sized_by_argument(d_in, d_out, items_per_thread):
    items = coop.local.array(items_per_thread, dtype=d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * items_per_thread
    coop.block.load(d_in[base:], items)
    coop.block.store(d_out[base:], items)


def case_copy_sized_by_argument(rng, items_per_thread=4, dtype=np.int32):
    threads, blocks = 128, 3
    x = _ints(rng, blocks * threads * items_per_thread, dtype)
    out = np.zeros_like(x)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], x)
    return Case(copy_sized_by_argument, blocks, threads, (x, out, items_per_thread), check)


@cuda.jit
def sort_tiles_sized_by_shape(d_in, d_out, threads):
    # items per thread from a 2-D array's shape and a scalar argument, read at launch
    items = coop.local.array(shape=d_in.shape[1] // threads, dtype=d_out.dtype)
    row = cuda.blockIdx.x
    coop.block.load(d_in[row], items)
    coop.block.radix_sort_keys(items)
    coop.block.store(d_out[row], items)


def case_sort_tiles_sized_by_shape(rng):
    threads, blocks, ipt = 64, 4, 8
    x = _ints(rng, (blocks, threads * ipt))
    out = np.zeros_like(x)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], np.sort(x, axis=1))
    return Case(sort_tiles_sized_by_shape, blocks, threads, (x, out, threads), check)


@cuda.jit
def block_sums_shared_sized_by_argument(d_in, d_out, items_per_thread):
    # a 2-D shared array, one row per thread, its row length a kernel argument
    rows = coop.shared.array((128, items_per_thread), d_in.dtype)
    t = cuda.threadIdx.x
    for i in range(items_per_thread):
        rows[t, i] = d_in[t * items_per_thread + i]
    items = coop.local.array(items_per_thread, d_in.dtype, alignment=16)
    for i in range(items_per_thread):
        items[i] = rows[t, i]
    total = coop.block.sum(items)
    if t == 0:
        d_out[0] = total


def case_block_sums_shared_sized_by_argument(rng):
    ipt = 3
    x = _ints(rng, 128 * ipt)
    out = np.zeros(1, np.int32)

    def check(arrays):
        assert arrays[1][0] == x.sum(dtype=np.int32)
    return Case(block_sums_shared_sized_by_argument, 1, 128, (x, out, ipt), check)


@cuda.jit
def reverse_tiles_numba_arrays(d_in, d_out, items_per_thread):
    # numba's own local array sized by a kernel argument; items_per_thread positional
    items = cuda.local.array(items_per_thread, numba.int32)
    base = cuda.blockIdx.x * cuda.blockDim.x * items_per_thread
    coop.block.load(d_in[base:], items, items_per_thread, coop.BlockLoadAlgorithm.STRIPED)
    coop.block.radix_sort_keys_descending(items, items_per_thread)
    coop.block.store(d_out[base:], items, items_per_thread)


def case_reverse_tiles_numba_arrays(rng):
    threads, blocks, ipt = 64, 3, 6
    x = _ints(rng, blocks * threads * ipt)
    out = np.zeros_like(x)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1].reshape(blocks, -1),
                                      -np.sort(-x.reshape(blocks, -1), axis=1))
    return Case(reverse_tiles_numba_arrays, blocks, threads, (x, out, ipt), check)


# --- ThreadData ---------------------------------------------------------------------------

@cuda.jit
def sort_thread_data(d_in, d_out, items_per_thread):
    items = coop.ThreadData(items_per_thread)  # dtype: d_in's, from the load
    base = cuda.blockIdx.x * cuda.blockDim.x * items_per_thread
    coop.block.load(d_in[base:], items)
    coop.block.radix_sort_keys(items)
    coop.block.store(d_out[base:], items)


def case_sort_thread_data(rng, dtype=np.float32):
    threads, blocks, ipt = 128, 2, 4
    x = rng.uniform(-100, 100, blocks * threads * ipt).astype(dtype)
    out = np.zeros_like(x)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1].reshape(blocks, -1),
                                      np.sort(x.reshape(blocks, -1), axis=1))
    return Case(sort_thread_data, blocks, threads, (x, out, ipt), check)


@cuda.jit
def scan_thread_data_with_dtype(d_in, d_out):
    items = coop.ThreadData(4, dtype=np.int64)
    base = cuda.blockIdx.x * cuda.blockDim.x * 4
    for i in range(4):
        items[i] = d_in[base + cuda.threadIdx.x * 4 + i]
    coop.block.exclusive_sum(items, items)
    for i in range(4):
        d_out[base + cuda.threadIdx.x * 4 + i] = items[i]


def case_scan_thread_data_with_dtype(rng):
    threads, blocks = 64, 3
    x = _ints(rng, blocks * threads * 4, np.int64, -(1 << 40), 1 << 40)
    out = np.zeros_like(x)

    def check(arrays):
        tiles = x.reshape(blocks, -1)
        want = np.cumsum(tiles, axis=1) - tiles
        np.testing.assert_array_equal(arrays[1].reshape(blocks, -1), want)
    return Case(scan_thread_data_with_dtype, blocks, threads, (x, out), check)


# --- TempStorage inside the kernel, prim[temp_storage] ------------------------------------

@cuda.jit
def sort_with_in_kernel_storage(d_in, d_out, items_per_thread):
    temp = coop.TempStorage()  # sized from its three uses; barriers between them (auto_sync)
    items = coop.local.array(items_per_thread, d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * items_per_thread
    coop.block.load(d_in[base:], items, algorithm="warp_transpose", temp_storage=temp)
    coop.block.radix_sort_keys[temp](items)
    coop.block.store(d_out[base:], items, algorithm="warp_transpose", temp_storage=temp)


def case_sort_with_in_kernel_storage(rng):
    threads, blocks, ipt = 256, 3, 4
    x = _ints(rng, blocks * threads * ipt, np.int32, -(1 << 30), 1 << 30)
    out = np.zeros_like(x)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1].reshape(blocks, -1),
                                      np.sort(x.reshape(blocks, -1), axis=1))
    return Case(sort_with_in_kernel_storage, blocks, threads, (x, out, ipt), check)


SCAN_BYTES = 4096  # a size the scan fits in, stated up front as cuda.coop code does


@cuda.jit
def sum_and_scan_exclusive_storage(d_in, d_sums, d_out):
    temp = coop.TempStorage(SCAN_BYTES + 1024, 16, sharing="exclusive")
    items = coop.local.array(2, d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * 2
    coop.block.load(d_in[base:], items)
    total = coop.block.sum(items, temp_storage=temp)     # its own slice: no barrier needed
    coop.block.inclusive_sum[temp](items, items)
    coop.block.store(d_out[base:], items)
    if cuda.threadIdx.x == 0:
        d_sums[cuda.blockIdx.x] = total


def case_sum_and_scan_exclusive_storage(rng):
    threads, blocks = 128, 4
    x = _ints(rng, blocks * threads * 2)
    sums = np.zeros(blocks, np.int32)
    out = np.zeros_like(x)

    def check(arrays):
        tiles = x.reshape(blocks, -1)
        np.testing.assert_array_equal(arrays[1], tiles.sum(axis=1, dtype=np.int32))
        np.testing.assert_array_equal(arrays[2].reshape(blocks, -1),
                                      np.cumsum(tiles, axis=1, dtype=np.int32))
    return Case(sum_and_scan_exclusive_storage, blocks, threads, (x, sums, out), check)


# --- numba's shared byte arrays and dynamic shared memory as temp storage ----------------

@cuda.jit
def sort_in_numba_shared_bytes(d_in, d_out):
    temp = cuda.shared.array(8192, numba.uint8)  # numba's own array: coopgen aligns it
    items = coop.local.array(4, d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * 4
    coop.block.load(d_in[base:], items)
    coop.block.radix_sort_keys(items, temp_storage=temp)
    coop.block.store(d_out[base:], items)


def case_sort_in_numba_shared_bytes(rng):
    threads, blocks = 128, 3
    x = _ints(rng, blocks * threads * 4, np.int32, -(1 << 30), 1 << 30)
    out = np.zeros_like(x)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1].reshape(blocks, -1),
                                      np.sort(x.reshape(blocks, -1), axis=1))
    return Case(sort_in_numba_shared_bytes, blocks, threads, (x, out), check)


@cuda.jit
def scan_and_sum_in_dynamic_shared(d_in, d_out, d_sums):
    dynamic = cuda.shared.array(0, numba.uint8)  # sized by the launch
    items = coop.local.array(2, d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * 2
    coop.block.load(d_in[base:], items)
    total = coop.block.sum(items, temp_storage=dynamic[:1024])
    coop.block.inclusive_sum(items, items, temp_storage=dynamic[1024:])
    coop.block.store(d_out[base:], items)
    if cuda.threadIdx.x == 0:
        d_sums[cuda.blockIdx.x] = total


def case_scan_and_sum_in_dynamic_shared(rng):
    threads, blocks = 128, 4
    x = _ints(rng, blocks * threads * 2)
    out = np.zeros_like(x)
    sums = np.zeros(blocks, np.int32)

    def check(arrays):
        tiles = x.reshape(blocks, -1)
        np.testing.assert_array_equal(arrays[1].reshape(blocks, -1),
                                      np.cumsum(tiles, axis=1, dtype=np.int32))
        np.testing.assert_array_equal(arrays[2], tiles.sum(axis=1, dtype=np.int32))
    return Case(scan_and_sum_in_dynamic_shared, blocks, threads, (x, out, sums), check,
                sharedmem=8192)


# --- two-phase: host objects, make_* factories, link= of old code ------------------------

TPB, IPT = 128, 4
block_load = coop.block.make_load(np.int32, threads_per_block=TPB, items_per_thread=IPT,
                                  algorithm="warp_transpose")
block_store = coop.block.make_store(np.int32, threads_per_block=TPB, items_per_thread=IPT,
                                    algorithm="warp_transpose")
block_sort = coop.block.radix_sort_keys(np.int32, threads_per_block=TPB, items_per_thread=IPT)


@cuda.jit(link=block_load.files + block_store.files + block_sort.files)
def two_phase_sort(d_in, d_out):
    items = cuda.local.array(IPT, np.int32)
    base = cuda.blockIdx.x * TPB * IPT
    block_load(d_in[base:], items)
    block_sort(items)
    block_store(d_out[base:], items)


def case_two_phase_sort(rng):
    blocks = 3
    x = _ints(rng, blocks * TPB * IPT, np.int32, -(1 << 30), 1 << 30)
    out = np.zeros_like(x)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1].reshape(blocks, -1),
                                      np.sort(x.reshape(blocks, -1), axis=1))
    return Case(two_phase_sort, blocks, TPB, (x, out), check)


# released cuda.coop code passes the objects' storage first: a uint8 shared array sized from
# the objects, or a TempStorage; the calls then synchronise themselves
LOAD_STORE_BYTES = max(block_load.temp_storage_bytes, block_store.temp_storage_bytes)
u8_load = coop.block.make_load(numba.uint8, TPB, IPT, coop.BlockLoadAlgorithm.TRANSPOSE)
u8_store = coop.block.make_store(numba.uint8, TPB, IPT, coop.BlockStoreAlgorithm.TRANSPOSE)


@cuda.jit(link=block_load.files + block_store.files + block_sort.files)
def two_phase_sort_storage_first(d_in, d_out, b_in, b_out):
    temp_storage = cuda.shared.array(shape=LOAD_STORE_BYTES, dtype=numba.uint8)
    sort_storage = coop.TempStorage()
    items = cuda.local.array(IPT, np.int32)
    base = cuda.blockIdx.x * TPB * IPT
    block_load(temp_storage, d_in[base:], items)
    cuda.syncthreads()
    block_sort(sort_storage, items)
    cuda.syncthreads()
    block_store(temp_storage, d_out[base:], items)
    # uint8 items: the first array is the storage only when the call does not bind without it
    raw = cuda.local.array(IPT, numba.uint8)
    u8_load(b_in[base:], raw)
    u8_store(b_out[base:], raw)


def case_two_phase_sort_storage_first(rng):
    blocks = 3
    x = _ints(rng, blocks * TPB * IPT, np.int32, -(1 << 30), 1 << 30)
    b = rng.integers(0, 256, blocks * TPB * IPT, dtype=np.uint8)
    out, b_out = np.zeros_like(x), np.zeros_like(b)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1].reshape(blocks, -1),
                                      np.sort(x.reshape(blocks, -1), axis=1))
        np.testing.assert_array_equal(arrays[3], b)
    return Case(two_phase_sort_storage_first, blocks, TPB, (x, out, b, b_out), check)

warp_sum16 = coop.warp.make_sum(np.int32, 16)  # (dtype, threads_in_warp)


@cuda.jit
def two_phase_warp_sums(d_in, d_out):
    t = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    total = warp_sum16(d_in[t])
    if t % 16 == 0:
        d_out[t // 16] = total


def case_two_phase_warp_sums(rng):
    threads, blocks = 64, 3
    x = _ints(rng, blocks * threads)
    out = np.zeros(blocks * threads // 16, np.int32)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], x.reshape(-1, 16).sum(axis=1, dtype=np.int32))
    return Case(two_phase_warp_sums, blocks, threads, (x, out), check)


@dataclass
class ScanParams:
    load: object
    scan: object
    store: object
    items_per_thread: int


SCAN_PARAMS = coop.gpu_dataclass(ScanParams(
    load=coop.block.load(np.int32, threads_per_block=TPB, items_per_thread=IPT),
    scan=coop.block.inclusive_sum(np.int32, threads_per_block=TPB, items_per_thread=IPT),
    store=coop.block.store(np.int32, threads_per_block=TPB, items_per_thread=IPT),
    items_per_thread=IPT))


@cuda.jit
def scan_with_dataclass(d_in, d_out, params):
    # fields: primitives callable in the kernel, a size read as a constant
    items = coop.local.array(params.items_per_thread, d_in.dtype)
    base = cuda.blockIdx.x * TPB * params.items_per_thread
    params.load(d_in[base:], items)
    params.scan(items, items)
    params.store(d_out[base:], items)


def case_scan_with_dataclass(rng):
    blocks = 3
    x = _ints(rng, blocks * TPB * IPT)
    out = np.zeros_like(x)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1].reshape(blocks, -1),
                                      np.cumsum(x.reshape(blocks, -1), axis=1, dtype=np.int32))
    return Case(scan_with_dataclass, blocks, TPB, (x, out, SCAN_PARAMS), check)


@cuda.jit
def sort_with_primitive_argument(d_in, d_out, sort):
    items = coop.local.array(IPT, d_in.dtype)
    base = cuda.blockIdx.x * TPB * IPT
    coop.block.load(d_in[base:], items)
    sort(items)  # a two-phase object passed as a kernel argument
    coop.block.store(d_out[base:], items)


def case_sort_with_primitive_argument(rng):
    blocks = 2
    x = _ints(rng, blocks * TPB * IPT, np.int32, -(1 << 30), 1 << 30)
    out = np.zeros_like(x)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1].reshape(blocks, -1),
                                      np.sort(x.reshape(blocks, -1), axis=1))
    return Case(sort_with_primitive_argument, blocks, TPB, (x, out, block_sort), check)


# --- operators: stateful prefix callbacks, plain Python functions -------------------------

class RunningTotal:
    """A block prefix callback: the state is the running total of the tiles scanned so far."""

    def __call__(state, block_aggregate):
        old = state[0]
        state[0] = old + block_aggregate
        return old


RUNNING_TOTAL = coop.StatefulFunction(RunningTotal, numba.int64)
TILES = 5


@cuda.jit
def scan_tiles_with_running_total(d_in, d_out):
    state = coop.local.array(1, dtype=numba.int64)
    state[0] = 0
    items = coop.local.array(4, d_in.dtype)
    for t in range(TILES):
        base = t * cuda.blockDim.x * 4
        coop.block.load(d_in[base:], items)
        coop.block.exclusive_sum(items, items, prefix_op=state)
        coop.block.store(d_out[base:], items)


def case_scan_tiles_with_running_total(rng):
    threads = 128
    x = _ints(rng, TILES * threads * 4, np.int64, -(1 << 40), 1 << 40)
    out = np.zeros_like(x)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], np.cumsum(x) - x)
    return Case(scan_tiles_with_running_total, 1, threads, (x, out), check)


def larger(a, b):  # a plain Python function: compiled as a device function when used
    return a if a > b else b


@cuda.jit
def warp_max_plain_function(d_in, d_out):
    t = cuda.threadIdx.x
    m = coop.warp.reduce(d_in[cuda.blockIdx.x * 32 + t], larger)
    if t == 0:
        d_out[cuda.blockIdx.x] = m


def case_warp_max_plain_function(rng):
    warps = 6
    x = rng.uniform(-100, 100, warps * 32).astype(np.float32)
    out = np.zeros(warps, np.float32)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], x.reshape(warps, 32).max(axis=1))
    return Case(warp_max_plain_function, warps, 32, (x, out), check)


# --- user-defined types: numba extension StructModels, op(out, a, b) on pointers ----------

class Float2Type(numba.types.Type):
    def __init__(self):
        super().__init__(name="Float2")


float2 = Float2Type()


@register_model(Float2Type)
class Float2Model(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("x", numba.float32), ("y", numba.float32)])


make_attribute_wrapper(Float2Type, "x", "x")
make_attribute_wrapper(Float2Type, "y", "y")


def make_float2(x, y):
    raise NotImplementedError("make_float2 is for kernels")


@type_callable(make_float2)
def _type_make_float2(context):
    def typer(x, y):
        return float2
    return typer


@lower_builtin(make_float2, numba.types.Number, numba.types.Number)
def _lower_make_float2(context, builder, sig, args):
    value = cgutils.create_struct_proxy(float2)(context, builder)
    value.x = context.cast(builder, args[0], sig.args[0], numba.float32)
    value.y = context.cast(builder, args[1], sig.args[1], numba.float32)
    return value._getvalue()


def add_float2(out, a, b):  # cuda.coop's operator shape for struct types
    out[0] = make_float2(a[0].x + b[0].x, a[0].y + b[0].y)


@cuda.jit
def float2_block_sum_and_scan(d_xy, d_scan, d_total):
    t = cuda.threadIdx.x
    items = coop.local.array(2, dtype=float2)
    for i in range(2):
        items[i] = make_float2(d_xy[2 * (2 * t + i)], d_xy[2 * (2 * t + i) + 1])
    total = coop.block.reduce(items, 2, add_float2)  # (src, items_per_thread, binary_op)
    coop.block.inclusive_scan(items, items, scan_op=add_float2)
    for i in range(2):
        d_scan[2 * (2 * t + i)] = items[i].x
        d_scan[2 * (2 * t + i) + 1] = items[i].y
    if t == 0:
        d_total[0] = total.x
        d_total[1] = total.y


def case_float2_block_sum_and_scan(rng):
    threads = 128
    xy = rng.integers(-50, 50, threads * 2 * 2).astype(np.float32)  # exact in float32
    scan = np.zeros_like(xy)
    total = np.zeros(2, np.float32)

    def check(arrays):
        pairs = xy.reshape(-1, 2)
        np.testing.assert_array_equal(arrays[1].reshape(-1, 2), np.cumsum(pairs, axis=0))
        np.testing.assert_array_equal(arrays[2], pairs.sum(axis=0))
    return Case(float2_block_sum_and_scan, 1, threads, (xy, scan, total), check)


float2_reduce = coop.block.make_reduce(float2, 128, 2, binary_op=add_float2,
                                       methods={"construct": None, "assign": None})


@cuda.jit
def float2_two_phase_reduce(d_xy, d_total):
    t = cuda.threadIdx.x
    items = coop.local.array(2, dtype=float2)
    for i in range(2):
        items[i] = make_float2(d_xy[2 * (2 * t + i)], d_xy[2 * (2 * t + i) + 1])
    total = float2_reduce(items)
    if t == 0:
        d_total[0] = total.x
        d_total[1] = total.y


def case_float2_two_phase_reduce(rng):
    xy = rng.integers(-50, 50, 128 * 2 * 2).astype(np.float32)
    total = np.zeros(2, np.float32)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], xy.reshape(-1, 2).sum(axis=0))
    return Case(float2_two_phase_reduce, 1, 128, (xy, total), check)


CASES = [case_copy_sized_by_argument, case_reverse_tiles_numba_arrays, case_sort_tiles_sized_by_shape,
         case_block_sums_shared_sized_by_argument, case_sort_thread_data,
         case_scan_thread_data_with_dtype, case_sort_with_in_kernel_storage,
         case_sum_and_scan_exclusive_storage, case_two_phase_sort,
         case_two_phase_sort_storage_first, case_scan_with_dataclass,
         case_sort_with_primitive_argument, case_scan_tiles_with_running_total,
         case_warp_max_plain_function, case_sort_in_numba_shared_bytes,
         case_scan_and_sum_in_dynamic_shared, case_float2_block_sum_and_scan,
         case_two_phase_warp_sums, case_float2_two_phase_reduce]
