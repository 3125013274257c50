"""WarpReduce (Sum, Reduce, valid_items, head/tail segmented) and WarpScan (every sum/scan
overload, initial values, aggregates, Scan, Broadcast) over logical warps of several sizes."""
import functools

import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import local, warp
from gpu_util import (ALL_DTYPES, assert_sums_equal, dtype_id, exclusive, launch, random,
                      rng_for, to_device, to_host, wrap_cumsum, wrap_sum)

pytestmark = pytest.mark.gpu

THREADS = 128


@functools.lru_cache(maxsize=None)
def reduce_kernel(lwt):
    @cuda.jit
    def k(d_in, d_flags, d_out, valid):
        t = cuda.threadIdx.x
        nt = cuda.blockDim.x
        x = d_in[t]
        f = d_flags[t]
        r = (warp.sum(x, logical_warp_threads=lwt),
             warp.sum(x, valid_items=valid, threads_in_warp=lwt),
             warp.reduce(x, "max", logical_warp_threads=lwt),
             warp.WarpReduce.Reduce(x, "min", valid, logical_warp_threads=lwt),
             warp.head_segmented_sum(x, f, logical_warp_threads=lwt),
             warp.tail_segmented_sum(x, f, logical_warp_threads=lwt),
             warp.head_segmented_reduce(x, f, "max", logical_warp_threads=lwt),
             warp.WarpReduce.TailSegmentedReduce(x, f, "max", logical_warp_threads=lwt))
        for s in range(8):
            d_out[s * nt + t] = r[s]
    return k


REDUCE_CASES = [(dt, 32) for dt in ALL_DTYPES] + [(np.int32, 16), (np.float64, 8), (np.uint8, 4),
                                                  (np.int64, 2)]


def _segments(flags_w, head):
    """Segment id per lane of one logical warp, from head or tail flags."""
    if head:
        starts = flags_w.astype(bool).copy()
    else:
        starts = np.concatenate([[False], flags_w[:-1].astype(bool)])
    starts[0] = True
    return np.cumsum(starts) - 1, starts


