"""User-defined types: numpy structured dtypes through load/store, reduce, scan, merge sort,
shuffle and warp reduce, with Python operators (record results go to an output argument)."""
import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local, warp

pytestmark = pytest.mark.gpu

REC = np.dtype([("a", np.int32), ("b", np.float32)], align=True)
T, IPT = 64, 4
N = T * IPT


@cuda.jit(device=True)
def add_rec(x, y, out):
    out.a = x.a + y.a
    out.b = x.b + y.b


@cuda.jit(device=True)
def less_a(x, y):
    return x.a < y.a


@cuda.jit
def udt_kernel(d_in, d_scan, d_sorted, d_prev, d_totals):
    items = local.array(IPT, REC)
    out = local.array(IPT, REC)
    block.load(d_in, items, algorithm="warp_transpose")
    total = block.reduce(items, binary_op=add_rec)
    block.inclusive_scan(items, out, scan_op=add_rec)
    block.store(d_scan, out, algorithm="warp_transpose")
    prev = local.array(IPT, REC)
    block.shuffle(items, prev, block_shuffle_type="Up")
    t = cuda.threadIdx.x
    for i in range(IPT):
        d_prev[t * IPT + i] = prev[i]
    block.stable_merge_sort_keys(items, compare_op=less_a)
    for i in range(IPT):
        d_sorted[t * IPT + i] = items[i]
    w = warp.reduce(items[0], add_rec)
    if t == 0:
        d_totals[0] = total
    if t % 32 == 0:
        d_totals[1 + t // 32] = w


def test_records_through_primitives():
    rng = np.random.default_rng()
    x = np.empty(N, REC)
    x["a"] = rng.integers(-50, 50, N)
    x["b"] = rng.standard_normal(N).astype(np.float32)
    d_scan, d_sorted, d_prev = (cuda.device_array(N, REC) for _ in range(3))
    d_totals = cuda.device_array(1 + T // 32, REC)
    udt_kernel[1, T](cuda.to_device(x), d_scan, d_sorted, d_prev, d_totals)
    scan, srt, prev, totals = (a.copy_to_host() for a in (d_scan, d_sorted, d_prev, d_totals))
    assert totals[0]["a"] == x["a"].sum()
    np.testing.assert_allclose(totals[0]["b"], x["b"].sum(dtype=np.float64), rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(scan["a"], np.cumsum(x["a"]))
    np.testing.assert_allclose(scan["b"], np.cumsum(x["b"].astype(np.float64)), rtol=1e-4, atol=1e-3)
    # shuffle up: thread t's items shifted by one position in blocked order (item 0 of
    # thread 0 keeps what it had)
    np.testing.assert_array_equal(prev["a"][1:], x["a"][:-1])
    order = np.argsort(x["a"], kind="stable")
    np.testing.assert_array_equal(srt["a"], x["a"][order])
    np.testing.assert_array_equal(srt["b"], x["b"][order])
    firsts = srt["a"].reshape(T, IPT)[:, 0]
    for w in range(T // 32):
        assert totals[1 + w]["a"] == firsts[w * 32:(w + 1) * 32].sum()
