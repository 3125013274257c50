"""Kernels written for numba-cuda-mlir (``from numba_cuda_mlir import cuda``) over coopgen's
core: loads and stores, reductions, scans, sorts, warp primitives, user operators, explicit
and shared storage, two-phase objects. Each case: (kernel, block, make inputs, numpy's answer);
tests/mlir links them on a CPU and runs them on a GPU."""
import functools

import numpy as np
from numba_cuda_mlir import cuda

from coopgen import TempStorage, block, coop, local, shared, warp

GRID = 3


@cuda.jit(device=True)
def max_op(a, b):
    return a if a > b else b


@cuda.jit(device=True)
def less(a, b):
    return a < b


#: items per thread of each case's input (4 unless named)
ITEMS = {"warp_sum": 1}


def inputs(name: str, dtype, rng):
    """(input, outputs, numpy's answers) of a case."""
    _, threads, _, outs, want = CASES[name]
    lo = 0 if np.dtype(dtype).kind == "u" else -100
    x = rng.integers(lo, 100, GRID * threads * ITEMS.get(name, 4)).astype(dtype)
    return x, outs(x, threads), want(x, threads)


def assert_matches(d_outs, want, dtype) -> None:
    """The device outputs are numpy's answers (floats: to rounding)."""
    for d, w in zip(d_outs, want):
        got = d.copy_to_host()
        if np.dtype(dtype).kind == "f":
            np.testing.assert_allclose(got, w, rtol=1e-5)
        else:
            np.testing.assert_array_equal(got, w)


def _reduce_kernel(op_name):
    @cuda.jit
    def k(d_in, d_out):
        items = local.array(4, d_in.dtype)
        base = cuda.blockIdx.x * cuda.blockDim.x * 4
        block.load(d_in[base:], items)
        if op_name == 0:
            total = block.sum(items)
        elif op_name == 1:
            total = block.reduce(items, "max")
        else:
            total = block.reduce(items, max_op)
        if cuda.threadIdx.x == 0:
            d_out[cuda.blockIdx.x] = total
    return k