@pytest.mark.parametrize("dtype,lwt", REDUCE_CASES, ids=[f"{dtype_id(d)}-lwt{l}" for d, l in REDUCE_CASES])
def test_warp_reduce(dtype, lwt):
    rng = rng_for("warp-reduce", dtype_id(dtype), lwt)
    x = random(dtype, THREADS, rng)
    flags = (rng.random(THREADS) < 0.25).astype(np.int32)
    valid = int(rng.integers(1, lwt + 1))
    d_out = to_device(np.zeros(8 * THREADS, dtype))
    launch(reduce_kernel(lwt), 1, THREADS, to_device(x), to_device(flags), d_out, valid)
    got = to_host(d_out).reshape(8, THREADS // lwt, lwt)
    xw, fw = x.reshape(-1, lwt), flags.reshape(-1, lwt)
    assert_sums_equal(got[0, :, 0], wrap_sum(xw, dtype, axis=1), dtype, x, lwt)
    assert_sums_equal(got[1, :, 0], wrap_sum(xw[:, :valid], dtype, axis=1), dtype, x, lwt)
    np.testing.assert_array_equal(got[2, :, 0], xw.max(axis=1))
    np.testing.assert_array_equal(got[3, :, 0], xw[:, :valid].min(axis=1))
    for w in range(THREADS // lwt):
        for s, head, op in ((4, True, "sum"), (5, False, "sum"), (6, True, "max"), (7, False, "max")):
            seg, starts = _segments(fw[w], head)
            for sid in range(seg.max() + 1):
                lane = int(np.flatnonzero(starts)[sid])
                vals = xw[w][seg == sid]
                if op == "sum":
                    assert_sums_equal(got[s, w, lane], wrap_sum(vals, dtype), dtype, x, lwt)
                else:
                    assert got[s, w, lane] == vals.max(), (s, w, lane)


NSCAN = 20


@functools.lru_cache(maxsize=None)
def scan_kernel(lwt):
    @cuda.jit
    def k(d_in, d_out, init, src_lane):
        o = local.array(1, d_in.dtype)
        e = local.array(1, d_in.dtype)
        a = local.array(1, d_in.dtype)
        t = cuda.threadIdx.x
        nt = cuda.blockDim.x
        x = d_in[t]
        r = local.array(NSCAN, d_in.dtype)
        r[0] = warp.inclusive_sum(x, logical_warp_threads=lwt)
        warp.inclusive_sum(x, dst=o, warp_aggregate=a, logical_warp_threads=lwt)
        r[1] = o[0]
        r[2] = a[0]
        r[3] = warp.exclusive_sum(x, logical_warp_threads=lwt)
        warp.WarpScan.ExclusiveSum(x, o, a, logical_warp_threads=lwt)
        r[4] = o[0]
        r[5] = a[0]
        r[6] = warp.inclusive_scan(x, "max", logical_warp_threads=lwt)
        r[7] = warp.inclusive_scan(x, "max", init, logical_warp_threads=lwt)
        warp.inclusive_scan(x, "min", dst=o, warp_aggregate=a, logical_warp_threads=lwt)
        r[8] = o[0]
        r[9] = a[0]
        warp.WarpScan.InclusiveScan(x, o, init, "max", a, logical_warp_threads=lwt)
        r[10] = o[0]
        r[11] = warp.exclusive_scan(x, "max", logical_warp_threads=lwt)
        r[12] = warp.exclusive_scan(x, "max", init, logical_warp_threads=lwt)
        warp.exclusive_scan(x, "max", dst=o, warp_aggregate=a, logical_warp_threads=lwt)
        r[13] = o[0]
        r[14] = a[0]
        warp.exclusive_scan(x, "max", init, dst=o, warp_aggregate=a,
                            logical_warp_threads=lwt)
        r[15] = o[0]
        warp.scan(x, o, e, "max", logical_warp_threads=lwt)
        r[16] = o[0]
        r[17] = e[0]
        warp.WarpScan.Scan(x, o, e, init, "max", logical_warp_threads=lwt)
        r[18] = e[0]
        r[19] = warp.broadcast(x, src_lane, logical_warp_threads=lwt)
        for s in range(NSCAN):
            d_out[s * nt + t] = r[s]
    return k


SCAN_CASES = [(dt, 32) for dt in ALL_DTYPES] + [(np.int32, 16), (np.float32, 8), (np.uint16, 4)]


@pytest.mark.parametrize("dtype,lwt", SCAN_CASES, ids=[f"{dtype_id(d)}-lwt{l}" for d, l in SCAN_CASES])
def test_warp_scan(dtype, lwt):
    rng = rng_for("warp-scan", dtype_id(dtype), lwt)
    x = random(dtype, THREADS, rng)
    init = random(dtype, 1, rng)[0]
    src = int(rng.integers(0, lwt))
    d_out = to_device(np.zeros(NSCAN * THREADS, dtype))
    launch(scan_kernel(lwt), 1, THREADS, to_device(x), d_out, init, np.uint32(src))
    r = to_host(d_out).reshape(NSCAN, -1, lwt)
    xw = x.reshape(-1, lwt)
    inc = wrap_cumsum(xw, dtype, axis=1)
    tot = np.repeat(wrap_sum(xw, dtype, axis=1)[:, None], lwt, axis=1)
    for s in (0, 1):
        assert_sums_equal(r[s], inc, dtype, x, lwt)
    for s in (3, 4):
        assert_sums_equal(r[s], exclusive(inc, 0), dtype, x, lwt)
    for s in (2, 5):
        assert_sums_equal(r[s], tot, dtype, x, lwt)
    runmax = np.maximum.accumulate(xw, axis=1)
    runmax_init = np.maximum.accumulate(np.maximum(xw, init), axis=1)
    wmax = np.repeat(xw.max(axis=1)[:, None], lwt, axis=1)
    eq = np.testing.assert_array_equal
    eq(r[6], runmax)
    eq(r[7], runmax_init)
    eq(r[8], np.minimum.accumulate(xw, axis=1))
    eq(r[9], xw.min(axis=1)[:, None].repeat(lwt, axis=1))
    eq(r[10], runmax_init)
    eq(r[11][:, 1:], runmax[:, :-1])  # lane 0 is undefined without an initial value
    eq(r[12], exclusive(runmax_init, init))
    eq(r[13][:, 1:], runmax[:, :-1])
    eq(r[14], wmax)
    eq(r[15], exclusive(runmax_init, init))
    eq(r[16], runmax)
    eq(r[17][:, 1:], runmax[:, :-1])
    eq(r[18], exclusive(runmax_init, init))
    eq(r[19], xw[:, src][:, None].repeat(lwt, axis=1))
