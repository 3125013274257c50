"""BlockScan: every ExclusiveSum / InclusiveSum / ExclusiveScan / InclusiveScan overload (array
and scalar, aggregates, initial values, prefix callbacks), every algorithm, full dtype sweep."""
import functools

import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local
from gpu_util import (ALL_DTYPES, BLOCKS, assert_sums_equal, block_id, dtype_id, dtype_min,
                      exclusive, launch, nthreads, random, rng_for, to_device, to_host,
                      wrap_cumsum, wrap_sum)

pytestmark = pytest.mark.gpu

ALGORITHMS = ("raking", "raking_memoize", "warp_scans")
GRID = 2


@functools.lru_cache(maxsize=None)
def sums_kernel(ipt):
    """exclusive_sum and inclusive_sum of a blocked tile, aggregate into a 1-element array."""
    @cuda.jit
    def k(d_in, d_ex, d_inc, d_agg):
        items = local.array(ipt, d_in.dtype)
        ex = local.array(ipt, d_in.dtype)
        inc = local.array(ipt, d_in.dtype)
        agg = local.array(1, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        base = cuda.blockIdx.x * (cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z) * ipt + t * ipt
        for i in range(ipt):
            items[i] = d_in[base + i]
        block.exclusive_sum(items, ex)
        block.inclusive_sum(items, inc, block_aggregate=agg)
        for i in range(ipt):
            d_ex[base + i] = ex[i]
            d_inc[base + i] = inc[i]
        d_agg[base // ipt] = agg[0]
    return k


SUM_CASES = ([(dt, 128, 4) for dt in ALL_DTYPES]
             + [(np.int32, b, ipt) for b in BLOCKS for ipt in (1, 16)
                if nthreads(b) * ipt < 1024 * 16]  # 1024 x 16: out of registers at launch
             + [(np.float32, (4, 8, 8), 4), (np.uint16, 1024, 4)])


@pytest.mark.parametrize("dtype,blk,ipt", SUM_CASES,
                         ids=[f"{dtype_id(d)}-{block_id(b)}-ipt{i}" for d, b, i in SUM_CASES])
def test_exclusive_and_inclusive_sum(dtype, blk, ipt):
    nt = nthreads(blk)
    x = random(dtype, GRID * nt * ipt, rng_for("sums", dtype_id(dtype), blk, ipt))
    d_ex, d_inc = to_device(np.zeros_like(x)), to_device(np.zeros_like(x))
    d_agg = to_device(np.zeros(GRID * nt, dtype))
    launch(sums_kernel(ipt), GRID, blk, to_device(x), d_ex, d_inc, d_agg)
    tiles = x.reshape(GRID, -1)
    inc = wrap_cumsum(tiles, dtype, axis=1)
    n = nt * ipt
    assert_sums_equal(to_host(d_inc).reshape(GRID, -1), inc, dtype, x, n)
    assert_sums_equal(to_host(d_ex).reshape(GRID, -1), exclusive(inc, 0), dtype, x, n)
    aggs = np.repeat(wrap_sum(tiles, dtype, axis=1), nt).reshape(GRID, nt)
    assert_sums_equal(to_host(d_agg).reshape(GRID, nt), aggs, dtype, x, n)


NOUT = 13  # array results per thread item below


@functools.lru_cache(maxsize=None)
def array_overloads_kernel(algorithm):
    """Every array overload without a callback, each into its own slot of d_out."""
    @cuda.jit
    def k(d_in, d_out, d_agg, init):
        items = local.array(4, d_in.dtype)
        o = local.array(4, d_in.dtype)
        a = local.array(1, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        nt = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z
        for i in range(4):
            items[i] = d_in[t * 4 + i]
        for s in range(9):
            if s == 0:
                block.BlockScan.ExclusiveSum(items, o, algorithm=algorithm)
            elif s == 1:
                block.exclusive_sum(items, o, block_aggregate=a, algorithm=algorithm)
            elif s == 2:
                block.inclusive_sum(items, o, algorithm=algorithm)
            elif s == 3:
                block.exclusive_scan(items, o, scan_op="max", initial_value=init,
                                     algorithm=algorithm)
            elif s == 4:
                block.exclusive_scan(items, o, scan_op="max", initial_value=init,
                                     block_aggregate=a, algorithm=algorithm)
            elif s == 5:
                block.inclusive_scan(items, o, scan_op="max", algorithm=algorithm)
            elif s == 6:
                block.inclusive_scan(items, o, scan_op="max", initial_value=init,
                                     algorithm=algorithm)
            elif s == 7:
                block.inclusive_scan(items, o, scan_op="min", block_aggregate=a,
                                     algorithm=algorithm)
            else:
                block.BlockScan.InclusiveScan(items, o, init, "max", a, algorithm=algorithm)
            for i in range(4):
                d_out[(s * nt + t) * 4 + i] = o[i]
            d_agg[s * nt + t] = a[0]
    return k


ALGO_CASES = ([(a, dt, 128) for a in ALGORITHMS for dt in (np.int32, np.float64, np.uint8)]
              + [(a, np.int64, (16, 8)) for a in ALGORITHMS] + [("warp_scans", np.float32, (4, 8, 8))])


@pytest.mark.parametrize("algorithm,dtype,blk", ALGO_CASES,
                         ids=[f"{a}-{dtype_id(d)}-{block_id(b)}" for a, d, b in ALGO_CASES])
def test_array_overloads(algorithm, dtype, blk):
    nt = nthreads(blk)
    rng = rng_for("scan-array", algorithm, dtype_id(dtype), blk)
    x = random(dtype, nt * 4, rng)
    init = random(dtype, 1, rng)[0]
    d_out = to_device(np.zeros(9 * nt * 4, dtype))
    d_agg = to_device(np.zeros(9 * nt, dtype))
    launch(array_overloads_kernel(algorithm), 1, blk, to_device(x), d_out, d_agg, init)
    out = to_host(d_out).reshape(9, -1)
    agg = to_host(d_agg).reshape(9, nt)
    n = nt * 4
    inc = wrap_cumsum(x, dtype)
    assert_sums_equal(out[0], exclusive(inc, 0), dtype, x, n)
    assert_sums_equal(out[1], exclusive(inc, 0), dtype, x, n)
    assert_sums_equal(agg[1], np.full(nt, wrap_sum(x, dtype)), dtype, x, n)
    assert_sums_equal(out[2], inc, dtype, x, n)
    runmax = np.maximum.accumulate(x)
    runmax_init = np.maximum.accumulate(np.maximum(x, init))
    np.testing.assert_array_equal(out[3], exclusive(runmax_init, init))
    np.testing.assert_array_equal(out[4], exclusive(runmax_init, init))
    np.testing.assert_array_equal(agg[4], np.full(nt, x.max()))  # aggregate excludes init
    np.testing.assert_array_equal(out[5], runmax)
    np.testing.assert_array_equal(out[6], runmax_init)
    np.testing.assert_array_equal(out[7], np.minimum.accumulate(x))
    np.testing.assert_array_equal(agg[7], np.full(nt, x.min()))
    np.testing.assert_array_equal(out[8], runmax_init)
    np.testing.assert_array_equal(agg[8], np.full(nt, x.max()))


@functools.lru_cache(maxsize=None)
def scalar_overloads_kernel(algorithm):
    """Every scalar overload without a callback; omitted outputs come back as return values."""
    @cuda.jit
    def k(d_in, d_out, init):
        a = local.array(1, d_in.dtype)
        o = local.array(1, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        nt = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z
        x = d_in[t]
        r0 = block.exclusive_sum(x, algorithm=algorithm)
        block.exclusive_sum(x, o, block_aggregate=a, algorithm=algorithm)
        r1, r2 = o[0], a[0]
        r3 = block.inclusive_sum(x, algorithm=algorithm)
        block.BlockScan.InclusiveSum(x, o, a, algorithm=algorithm)
        r4, r5 = o[0], a[0]
        r6 = block.exclusive_scan(x, scan_op="max", initial_value=init, algorithm=algorithm)
        block.exclusive_scan(x, o, scan_op="max", initial_value=init, block_aggregate=a,
                             algorithm=algorithm)
        r7, r8 = o[0], a[0]
        r9 = block.inclusive_scan(x, scan_op="min", algorithm=algorithm)
        block.inclusive_scan(x, o, scan_op="max", block_aggregate=a, algorithm=algorithm)
        r10, r11 = o[0], a[0]
        res = (r0, r1, r2, r3, r4, r5, r6, r7, r8, r9, r10, r11)
        for s in range(12):
            d_out[s * nt + t] = res[s]
    return k


SCALAR_CASES = ([(a, np.int32, 128) for a in ALGORITHMS]
                + [("warp_scans", dt, 256) for dt in (np.int8, np.uint64, np.float32)]
                + [("raking", np.float64, (16, 8))])


@pytest.mark.parametrize("algorithm,dtype,blk", SCALAR_CASES,
                         ids=[f"{a}-{dtype_id(d)}-{block_id(b)}" for a, d, b in SCALAR_CASES])
def test_scalar_overloads(algorithm, dtype, blk):
    nt = nthreads(blk)
    rng = rng_for("scan-scalar", algorithm, dtype_id(dtype), blk)
    x = random(dtype, nt, rng)
    init = random(dtype, 1, rng)[0]
    d_out = to_device(np.zeros(12 * nt, dtype))
    launch(scalar_overloads_kernel(algorithm), 1, blk, to_device(x), d_out, init)
    r = to_host(d_out).reshape(12, nt)
    inc = wrap_cumsum(x, dtype)
    total = np.full(nt, wrap_sum(x, dtype))
    for row in (0, 1):
        assert_sums_equal(r[row], exclusive(inc, 0), dtype, x, nt)
    for row in (3, 4):
        assert_sums_equal(r[row], inc, dtype, x, nt)
    for row in (2, 5):
        assert_sums_equal(r[row], total, dtype, x, nt)
    runmax_init = np.maximum.accumulate(np.maximum(x, init))
    np.testing.assert_array_equal(r[6], exclusive(runmax_init, init))
    np.testing.assert_array_equal(r[7], exclusive(runmax_init, init))
    np.testing.assert_array_equal(r[8], np.full(nt, x.max()))
    np.testing.assert_array_equal(r[9], np.minimum.accumulate(x))
    np.testing.assert_array_equal(r[10], np.maximum.accumulate(x))
    np.testing.assert_array_equal(r[11], np.full(nt, x.max()))


@cuda.jit(device=True)
def running_sum(state, block_aggregate):
    old = state[0]
    state[0] = old + block_aggregate
    return old


@cuda.jit(device=True)
def running_max(state, block_aggregate):
    old = state[0]
    state[0] = max(old, block_aggregate)
    return old


TILES = 3


@functools.lru_cache(maxsize=None)
def callback_kernel(algorithm):
    """Several consecutive tiles per block; a prefix callback carries the running total."""
    @cuda.jit
    def k(d_in, d_out, lowest):
        items = local.array(4, d_in.dtype)
        o = local.array(4, d_in.dtype)
        st = local.array(1, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        nt = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z
        n = nt * 4 * TILES
        for s in range(8):
            st[0] = lowest if (s == 3 or s == 7) else 0
            for tile in range(TILES):
                base = tile * nt * 4
                for i in range(4):
                    items[i] = d_in[base + t * 4 + i]
                x = d_in[base + t]
                if s == 0:
                    block.exclusive_sum(items, o, prefix_op=(running_sum, st), algorithm=algorithm)
                elif s == 1:
                    block.inclusive_sum(items, o, prefix_op=(running_sum, st), algorithm=algorithm)
                elif s == 2:
                    block.BlockScan.ExclusiveScan(items, o, "+", (running_sum, st), algorithm=algorithm)
                elif s == 3:
                    block.inclusive_scan(items, o, scan_op="max", prefix_op=(running_max, st),
                                         algorithm=algorithm)
                elif s == 4:
                    o[0] = block.exclusive_sum(x, prefix_op=(running_sum, st), algorithm=algorithm)
                elif s == 5:
                    o[0] = block.inclusive_sum(x, prefix_op=(running_sum, st), algorithm=algorithm)
                elif s == 6:
                    block.inclusive_scan(x, o, scan_op="+", prefix_op=(running_sum, st),
                                         algorithm=algorithm)
                else:
                    block.exclusive_scan(x, o, scan_op="max", prefix_op=(running_max, st),
                                         algorithm=algorithm)
                if s < 4:
                    for i in range(4):
                        d_out[s * n + base + t * 4 + i] = o[i]
                else:
                    d_out[s * n + tile * nt + t] = o[0]
    return k


CALLBACK_CASES = ([(a, np.int32, 128) for a in ALGORITHMS]
                  + [("warp_scans", np.float64, 256), ("raking", np.uint32, (16, 8)),
                     ("warp_scans", np.int64, 1024)])


@pytest.mark.parametrize("algorithm,dtype,blk", CALLBACK_CASES,
                         ids=[f"{a}-{dtype_id(d)}-{block_id(b)}" for a, d, b in CALLBACK_CASES])
def test_prefix_callbacks(algorithm, dtype, blk):
    nt = nthreads(blk)
    n = nt * 4 * TILES
    lo = 0 if np.dtype(dtype).kind == "u" else -1000
    x = random(dtype, n, rng_for("callback", algorithm, dtype_id(dtype), blk), lo=lo, hi=1000)
    lowest = dtype_min(dtype) if np.dtype(dtype).kind in "iu" else np.finfo(dtype).min
    d_out = to_device(np.zeros(8 * n, dtype))
    launch(callback_kernel(algorithm), 1, blk, to_device(x), d_out, dtype(lowest))
    r = to_host(d_out).reshape(8, n)
    inc = wrap_cumsum(x, dtype)
    assert_sums_equal(r[0], exclusive(inc, 0), dtype, x, n)
    assert_sums_equal(r[1], inc, dtype, x, n)
    assert_sums_equal(r[2], exclusive(inc, 0), dtype, x, n)
    np.testing.assert_array_equal(r[3], np.maximum.accumulate(x))
    xs = x.reshape(TILES, nt * 4)[:, :nt].reshape(-1)  # the scalar calls scan d_in[base + t]
    incs = wrap_cumsum(xs, dtype)
    m = TILES * nt
    assert_sums_equal(r[4, :m], exclusive(incs, 0), dtype, xs, m)
    assert_sums_equal(r[5, :m], incs, dtype, xs, m)
    assert_sums_equal(r[6, :m], incs, dtype, xs, m)
    np.testing.assert_array_equal(r[7, :m], exclusive(np.maximum.accumulate(xs), lowest))