@cuda.jit
def scan_kernel(d_in, d_out):
    items = local.array(4, d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * 4
    block.load(d_in[base:], items, algorithm="transpose")
    block.exclusive_sum(items, items)
    block.store(d_out[base:], items, algorithm="transpose")


@cuda.jit
def inclusive_max_kernel(d_in, d_out):
    items = local.array(4, d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * 4
    block.load(d_in[base:], items)
    block.inclusive_scan(items, items, max_op)
    block.store(d_out[base:], items)


@cuda.jit
def merge_sort_kernel(d_in, d_out):
    items = local.array(4, d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * 4
    block.load(d_in[base:], items)
    block.merge_sort_keys(items, less)
    block.store(d_out[base:], items)


@cuda.jit
def radix_descending_explicit_storage_kernel(d_in, d_out):
    temp = shared.array(8192, np.uint8)
    items = local.array(4, d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * 4
    block.load(d_in[base:], items)
    block.radix_sort_keys_descending(items, temp_storage=temp)
    block.store(d_out[base:], items)


STORAGE = TempStorage()


@cuda.jit
def temp_storage_object_kernel(d_in, d_out, d_sums):
    items = local.array(4, d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * 4
    block.load(d_in[base:], items, temp_storage=STORAGE)
    total = block.sum(items, temp_storage=STORAGE)
    block.inclusive_sum(items, items, temp_storage=STORAGE)
    block.store(d_out[base:], items, temp_storage=STORAGE)
    if cuda.threadIdx.x == 0:
        d_sums[cuda.blockIdx.x] = total


@cuda.jit
def warp_sum_kernel(d_in, d_out):
    t = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    total = warp.sum(d_in[t])
    if cuda.threadIdx.x % 32 == 0:
        d_out[t // 32] = total


BLOCK_SUM_I32 = block.sum(np.int32, 128, 4)  # a two-phase object


@cuda.jit
def two_phase_kernel(d_in, d_out):
    items = local.array(4, np.int32)
    base = cuda.blockIdx.x * 128 * 4
    for i in range(4):
        items[i] = d_in[base + cuda.threadIdx.x * 4 + i]
    total = BLOCK_SUM_I32(items)
    if cuda.threadIdx.x == 0:
        d_out[cuda.blockIdx.x] = total


def _per_tile(fn):
    return lambda x, threads: np.stack([fn(t) for t in x.reshape(GRID, -1)])


def _blocked_scan(x, threads):
    return np.concatenate([np.concatenate([[0], np.cumsum(t)[:-1]]).astype(x.dtype)
                           for t in x.reshape(GRID, -1)])


@cuda.jit
def coop_style_kernel(d_in, d_out):
    """cuda.coop's style: numba-cuda-mlir's own arrays (sized by coopgen from their constant
    shape) and coopgen.coop's namespace."""
    items = cuda.local.array(4, np.int32)
    scanned = cuda.local.array(shape=4, dtype=np.int32)
    base = cuda.blockIdx.x * cuda.blockDim.x * 4
    coop.block.load(d_in[base:], items)
    coop.block.inclusive_sum(items, scanned)
    coop.block.store(d_out[base:], scanned)


#: name -> (kernel, threads, dtypes, outputs(x) -> list of arrays, numpy's answers)
CASES = {
    "sum": (_reduce_kernel(0), 128, (np.int32, np.float64, np.uint64),
            lambda x, n: [np.zeros(GRID, x.dtype)],
            lambda x, n: [x.reshape(GRID, -1).sum(axis=1, dtype=x.dtype)]),
    "reduce_max": (_reduce_kernel(1), 256, (np.int16, np.float32),
                   lambda x, n: [np.zeros(GRID, x.dtype)],
                   lambda x, n: [x.reshape(GRID, -1).max(axis=1)]),
    "reduce_python_op": (_reduce_kernel(2), 64, (np.int32, np.float64),
                         lambda x, n: [np.zeros(GRID, x.dtype)],
                         lambda x, n: [x.reshape(GRID, -1).max(axis=1)]),
    "exclusive_sum": (scan_kernel, 128, (np.int32, np.int64),
                      lambda x, n: [np.zeros_like(x)], lambda x, n: [_blocked_scan(x, n)]),
    "inclusive_max_python_op": (
        inclusive_max_kernel, 256, (np.int32, np.float32), lambda x, n: [np.zeros_like(x)],
        lambda x, n: [np.maximum.accumulate(x.reshape(GRID, -1), axis=1).ravel()]),
    "merge_sort_python_op": (merge_sort_kernel, 128, (np.int32, np.float64),
                             lambda x, n: [np.zeros_like(x)],
                             lambda x, n: [np.sort(x.reshape(GRID, -1), axis=1).ravel()]),
    "radix_descending_explicit": (
        radix_descending_explicit_storage_kernel, 128, (np.uint32, np.int64),
        lambda x, n: [np.zeros_like(x)],
        lambda x, n: [-np.sort(-x.reshape(GRID, -1).astype(np.float64), axis=1).ravel()
                      .astype(x.dtype)]),
    "temp_storage_object": (
        temp_storage_object_kernel, 128, (np.int32,),
        lambda x, n: [np.zeros_like(x), np.zeros(GRID, x.dtype)],
        lambda x, n: [np.cumsum(x.reshape(GRID, -1), axis=1).ravel(),
                      x.reshape(GRID, -1).sum(axis=1)]),
    "coop_style": (coop_style_kernel, 128, (np.int32,), lambda x, n: [np.zeros_like(x)],
                   lambda x, n: [np.cumsum(x.reshape(GRID, -1), axis=1).ravel()
                                 .astype(x.dtype)]),
    "warp_sum": (warp_sum_kernel, 64, (np.int32, np.float32),
                 lambda x, n: [np.zeros(x.size // 32, x.dtype)],
                 lambda x, n: [x.reshape(-1, 32).sum(axis=1, dtype=x.dtype)]),
    "two_phase": (two_phase_kernel, 128, (np.int32,), lambda x, n: [np.zeros(GRID, x.dtype)],
                  lambda x, n: [x.reshape(GRID, -1).sum(axis=1)]),
}


@cuda.jit
def large_radix_sort_kernel(d_in, d_out):
    """1024 threads x 16 int64 keys: 132 KB of CUB storage, so dynamic shared memory the
    launch adds by itself."""
    items = local.array(16, d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * 16
    block.load(d_in[base:], items, algorithm="transpose")
    block.radix_sort_keys(items)
    block.store(d_out[base:], items, algorithm="transpose")


CASES["large_dynamic_shared"] = (
    large_radix_sort_kernel, 1024, (np.int64,), lambda x, n: [np.zeros_like(x)],
    lambda x, n: [np.sort(x.reshape(GRID, -1), axis=1).ravel()])
ITEMS["large_dynamic_shared"] = 16


# cuda.coop's in-kernel forms, as its kernels write them: coop.ThreadData (its dtype from its
# first use, or given), prim[ts](...), coop.TempStorage() made in the kernel, a two-phase
# object called with storage; odd sizes and 1-D and 2-D blocks.


@cuda.jit
def thread_data_scan_kernel(d_in, d_out):
    items = coop.ThreadData(3)  # int32/float64/...: the load's source gives it
    base = cuda.blockIdx.x * cuda.blockDim.x * cuda.blockDim.y * 3
    coop.block.load(d_in[base:], items, 3, "transpose")
    coop.block.inclusive_sum(items, items)
    coop.block.store(d_out[base:], items, 3, "transpose")


@cuda.jit
def getitem_storage_kernel(d_in, d_out, d_sums):
    ts = coop.TempStorage()
    items = coop.ThreadData(5)
    base = cuda.blockIdx.x * cuda.blockDim.x * cuda.blockDim.y * 5
    coop.block.load[ts](d_in[base:], items, 5, coop.BlockLoadAlgorithm.WARP_TRANSPOSE)
    total = coop.block.sum[ts](items)
    coop.block.exclusive_sum[ts](items, items)
    coop.block.store[ts](d_out[base:], items, 5, coop.BlockStoreAlgorithm.WARP_TRANSPOSE)
    if cuda.threadIdx.x == 0 and cuda.threadIdx.y == 0:
        d_sums[cuda.blockIdx.x] = total


_SORTS: dict = {}


def two_phase_sort_kernel(dtype, block):
    """A two-phase radix sort called with storage made in the kernel, of its own size."""
    key = (np.dtype(dtype).name, block)
    if key not in _SORTS:
        sort = coop.block.make_radix_sort_keys(dtype, block, 3)

        @cuda.jit
        def k(d_in, d_out):
            ts = coop.TempStorage(sort.temp_storage_bytes + 64, 16, sharing="exclusive")
            items = coop.ThreadData(3, dtype=d_in.dtype)
            base = cuda.blockIdx.x * cuda.blockDim.x * cuda.blockDim.y * 3
            coop.block.load(d_in[base:], items, 3, temp_storage=ts)
            sort[ts](items)
            coop.block.store(d_out[base:], items, 3, temp_storage=ts)
        _SORTS[key] = k
    return _SORTS[key]


@cuda.jit
def warp_thread_data_sort_kernel(d_in, d_out):
    items = coop.ThreadData(4)
    tid = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    base = (cuda.blockIdx.x * cuda.blockDim.x * cuda.blockDim.y + tid) // 32 * 128
    coop.warp.load(d_in[base:], items)
    coop.warp.merge_sort_keys(items, 4, less)
    coop.warp.store(d_out[base:], items)


def _tiles(x, n):
    return x.reshape(-1, n)


# Operators on items C++ passes by pointer (half, bfloat16, complex, vector types): Python
# device functions taking them by value, or through pointers as cuda.coop's operators do.


@cuda.jit(device=True)
def larger(a, b):
    return a if a > b else b


@cuda.jit(device=True)
def complex_add(a, b):
    return a + b


@cuda.jit(device=True)
def real_greater(a, b):  # cuda.coop's form: the items through pointers
    return a[0].real > b[0].real


_MADE: dict = {}


def _made(key, make):
    if key not in _MADE:
        _MADE[key] = make()
    return _MADE[key]


def half_reduce_kernel(dtype, block):
    """block.reduce of float16 or bfloat16 items (from float32 inputs) with a Python max."""
    item = cuda.bfloat16 if dtype == "bfloat16" else np.float16

    def make():
        @cuda.jit
        def k(d_in, d_out):
            items = coop.local.array(3, item)
            tid = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
            base = (cuda.blockIdx.x * cuda.blockDim.x * cuda.blockDim.y + tid) * 3
            for i in range(3):
                items[i] = item(d_in[base + i])
            total = coop.block.reduce(items, 3, larger)
            if tid == 0:
                d_out[cuda.blockIdx.x] = np.float32(total)
        return k
    return _made(("half", dtype), make)


def vector_sum_kernel(dtype, block):
    """block.reduce of vector items (``int32x2``, from pairs of inputs) with a Python sum."""
    vec = getattr(cuda, dtype)

    def make():
        @cuda.jit(device=True)
        def add(a, b):
            return vec(a.x + b.x, a.y + b.y)

        @cuda.jit
        def k(d_in, d_out):
            items = coop.local.array(3, vec)
            tid = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
            base = (cuda.blockIdx.x * cuda.blockDim.x * cuda.blockDim.y + tid) * 6
            for i in range(3):
                items[i] = vec(d_in[base + 2 * i], d_in[base + 2 * i + 1])
            total = coop.block.reduce(items, 3, add)
            if tid == 0:
                d_out[2 * cuda.blockIdx.x] = total.x
                d_out[2 * cuda.blockIdx.x + 1] = total.y
        return k
    return _made(("vector", dtype), make)


@cuda.jit
def complex_scan_kernel(d_in, d_out):
    items = coop.ThreadData(3)
    base = cuda.blockIdx.x * cuda.blockDim.x * cuda.blockDim.y * 3
    coop.block.load(d_in[base:], items, 3)
    coop.block.inclusive_scan(items, items, 3, complex_add)
    coop.block.store(d_out[base:], items, 3)


@cuda.jit
def complex_sort_kernel(d_in, d_out):
    items = coop.ThreadData(3)
    base = cuda.blockIdx.x * cuda.blockDim.x * cuda.blockDim.y * 3
    coop.block.load(d_in[base:], items, 3)
    coop.block.merge_sort_keys(items, 3, real_greater)
    coop.block.store(d_out[base:], items, 3)


def larger_plain(a, b):  # a plain Python function: compiled as a device function
    return a if a > b else b


@cuda.jit
def warp_max_plain_function_kernel(d_in, d_out):
    tid = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    t = cuda.blockIdx.x * cuda.blockDim.x * cuda.blockDim.y + tid
    largest = coop.warp.reduce(d_in[t], larger_plain)
    if tid % 32 == 0:
        d_out[t // 32] = largest


class RunningTotal:
    """cuda.coop's stateful prefix callback: the state is the total of the tiles so far."""

    def __call__(state, block_aggregate):
        old = state[0]
        state[0] = old + block_aggregate
        return old


RUNNING_TOTAL = coop.StatefulFunction(RunningTotal, np.int64)  # an int64 state is its state
#: A record (numpy structured dtype) sorted by its fields through a Python comparator.
RECORD = np.dtype([("a", np.int32), ("b", np.float32)], align=True)


@cuda.jit(device=True)
def record_less(x, y):
    return x.a < y.a or (x.a == y.a and x.b < y.b)


@functools.cache
def record_sort_kernel(ipt):
    """Group-first merge sort of ``ipt`` records a thread: the call sorts a copy of the items
    (the rewrite's copy loop runs over the array's length, which must count records)."""
    @cuda.jit
    def k(d_in, d_out):
        t = cuda.threadIdx.x + cuda.blockDim.x * cuda.threadIdx.y
        base = (cuda.blockIdx.x * cuda.blockDim.x * cuda.blockDim.y + t) * ipt
        keys = coop.local.array(ipt, d_in.dtype)
        for i in range(ipt):
            keys[i] = d_in[base + i]
        out = coop.merge_sort_keys(coop.this_block(), keys, compare_op=record_less)
        for i in range(ipt):
            d_out[base + i] = out[i]
    return k


def _records(dtype, n, rng):
    x = np.empty(GRID * n, RECORD)
    x["a"], x["b"] = rng.integers(-4, 5, x.size), rng.integers(-100, 100, x.size)
    return x


def _record_case(ipt):
    return (lambda dt, b: record_sort_kernel(ipt), (32, (8, 4)), (RECORD,), ipt,
            lambda x: [np.zeros_like(x)],
            lambda x, n: [np.concatenate([t[np.lexsort((t["b"], t["a"]))] for t in _tiles(x, n)])],
            _records)


TILES = 3


@cuda.jit
def running_total_scan_kernel(d_in, d_out):
    """Each block scans TILES consecutive tiles, carrying the total in a prefix callback."""
    state = coop.local.array(1, dtype=np.int64)
    state[0] = 0
    items = coop.local.array(3, d_in.dtype)
    for t in range(TILES):
        base = (cuda.blockIdx.x * TILES + t) * cuda.blockDim.x * cuda.blockDim.y * 3
        coop.block.load(d_in[base:], items, 3)
        coop.block.exclusive_sum(items, items, prefix_op=state)
        coop.block.store(d_out[base:], items, 3)


SHIFT, TURN = 5, 3


@cuda.jit
def shuffle_by_enum_kernel(d_in, d_offset, d_rotate):
    tid = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    t = cuda.blockIdx.x * cuda.blockDim.x * cuda.blockDim.y + tid
    shifted = coop.block.shuffle(d_in[t], block_shuffle_type=coop.block.BlockShuffleType.Offset,
                                 distance=SHIFT)
    rotated = coop.block.shuffle(d_in[t], block_shuffle_type=coop.block.BlockShuffleType.Rotate,
                                 distance=TURN)
    d_offset[t] = -1
    if tid + SHIFT < cuda.blockDim.x * cuda.blockDim.y:  # the others get no item
        d_offset[t] = shifted
    d_rotate[t] = rotated


def _shifted(x, n):
    """Thread t's item is thread t + SHIFT's (CUB's Offset), -1 past the block's end."""
    out = np.full((GRID, n), -1, x.dtype)
    out[:, :-SHIFT] = _tiles(x, n)[:, SHIFT:]
    return out.ravel()


@cuda.jit
def complex_sums_kernel(d_in, d_block, d_warp):
    """Complex values to and from the shims: a block's sum returned, a warp's of one item."""
    items = coop.ThreadData(3)
    tid = cuda.threadIdx.y * cuda.blockDim.x + cuda.threadIdx.x
    first = cuda.blockIdx.x * cuda.blockDim.x * cuda.blockDim.y
    coop.block.load(d_in[first * 3:], items, 3)
    total = coop.block.sum(items, 3)
    warp_total = coop.warp.sum(items[0])
    if tid == 0:
        d_block[cuda.blockIdx.x] = total
    if tid % 32 == 0:
        d_warp[(first + tid) // 32] = warp_total


def _ints(dtype, n, rng):
    lo = 0 if np.dtype(dtype).kind == "u" else -100
    return rng.integers(lo, 100, GRID * n).astype(dtype)


def _complex(dtype, n, rng):
    """Distinct real parts in each tile (a sort's order is then one), any imaginary parts."""
    real = np.concatenate([rng.permutation(n) - n // 2 for _ in range(GRID)])
    return (real + 1j * rng.integers(-100, 100, GRID * n)).astype(dtype)


def _lanes(dtype):
    return np.float32 if dtype in ("float16", "bfloat16") else np.dtype(dtype[:-2])


#: name -> (kernel(dtype, block), block shapes, dtypes, items per thread, outputs(x),
#: numpy's answers(x, items per block), inputs(dtype, items per block, rng)); GRID blocks.
#: A dtype "bfloat16" or "int32x2" names the items; the arrays hold float32 or int32.
COOP_CASES = {
    "thread_data_scan": (
        lambda dt, b: thread_data_scan_kernel, (96, (16, 6)), (np.int32, np.float64, np.int64),
        3, lambda x: [np.zeros_like(x)],
        lambda x, n: [np.cumsum(_tiles(x, n), axis=1, dtype=x.dtype).ravel()]),
    "getitem_storage": (
        lambda dt, b: getitem_storage_kernel, (96, (32, 3)), (np.int32, np.float32, np.uint64),
        5, lambda x: [np.zeros_like(x), np.zeros(GRID, x.dtype)],
        lambda x, n: [np.concatenate([np.zeros((GRID, 1), x.dtype), np.cumsum(
            _tiles(x, n), axis=1, dtype=x.dtype)[:, :-1]], axis=1).ravel(),
            _tiles(x, n).sum(axis=1, dtype=x.dtype)]),
    "two_phase_sort": (
        two_phase_sort_kernel, (96, (32, 3)), (np.int32, np.uint16, np.float64), 3,
        lambda x: [np.zeros_like(x)], lambda x, n: [np.sort(_tiles(x, n), axis=1).ravel()]),
    "warp_thread_data_sort": (
        lambda dt, b: warp_thread_data_sort_kernel, (64, (32, 3)), (np.int32, np.float64,
                                                                   np.uint8),
        4, lambda x: [np.zeros_like(x)], lambda x, n: [np.sort(_tiles(x, 128), axis=1).ravel()]),
    "warp_max_plain_function": (
        lambda dt, b: warp_max_plain_function_kernel, (64, (32, 3)), (np.int32, np.float32,
                                                                      np.int64),
        1, lambda x: [np.zeros(x.size // 32, x.dtype)], lambda x, n: [_tiles(x, 32).max(axis=1)]),
    "shuffle_by_enum": (
        lambda dt, b: shuffle_by_enum_kernel, (64, (16, 6)), (np.int32, np.float64, np.int16), 1,
        lambda x: [np.zeros_like(x), np.zeros_like(x)],
        lambda x, n: [_shifted(x, n), np.roll(_tiles(x, n), -TURN, axis=1).ravel()]),
    "running_total_stateful_function": (
        lambda dt, b: running_total_scan_kernel, (96, (32, 3)), (np.int32, np.int64), 3,
        lambda x: [np.zeros_like(x)],
        lambda x, n: [(np.cumsum(_tiles(x, TILES * n), axis=1, dtype=x.dtype)
                       - _tiles(x, TILES * n)).ravel()],
        lambda dt, n, rng: _ints(dt, TILES * n, rng)),
    "half_reduce_python_op": (
        half_reduce_kernel, (96, (32, 3)), ("float16", "bfloat16"), 3,
        lambda x: [np.zeros(GRID, x.dtype)], lambda x, n: [_tiles(x, n).max(axis=1)],
        lambda dt, n, rng: _ints(np.float32, n, rng)),
    "vector_reduce_python_op": (
        vector_sum_kernel, (96, (16, 6)), ("int32x2", "float32x2"), 3,
        lambda x: [np.zeros(2 * GRID, x.dtype)],
        lambda x, n: [_tiles(x, 2 * n).reshape(GRID, n, 2).sum(axis=1, dtype=x.dtype).ravel()],
        lambda dt, n, rng: _ints(_lanes(dt), 2 * n, rng)),
    "complex_scan_python_op": (
        lambda dt, b: complex_scan_kernel, (96, (16, 6)), (np.complex64, np.complex128), 3,
        lambda x: [np.zeros_like(x)],
        lambda x, n: [np.cumsum(_tiles(x, n), axis=1, dtype=x.dtype).ravel()], _complex),
    "complex_sums": (
        lambda dt, b: complex_sums_kernel, (96, (32, 2)), (np.complex64, np.complex128), 3,
        lambda x: [np.zeros(GRID, x.dtype), np.zeros(x.size // 96, x.dtype)],
        lambda x, n: [_tiles(x, n).sum(axis=1, dtype=x.dtype),
                      x.reshape(-1, 3)[:, 0].reshape(-1, 32).sum(axis=1, dtype=x.dtype)],
        _complex),
    "complex_sort_through_pointers": (
        lambda dt, b: complex_sort_kernel, (128, (32, 4)), (np.complex64, np.complex128), 3,
        lambda x: [np.zeros_like(x)],
        lambda x, n: [np.concatenate([t[np.argsort(-t.real)] for t in _tiles(x, n)])],
        _complex),
    # odd item counts: where numba-cuda-mlir kept the copy loop that overran the arrays
    "record_sort_python_op_11": _record_case(11),
    "record_sort_python_op_13": _record_case(13),
}


def dtype_name(dtype) -> str:
    return dtype if isinstance(dtype, str) else np.dtype(dtype).name


def coop_inputs(name: str, dtype, block, rng):
    """(kernel, input, outputs, numpy's answers) of a COOP_CASES case."""
    make, _, _, ipt, outs, want, *draw = COOP_CASES[name]
    n = int(np.prod(block)) * ipt
    x = (draw[0] if draw else _ints)(dtype, n, rng)
    return make(dtype, block), x, outs(x), want(x, n)
