"""CuTe DSL kernels calling coopgen, shared by the CPU link checks and the GPU tests: each case
is (kernel factory, numpy reference). A kernel takes global pointers, so the same compiled
function runs on any arrays: on the CPU it is compiled with placeholder addresses."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from cute_sort_tiles import NUMBERS, DeviceArray, pointer, sort_tiles  # noqa: E402

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402

from coopgen import TempStorage, block, warp  # noqa: E402

GRID = 3
__all__ = ["DeviceArray", "pointer", "sort_tiles", "CASES", "everything", "kernel_with",
           "misuse"]


def host(kernel, T, threads, tile: int, n_in: int, n_out: int):
    """A ``@cute.jit`` launching ``kernel`` on GRID blocks of ``threads`` (a number, or a
    block shape), with the input, the output and a second output as global tensors of n_in,
    n_out and n_in items of ``T`` (cute.recast_tensor: a tensor made from a pointer has its
    MLIR element type, which has no sign, so a Uint32 pointer's would read as Int32)."""
    shape = (threads, 1, 1) if isinstance(threads, int) else tuple(threads)

    @cute.jit
    def launch(x: cute.Pointer, y: cute.Pointer, z: cute.Pointer):
        tx = cute.recast_tensor(cute.make_tensor(x, cute.make_layout(n_in)), T)
        ty = cute.recast_tensor(cute.make_tensor(y, cute.make_layout(n_out)), T)
        tz = cute.recast_tensor(cute.make_tensor(z, cute.make_layout(n_in)), T)
        kernel(tx, ty, tz).launch(grid=(GRID, 1, 1), block=shape)
    return launch


def kernel_with(body, threads=(128, 1, 1)):
    """A launch of one block of ``threads`` running ``body(x)``, x a global int32 tensor of 512
    items (the misuse tests' kernels)."""
    @cute.kernel
    def kernel(x: cute.Tensor):
        body(x)

    @cute.jit
    def launch(p: cute.Pointer):
        kernel(cute.make_tensor(p, cute.make_layout(512))).launch(grid=(1, 1, 1), block=threads)
    return launch


def misuse(body, threads=(128, 1, 1)) -> str:
    """The error compiling ``kernel_with(body)`` raises (it must raise one)."""
    import pytest
    with pytest.raises(Exception) as info:
        cute.compile(kernel_with(body, threads), pointer(np.int32))
    return str(info.value)


def everything(dtype, threads: int = 128, items: int = 4):
    """One kernel calling every primitive coopgen.cute binds first-class: block load, radix and
    merge sorts, sum, reduce, scans, exchange and store on register fragments and shared
    tensors, and warp sums, reductions and scans of one item. (One kernel: one clang compile.)"""
    T = NUMBERS[np.dtype(dtype).type]
    tile = threads * items

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor, z: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        src = cute.local_tile(x, (tile,), (bid,))
        dst = cute.local_tile(y, (tile,), (bid,))
        smem = cutlass.memory.SmemAllocator()
        shared = smem.allocate_tensor(T, cute.make_layout(tile), 16)
        a = cute.make_rmem_tensor(items, T)
        block.load(src, a, algorithm="warp_transpose")
        block.radix_sort_keys(a)
        block.store(shared, a)
        b = cute.make_rmem_tensor(items, T)
        block.load(shared, b)
        block.merge_sort_keys(b, compare_op="<")
        block.exchange(b, block_exchange_type="blocked_to_striped")
        block.exchange(b, block_exchange_type="striped_to_blocked")
        total = block.sum(b)
        big = block.reduce(b, binary_op="max")
        block.exclusive_sum(b, b)
        block.inclusive_scan(b, b, scan_op="max")
        block.store(dst, b)
        lane = warp.sum(b[0])
        top = warp.reduce(b[0], "max")
        pre = warp.inclusive_sum(b[0])
        z[bid * threads + tid] = lane + top + pre
        if tid == 0:
            z[bid * threads] = total + big

    return host(kernel, T, threads, tile, GRID * tile, GRID * tile)


def sort_and_sum(dtype, threads: int, items: int):
    """The README's tile sort (examples/cute_sort_tiles.py): sums in z's first GRID items."""
    def want(x):
        tiles = x.reshape(GRID, -1)
        sums = np.zeros(GRID * threads, x.dtype)
        sums[:GRID] = tiles.sum(axis=1, dtype=x.dtype)
        return np.sort(tiles, axis=1).reshape(-1), sums

    return sort_tiles(dtype, threads, items, GRID), want


def scans(dtype, threads: int, items: int):
    """Exclusive sum and inclusive max scan of each block's tile, blocked arrangement."""
    T = NUMBERS[np.dtype(dtype).type]
    tile = threads * items

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor, z: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        a = cute.make_rmem_tensor(items, T)
        b = cute.make_rmem_tensor(items, T)
        block.load(cute.local_tile(x, (tile,), (bid,)), a)
        for i in range(items):
            b[i] = a[i]
        block.exclusive_sum(a, a)
        block.inclusive_scan(b, b, scan_op="max")
        for i in range(items):
            a[i] = a[i] + b[i]
        block.store(cute.local_tile(y, (tile,), (bid,)), a)

    def want(x):
        tiles = x.reshape(GRID, tile)
        excl = np.cumsum(tiles, axis=1, dtype=x.dtype) - tiles
        return (excl + np.maximum.accumulate(tiles, axis=1)).reshape(-1), None

    return host(kernel, T, threads, tile, GRID * tile, GRID * tile), want


def merge_sort_shared(dtype, threads: int, items: int):
    """Merge sort of each tile, stored to shared memory then copied out by each thread."""
    T = NUMBERS[np.dtype(dtype).type]
    tile = threads * items

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor, z: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        shared = smem.allocate_tensor(T, cute.make_layout(tile), 16)
        keys = cute.make_rmem_tensor(items, T)
        block.load(cute.local_tile(x, (tile,), (bid,)), keys)
        block.merge_sort_keys(keys, compare_op="<")
        block.store(shared, keys)
        cute.arch.barrier()
        dst = cute.local_tile(y, (tile,), (bid,))
        for i in range(items):
            dst[i * threads + tid] = shared[i * threads + tid]

    def want(x):
        return np.sort(x.reshape(GRID, tile), axis=1).reshape(-1), None

    return host(kernel, T, threads, tile, GRID * tile, GRID * tile), want


def warp_reductions(dtype, threads: int, items: int):
    """Per thread: its warp's sum (lane 0), the warp's max (lane 0) and its inclusive sum."""
    T = NUMBERS[np.dtype(dtype).type]
    tile = threads * items

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor, z: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        v = x[bid * threads + tid]
        s = warp.sum(v)
        m = warp.reduce(v, "max")
        p = warp.inclusive_sum(v)
        y[(bid * threads + tid) * 3] = T(0)
        y[(bid * threads + tid) * 3 + 1] = T(0)
        if tid % 32 == 0:  # valid in lane 0
            y[(bid * threads + tid) * 3] = s
            y[(bid * threads + tid) * 3 + 1] = m
        y[(bid * threads + tid) * 3 + 2] = p

    def want(x):
        v = x[:GRID * threads].reshape(-1, 32)
        out = np.zeros((v.shape[0], 32, 3), x.dtype)
        out[:, 0, 0] = v.sum(axis=1, dtype=x.dtype)
        out[:, 0, 1] = v.max(axis=1)
        out[:, :, 2] = np.cumsum(v, axis=1, dtype=x.dtype)
        return out.reshape(-1), None

    return host(kernel, T, threads, tile, GRID * tile, GRID * threads * 3), want


def descending(a, b):
    return a > b


def python_operators(dtype, threads: int, items: int):
    """Python operators: a descending merge sort, an inclusive max scan (cutlass.max), a block
    sum (a lambda) and a warp max, of each tile."""
    T = NUMBERS[np.dtype(dtype).type]
    tile = threads * items

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor, z: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        keys = cute.make_rmem_tensor(items, T)
        block.load(cute.local_tile(x, (tile,), (bid,)), keys)
        total = block.reduce(keys, binary_op=lambda a, b: a + b)
        top = warp.reduce(keys[0], lambda a, b: cutlass.max(a, b))
        block.merge_sort_keys(keys, compare_op=descending)
        block.inclusive_scan(keys, keys, scan_op=lambda a, b: cutlass.min(a, b))
        block.store(cute.local_tile(y, (tile,), (bid,)), keys)
        z[bid * threads + tid] = T(0)
        if tid % 32 == 0:  # valid in lane 0
            z[bid * threads + tid] = top
        if tid == 0:
            z[bid * threads] = total

    def want(x):
        tiles = x.reshape(GRID, tile)
        down = np.sort(tiles, axis=1)[:, ::-1]  # (not -sort(-x): unsigned 0 negates to 0)
        firsts = x.reshape(GRID, threads, items)[:, :, 0].reshape(GRID, -1, 32)
        z = np.zeros((GRID, threads), x.dtype)
        z[:, ::32] = firsts.max(axis=2)
        z[:, 0] = tiles.sum(axis=1, dtype=x.dtype)
        return np.minimum.accumulate(down, axis=1).reshape(-1), z.reshape(-1)

    return host(kernel, T, threads, tile, GRID * tile, GRID * tile), want


def histogram(dtype, threads: int, items: int, bins: int = 64):
    """Each block's histogram of its tile's items (values below ``bins``) in shared memory:
    one-shot (BlockHistogram.Histogram), and as an object made in the kernel
    (``block.histogram``: init, then composite twice); the tile then sorted by a BlockRadixSort
    object (the faithful constructor) into x's tile."""
    T = NUMBERS[np.dtype(dtype).type]
    tile = threads * items

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor, z: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        once = smem.allocate_tensor(cutlass.Uint32, cute.make_layout(bins), 16)
        twice = smem.allocate_tensor(cutlass.Uint32, cute.make_layout(bins), 16)
        keys = cute.make_rmem_tensor(items, T)
        block.load(cute.local_tile(x, (tile,), (bid,)), keys)
        block.BlockHistogram.Histogram(keys, once)
        h = block.histogram(keys, twice)
        h.init()
        cute.arch.barrier()
        h.composite(keys)
        cute.arch.barrier()
        h.composite(keys)
        cute.arch.barrier()
        sorter = block.BlockRadixSort(dtype=T, items_per_thread=items)
        sorter.Sort(keys)
        block.store(cute.local_tile(z, (tile,), (bid,)), keys)
        if tid < bins:
            y[bid * 2 * bins + tid] = T(once[tid])
            y[bid * 2 * bins + bins + tid] = T(twice[tid])

    def want(x):
        out = np.zeros(GRID * tile, x.dtype)
        for g, t in enumerate(x.reshape(GRID, tile)):
            counts = np.bincount(t.astype(np.int64) % bins, minlength=bins).astype(x.dtype)
            out[g * 2 * bins:(g * 2 + 1) * bins] = counts
            out[(g * 2 + 1) * bins:(g * 2 + 2) * bins] = 2 * counts
        return out, np.sort(x.reshape(GRID, tile), axis=1).reshape(-1)

    return host(kernel, T, threads, tile, GRID * tile, GRID * tile), want


#: The 2-D and 3-D block shape of each thread count the GPU tests use (partial_tiles).
BLOCK_SHAPES = {128: (32, 4, 1), 256: (8, 8, 4)}


def valid_items(tile: int) -> np.ndarray:
    """Each block's valid items in partial_tiles: a partial tile, less in each later block."""
    return np.array([tile - 1 - g * (tile // GRID) for g in range(GRID)])


def partial_tiles(dtype, threads: int, items: int):
    """Partial tiles on a 2-D or 3-D block (its shape from the launch, BLOCK_SHAPES): each
    block loads its tile's first ``valid_items`` items (the rest the default, 0), sums them,
    stores them back (the items past ``valid_items`` untouched) and, from one item per thread,
    reduces the first ``valid_items // items`` threads' items with max (num_valid)."""
    T = NUMBERS[np.dtype(dtype).type]
    shape = BLOCK_SHAPES[threads]
    tile = threads * items

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor, z: cute.Tensor):
        tx, ty, tz = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        tid = tx + shape[0] * (ty + shape[1] * tz)
        n = tile - 1 - bid * (tile // GRID)
        keys = cute.make_rmem_tensor(items, T)
        block.load(cute.local_tile(x, (tile,), (bid,)), keys, block_items_end=n, oob_default=T(0))
        total = block.sum(keys)
        block.store(cute.local_tile(y, (tile,), (bid,)), keys, valid_items=n)
        top = block.reduce(keys[0], binary_op="max", num_valid=n // items)
        if tid == 0:  # (z starts as zeros)
            z[bid * threads] = total
            z[bid * threads + 1] = top

    def want(x):
        tiles = x.reshape(GRID, tile)
        y = np.zeros_like(tiles)
        z = np.zeros((GRID, threads), x.dtype)
        for g, n in enumerate(valid_items(tile)):
            y[g, :n] = tiles[g, :n]
            z[g, 0] = tiles[g, :n].sum(dtype=x.dtype)
            z[g, 1] = tiles[g, :n // items * items:items].max()  # each thread's first item
        return y.reshape(-1), z.reshape(-1)

    return host(kernel, T, shape, tile, GRID * tile, GRID * tile), want


STORAGE = TempStorage()


def explicit_storage(dtype, threads: int, items: int):
    """Temp storage given explicitly: a shared byte tensor for the load, of the bytes its
    TempStorage needs (a tile of items, plus padding where CUB pads its exchange), a
    coopgen.TempStorage shared by a sum and a max reduction (thread 0 writes sum + max)."""
    T = NUMBERS[np.dtype(dtype).type]
    tile = threads * items
    load_bytes = block.load(dtype, threads, items, "warp_transpose").temp_storage_bytes

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor, z: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        smem = cutlass.memory.SmemAllocator()
        raw = smem.allocate_tensor(cutlass.Uint8, cute.make_layout(load_bytes), 16)
        keys = cute.make_rmem_tensor(items, T)
        block.load(cute.local_tile(x, (tile,), (bid,)), keys, algorithm="warp_transpose",
                   temp_storage=raw)
        total = block.sum(keys, temp_storage=STORAGE)
        top = block.reduce(keys, binary_op="max", temp_storage=STORAGE)
        block.store(cute.local_tile(y, (tile,), (bid,)), keys)
        if tid == 0:
            z[bid * threads] = total + top

    def want(x):
        tiles = x.reshape(GRID, tile)
        z = np.zeros((GRID, threads), x.dtype)
        z[:, 0] = tiles.sum(axis=1, dtype=x.dtype) + tiles.max(axis=1)
        return x, z.reshape(-1)

    return host(kernel, T, threads, tile, GRID * tile, GRID * tile), want


CASES = {"explicit_storage": explicit_storage, "histogram": histogram,
         "python_operators": python_operators, "sort_and_sum": sort_and_sum, "scans": scans,
         "merge_sort_shared": merge_sort_shared, "warp_reductions": warp_reductions,
         "partial_tiles": partial_tiles}
