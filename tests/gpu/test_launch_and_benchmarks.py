"""Launch-configuration specialisation (one kernel, several block shapes), the benchmark-shape
kernels (256 threads x 16 int32) as correctness tests, and two-phase temp storage sizes."""
import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local
from gpu_util import (exclusive, launch, random, rng_for, to_device, to_host)

pytestmark = pytest.mark.gpu


@cuda.jit
def sum_and_scan(d_in, d_sums, d_scan):
    items = local.array(4, np.int32)
    nt = cuda.blockDim.x * cuda.blockDim.y
    t = cuda.threadIdx.x + cuda.blockDim.x * cuda.threadIdx.y
    tile = cuda.blockIdx.x * nt * 4
    block.load(d_in[tile:], items, algorithm="warp_transpose")
    total = block.sum(items)
    block.exclusive_sum(items, items)
    block.store(d_scan[tile:], items, algorithm="warp_transpose")
    if t == 0:
        d_sums[cuda.blockIdx.x] = total


@pytest.mark.parametrize("shapes", [(128, 256, 128), ((16, 8), (8, 16), 64)],
                         ids=["128-256-128", "16x8-8x16-64"])
def test_same_kernel_specialises_per_launch_shape(shapes):
    grid = 3
    for blk in shapes:
        nt = blk if isinstance(blk, int) else blk[0] * blk[1]
        x = random(np.int32, grid * nt * 4, rng_for("launch", shapes, blk), lo=-1000, hi=1000)
        d_sums, d_scan = to_device(np.zeros(grid, np.int32)), to_device(np.zeros_like(x))
        launch(sum_and_scan, grid, blk, to_device(x), d_sums, d_scan)
        tiles = x.reshape(grid, -1)
        np.testing.assert_array_equal(to_host(d_sums), tiles.sum(axis=1), err_msg=str(blk))
        np.testing.assert_array_equal(to_host(d_scan).reshape(grid, -1),
                                      exclusive(np.cumsum(tiles, axis=1, dtype=np.int32), 0),
                                      err_msg=str(blk))


BENCH_THREADS, BENCH_ITEMS, BENCH_GRID = 256, 16, 64
TILE = BENCH_THREADS * BENCH_ITEMS


@cuda.jit
def bench_striped_sum(d_in, d_out):
    items = local.array(BENCH_ITEMS, np.int32)
    block.load(d_in[cuda.blockIdx.x * TILE:], items, algorithm="striped")
    total = block.sum(items)
    if cuda.threadIdx.x == 0:
        d_out[cuda.blockIdx.x] = total


@cuda.jit
def bench_exclusive_sum(d_in, d_out):
    items = local.array(BENCH_ITEMS, np.int32)
    base = cuda.blockIdx.x * TILE
    block.load(d_in[base:], items, algorithm="warp_transpose")
    block.exclusive_sum(items, items)
    block.store(d_out[base:], items, algorithm="warp_transpose")


@cuda.jit
def bench_radix_sort(d_in, d_out):
    items = local.array(BENCH_ITEMS, np.int32)
    base = cuda.blockIdx.x * TILE
    block.load(d_in[base:], items, algorithm="warp_transpose")
    block.radix_sort_keys(items)
    block.store(d_out[base:], items, algorithm="warp_transpose")


def _bench_input(name):
    return random(np.int32, BENCH_GRID * TILE, rng_for("bench", name))


def test_benchmark_striped_load_sum():
    x = _bench_input("sum")
    d_out = to_device(np.zeros(BENCH_GRID, np.int32))
    launch(bench_striped_sum, BENCH_GRID, BENCH_THREADS, to_device(x), d_out)
    np.testing.assert_array_equal(to_host(d_out), x.reshape(BENCH_GRID, -1).sum(axis=1, dtype=np.int32))


def test_benchmark_warp_transpose_exclusive_sum():
    x = _bench_input("scan")
    d_out = to_device(np.zeros_like(x))
    launch(bench_exclusive_sum, BENCH_GRID, BENCH_THREADS, to_device(x), d_out)
    inc = np.cumsum(x.reshape(BENCH_GRID, -1), axis=1, dtype=np.int32)
    np.testing.assert_array_equal(to_host(d_out).reshape(BENCH_GRID, -1), exclusive(inc, 0))


def test_benchmark_warp_transpose_radix_sort():
    x = _bench_input("sort")
    d_out = to_device(np.zeros_like(x))
    launch(bench_radix_sort, BENCH_GRID, BENCH_THREADS, to_device(x), d_out)
    np.testing.assert_array_equal(to_host(d_out).reshape(BENCH_GRID, -1),
                                  np.sort(x.reshape(BENCH_GRID, -1), axis=1))


# DESIGN.md: nvcc's sizeof/alignof of TempStorage for CCCL 3.0.1.
TEMP_STORAGE = [
    (lambda: block.BlockReduce(np.int32, threads_per_block=128), (24, 4)),
    (lambda: block.BlockScan(np.int32, threads_per_block=128), (672, 16)),
    (lambda: block.BlockRadixSort(np.int32, threads_per_block=128, items_per_thread=4), (4640, 16)),
    (lambda: block.BlockRadixSort(np.uint32, threads_per_block=256, items_per_thread=16), (16896, 16)),
    (lambda: block.BlockLoad(np.int32, threads_per_block=128, items_per_thread=4,
                             algorithm="warp_transpose"), (2048, 16)),
]


@pytest.mark.parametrize("make,want", TEMP_STORAGE,
                         ids=["reduce", "scan", "radix128x4", "radix256x16", "load_wt"])
def test_two_phase_temp_storage_sizes(make, want):
    obj = make()
    assert (obj.temp_storage_bytes, obj.temp_storage_alignment) == want
