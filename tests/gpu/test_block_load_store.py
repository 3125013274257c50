"""BlockLoad / BlockStore: every algorithm, the arrangement each one gives, full and partial
tiles (valid_items, oob_default), full dtype sweep on the main path."""
import functools

import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local
from gpu_util import (ALL_DTYPES, BLOCKS, SMEM_LIMIT, block_id, dtype_id, launch, nthreads,
                      random, rng_for, to_device, to_host)

pytestmark = pytest.mark.gpu

ALGORITHMS = ("direct", "striped", "vectorize", "transpose", "warp_transpose",
              "warp_transpose_timesliced")
STRIPED = ("striped",)  # algorithms that leave a striped arrangement in the threads
GRID = 2


@functools.lru_cache(maxsize=None)
def roundtrip_kernel(ipt, algorithm):
    """Load a tile with ``algorithm``, dump the registers (thread-major), store with it."""
    @cuda.jit
    def k(d_in, d_regs, d_out):
        items = local.array(ipt, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        tile = cuda.blockIdx.x * (cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z) * ipt
        block.load(d_in[tile:], items, algorithm=algorithm)
        for i in range(ipt):
            d_regs[tile + t * ipt + i] = items[i]
        block.store(d_out[tile:], items, algorithm=algorithm)
    return k


def _registers(x_tile, nt, ipt, algorithm):
    """What thread t holds in item i after a load of ``x_tile`` (thread-major [nt, ipt])."""
    if algorithm in STRIPED:
        return x_tile.reshape(ipt, nt).T
    return x_tile.reshape(nt, ipt)


def _smem(nt, ipt, dtype, algorithm):
    if algorithm in ("transpose", "warp_transpose"):
        return nt * ipt * np.dtype(dtype).itemsize
    return 0


ROUNDTRIP_CASES = (
    [(dt, 128, 4, "warp_transpose") for dt in ALL_DTYPES]
    + [(dt, 128, 4, a) for a in ALGORITHMS for dt in (np.int32, np.float64, np.uint8)
       if a != "warp_transpose"]
    + [(np.int32, b, ipt, a) for b in BLOCKS for ipt in (1, 16)
       for a in ("warp_transpose", "striped", "vectorize")]
    + [(np.int16, 1024, 4, "transpose"), (np.float32, (4, 8, 8), 4, "warp_transpose_timesliced"),
       (np.int64, (16, 8), 4, "direct")])
ROUNDTRIP_CASES = [c for c in ROUNDTRIP_CASES if _smem(nthreads(c[1]), c[2], c[0], c[3]) <= SMEM_LIMIT]


@pytest.mark.parametrize("dtype,blk,ipt,algorithm", ROUNDTRIP_CASES,
                         ids=[f"{a}-{dtype_id(d)}-{block_id(b)}-ipt{i}" for d, b, i, a in ROUNDTRIP_CASES])
def test_load_arrangement_and_store_roundtrip(dtype, blk, ipt, algorithm):
    nt = nthreads(blk)
    x = random(dtype, GRID * nt * ipt, rng_for("roundtrip", dtype_id(dtype), blk, ipt, algorithm))
    d_regs, d_out = to_device(np.zeros_like(x)), to_device(np.zeros_like(x))
    launch(roundtrip_kernel(ipt, algorithm), GRID, blk, to_device(x), d_regs, d_out)
    np.testing.assert_array_equal(to_host(d_out), x)
    regs = to_host(d_regs).reshape(GRID, nt, ipt)
    for g in range(GRID):
        tile = x.reshape(GRID, -1)[g]
        np.testing.assert_array_equal(regs[g], _registers(tile, nt, ipt, algorithm))


@functools.lru_cache(maxsize=None)
def partial_kernel(algorithm):
    """Partial tiles: Load(valid), Load(valid, oob_default), Store(valid)."""
    @cuda.jit
    def k(d_in, d_regs, d_regs_oob, d_out, valid, oob):
        items = local.array(4, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        for i in range(4):
            items[i] = oob  # Load(valid) leaves out-of-range items as they were
        block.load(d_in, items, num_valid_items=valid, algorithm=algorithm)
        for i in range(4):
            d_regs[t * 4 + i] = items[i]
        block.BlockLoad.Load(d_in, items, valid, oob, algorithm=algorithm)
        for i in range(4):
            d_regs_oob[t * 4 + i] = items[i]
        block.store(d_out, items, num_valid_items=valid, algorithm=algorithm)
    return k


PARTIAL_CASES = ([(np.int32, 128, a) for a in ALGORITHMS]
                 + [(np.float64, (16, 8), "warp_transpose"), (np.uint8, 256, "striped"),
                    (np.int64, 32, "transpose")])


@pytest.mark.parametrize("dtype,blk,algorithm", PARTIAL_CASES,
                         ids=[f"{a}-{dtype_id(d)}-{block_id(b)}" for d, b, a in PARTIAL_CASES])
def test_partial_tiles(dtype, blk, algorithm):
    nt = nthreads(blk)
    n = nt * 4
    rng = rng_for("partial", dtype_id(dtype), blk, algorithm)
    x = random(dtype, n, rng)
    valid = int(rng.integers(1, n - 1))
    oob = dtype(7)
    sentinel = np.full(n, 3, dtype)
    d_regs, d_regs_oob = to_device(np.zeros_like(x)), to_device(np.zeros_like(x))
    d_out = to_device(sentinel.copy())
    launch(partial_kernel(algorithm), 1, blk, to_device(x), d_regs, d_regs_oob, d_out, valid, oob)
    # Position p of the tile as seen in the registers (thread-major).
    pos = _registers(np.arange(n), nt, 4, algorithm).reshape(-1)
    want = np.where(pos < valid, x[np.minimum(pos, n - 1)], oob)
    np.testing.assert_array_equal(to_host(d_regs), want)
    np.testing.assert_array_equal(to_host(d_regs_oob), want)
    out = to_host(d_out)
    np.testing.assert_array_equal(out[:valid], x[:valid])
    np.testing.assert_array_equal(out[valid:], sentinel[valid:])


BENCH_ITEMS = 16


@functools.lru_cache(maxsize=None)
def mixed_kernel():
    """Load striped, store blocked with warp_transpose: a permutation numpy can predict."""
    @cuda.jit
    def k(d_in, d_out):
        items = local.array(4, d_in.dtype)
        tile = cuda.blockIdx.x * cuda.blockDim.x * 4
        block.load(d_in[tile:], items, algorithm="striped")
        block.store(d_out[tile:], items, algorithm="warp_transpose")
    return k


@pytest.mark.parametrize("dtype", [np.int32, np.float32], ids=dtype_id)
def test_striped_load_blocked_store(dtype):
    x = random(dtype, GRID * 128 * 4, rng_for("mixed", dtype_id(dtype)))
    d_out = to_device(np.zeros_like(x))
    launch(mixed_kernel(), GRID, 128, to_device(x), d_out)
    want = np.concatenate([t.reshape(4, 128).T.reshape(-1) for t in x.reshape(GRID, -1)])
    np.testing.assert_array_equal(to_host(d_out), want)
