"""WarpLoad / WarpStore (every algorithm, partial tiles), WarpExchange (both algorithms, every
method) and WarpMergeSort (keys, pairs, stable, partial tiles) over logical warps."""
import functools

import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import local, warp
from gpu_util import (dtype_id, dtype_max, launch, random, rng_for, stable_order, to_device,
                      to_host)

pytestmark = pytest.mark.gpu

THREADS = 128
LOAD_ALGORITHMS = ("direct", "striped", "vectorize", "transpose")


def _per_lane(seg, lwt, ipt, striped):
    """Registers (lane-major [lwt, ipt]) of one logical warp holding ``seg``."""
    return seg.reshape(ipt, lwt).T if striped else seg.reshape(lwt, ipt)


@functools.lru_cache(maxsize=None)
def load_store_kernel(ipt, lwt, algorithm):
    @cuda.jit
    def k(d_in, d_regs, d_regs_p, d_out, d_out_p, valid, oob):
        items = local.array(ipt, d_in.dtype)
        t = cuda.threadIdx.x
        base = (t // lwt) * lwt * ipt
        warp.load(d_in[base:], items, algorithm=algorithm, logical_warp_threads=lwt)
        for i in range(ipt):
            d_regs[t * ipt + i] = items[i]
        warp.store(d_out[base:], items, algorithm=algorithm, logical_warp_threads=lwt)
        for i in range(ipt):
            items[i] = oob
        warp.WarpLoad.Load(d_in[base:], items, valid, algorithm=algorithm, logical_warp_threads=lwt)
        for i in range(ipt):
            d_regs_p[t * ipt + i] = items[i]
        warp.load(d_in[base:], items, num_valid_items=valid, oob_default=oob,
                  algorithm=algorithm, logical_warp_threads=lwt)
        for i in range(ipt):
            d_regs_p[THREADS * ipt + t * ipt + i] = items[i]
        warp.WarpStore.Store(d_out_p[base:], items, valid, algorithm=algorithm,
                             logical_warp_threads=lwt)
    return k


LS_CASES = ([(np.int32, 32, 4, a) for a in LOAD_ALGORITHMS]
            + [(np.float64, 16, 4, a) for a in LOAD_ALGORITHMS]
            + [(np.uint8, 32, 16, "transpose"), (np.int64, 8, 1, "striped"),
               (np.float32, 32, 16, "vectorize"), (np.int16, 4, 4, "direct")])


@pytest.mark.parametrize("dtype,lwt,ipt,algorithm", LS_CASES,
                         ids=[f"{a}-{dtype_id(d)}-lwt{l}-ipt{i}" for d, l, i, a in LS_CASES])
def test_warp_load_store(dtype, lwt, ipt, algorithm):
    n = THREADS * ipt
    rng = rng_for("warp-ls", dtype_id(dtype), lwt, ipt, algorithm)
    x = random(dtype, n, rng)
    valid = int(rng.integers(1, lwt * ipt))
    oob, sentinel = dtype(7), np.full(n, 3, dtype)
    d_regs, d_out = to_device(np.zeros(n, dtype)), to_device(np.zeros(n, dtype))
    d_regs_p, d_out_p = to_device(np.zeros(2 * n, dtype)), to_device(sentinel.copy())
    launch(load_store_kernel(ipt, lwt, algorithm), 1, THREADS, to_device(x), d_regs, d_regs_p,
           d_out, d_out_p, valid, oob)
    striped = algorithm == "striped"
    np.testing.assert_array_equal(to_host(d_out), x)
    regs = to_host(d_regs).reshape(-1, lwt * ipt)
    regs_p = to_host(d_regs_p).reshape(2, -1, lwt * ipt)
    out_p = to_host(d_out_p).reshape(-1, lwt * ipt)
    pos = _per_lane(np.arange(lwt * ipt), lwt, ipt, striped).reshape(-1)
    for w, seg in enumerate(x.reshape(-1, lwt * ipt)):
        np.testing.assert_array_equal(regs[w], _per_lane(seg, lwt, ipt, striped).reshape(-1))
        want = np.where(pos < valid, seg[pos], oob)
        np.testing.assert_array_equal(regs_p[0, w], want)
        np.testing.assert_array_equal(regs_p[1, w], want)
        np.testing.assert_array_equal(out_p[w, :valid], seg[:valid])
        np.testing.assert_array_equal(out_p[w, valid:], 3)


@functools.lru_cache(maxsize=None)
def exchange_kernel(ipt, lwt, algorithm):
    @cuda.jit
    def k(d_in, d_out):
        x = local.array(ipt, d_in.dtype)
        y = local.array(ipt, d_in.dtype)
        t = cuda.threadIdx.x
        n = cuda.blockDim.x * ipt
        for i in range(ipt):
            x[i] = d_in[t * ipt + i]
        warp.exchange(x, y, warp_exchange_type="BlockedToStriped", logical_warp_threads=lwt,
                      warp_exchange_algorithm=algorithm)
        for i in range(ipt):
            d_out[t * ipt + i] = y[i]
        warp.WarpExchange.StripedToBlocked(x, y, logical_warp_threads=lwt,
                                           warp_exchange_algorithm=algorithm)
        for i in range(ipt):
            d_out[n + t * ipt + i] = y[i]
    return k


@functools.lru_cache(maxsize=None)
def scatter_kernel(ipt, lwt):
    """ScatterToStriped, out of place and in place (the smem algorithm only)."""
    @cuda.jit
    def k(d_in, d_ranks, d_out):
        x = local.array(ipt, d_in.dtype)
        y = local.array(ipt, d_in.dtype)
        r = local.array(ipt, np.int32)
        t = cuda.threadIdx.x
        n = cuda.blockDim.x * ipt
        for i in range(ipt):
            x[i] = d_in[t * ipt + i]
            r[i] = d_ranks[t * ipt + i]
        warp.exchange(x, y, ranks=r, warp_exchange_type="ScatterToStriped",
                      logical_warp_threads=lwt)
        for i in range(ipt):
            d_out[t * ipt + i] = y[i]
            r[i] = d_ranks[t * ipt + i]  # CUB pads ranks in place when it pads shared memory
        warp.WarpExchange.ScatterToStriped(x, r, logical_warp_threads=lwt,
                                           warp_exchange_algorithm="smem")
        for i in range(ipt):
            d_out[n + t * ipt + i] = x[i]
    return k


# The shuffle algorithm needs items_per_thread == logical_warp_threads and has no scatter.
EX_CASES = [(np.int32, 32, 4, "smem"), (np.float64, 16, 8, "smem"), (np.uint8, 8, 1, "smem"),
            (np.int64, 4, 4, "shuffle"), (np.float32, 8, 8, "shuffle"), (np.uint16, 16, 16, "shuffle")]


@pytest.mark.parametrize("dtype,lwt,ipt,algorithm", EX_CASES,
                         ids=[f"{a}-{dtype_id(d)}-lwt{l}-ipt{i}" for d, l, i, a in EX_CASES])
def test_warp_exchange(dtype, lwt, ipt, algorithm):
    m = lwt * ipt
    x = random(dtype, THREADS * ipt, rng_for("warp-ex", dtype_id(dtype), lwt, ipt, algorithm))
    d_out = to_device(np.zeros(2 * THREADS * ipt, dtype))
    launch(exchange_kernel(ipt, lwt, algorithm), 1, THREADS, to_device(x), d_out)
    got = to_host(d_out).reshape(2, -1, m)
    for w, seg in enumerate(x.reshape(-1, m)):
        np.testing.assert_array_equal(got[0, w], seg.reshape(ipt, lwt).T.reshape(-1))  # b->s
        np.testing.assert_array_equal(got[1, w], seg.reshape(lwt, ipt).T.reshape(-1))  # s->b


SC_CASES = [(np.int32, 32, 4), (np.float64, 16, 8), (np.uint8, 8, 1), (np.int16, 32, 16)]


@pytest.mark.parametrize("dtype,lwt,ipt", SC_CASES,
                         ids=[f"{dtype_id(d)}-lwt{l}-ipt{i}" for d, l, i in SC_CASES])
def test_warp_scatter_to_striped(dtype, lwt, ipt):
    m = lwt * ipt
    rng = rng_for("warp-scatter", dtype_id(dtype), lwt, ipt)
    x = random(dtype, THREADS * ipt, rng)
    ranks = np.concatenate([rng.permutation(m) for _ in range(THREADS // lwt)]).astype(np.int32)
    d_out = to_device(np.zeros(2 * THREADS * ipt, dtype))
    launch(scatter_kernel(ipt, lwt), 1, THREADS, to_device(x), to_device(ranks), d_out)
    got = to_host(d_out).reshape(2, -1, m)
    for w, (seg, rk) in enumerate(zip(x.reshape(-1, m), ranks.reshape(-1, m))):
        by_rank = np.empty(m, dtype)
        by_rank[rk] = seg
        want = by_rank.reshape(ipt, lwt).T.reshape(-1)
        np.testing.assert_array_equal(got[0, w], want)
        np.testing.assert_array_equal(got[1, w], want)


@cuda.jit(device=True)
def greater(a, b):
    return a > b


@functools.lru_cache(maxsize=None)
def merge_sort_kernel(ipt, lwt):
    @cuda.jit
    def k(d_keys, d_vals, d_okeys, d_ovals, valid, oob):
        keys = local.array(ipt, d_keys.dtype)
        vals = local.array(ipt, d_vals.dtype)
        t = cuda.threadIdx.x
        n = cuda.blockDim.x * ipt
        for s in range(6):
            for i in range(ipt):
                keys[i] = d_keys[t * ipt + i]
                vals[i] = d_vals[t * ipt + i]
            if s == 0:
                warp.merge_sort_keys(keys, compare_op="<", logical_warp_threads=lwt)
            elif s == 1:
                warp.stable_merge_sort_keys(keys, compare_op=greater, logical_warp_threads=lwt)
            elif s == 2:
                warp.merge_sort_pairs(keys, vals, compare_op="<", logical_warp_threads=lwt)
            elif s == 3:
                warp.stable_merge_sort_pairs(keys, vals, compare_op="<", logical_warp_threads=lwt)
            elif s == 4:
                warp.WarpMergeSort.Sort(keys, "<", valid, oob, logical_warp_threads=lwt)
            else:
                warp.WarpMergeSort.StableSort(keys, vals, "<", valid, oob, logical_warp_threads=lwt)
            for i in range(ipt):
                d_okeys[s * n + t * ipt + i] = keys[i]
                d_ovals[s * n + t * ipt + i] = vals[i]
    return k


# Each warp call site holds its own shared TempStorage (6 sorts below): keep tiles small.
MS_CASES = [(np.int32, np.float32, 32, 4), (np.float64, np.int32, 16, 1), (np.uint8, np.int64, 8, 4),
            (np.int64, np.uint16, 32, 4), (np.int16, np.uint8, 16, 16), (np.float32, np.int8, 4, 4)]


@pytest.mark.parametrize("ktype,vtype,lwt,ipt", MS_CASES,
                         ids=[f"{dtype_id(k)}-{dtype_id(v)}-lwt{l}-ipt{i}" for k, v, l, i in MS_CASES])
def test_warp_merge_sort(ktype, vtype, lwt, ipt):
    m = lwt * ipt
    n = THREADS * ipt
    rng = rng_for("warp-ms", dtype_id(ktype), dtype_id(vtype), lwt, ipt)
    keys = rng.choice(random(ktype, 20, rng), n)
    keys[keys == dtype_max(ktype)] = 0
    vals = (np.arange(n) % m).astype(vtype)
    valid = int(rng.integers(1, m))
    oob = dtype_max(ktype) if np.dtype(ktype).kind in "iu" else np.finfo(ktype).max
    d_ok, d_ov = to_device(np.zeros(6 * n, ktype)), to_device(np.zeros(6 * n, vtype))
    launch(merge_sort_kernel(ipt, lwt), 1, THREADS, to_device(keys), to_device(vals), d_ok, d_ov,
           valid, ktype(oob))
    ok, ov = to_host(d_ok).reshape(6, -1, m), to_host(d_ov).reshape(6, -1, m)
    for w, (kseg, vseg) in enumerate(zip(keys.reshape(-1, m), vals.reshape(-1, m))):
        asc, desc = stable_order(kseg), stable_order(kseg, descending=True)
        np.testing.assert_array_equal(ok[0, w], kseg[asc])
        np.testing.assert_array_equal(ok[1, w], kseg[desc])
        np.testing.assert_array_equal(ok[2, w], kseg[asc])
        assert sorted(zip(ok[2, w].tolist(), ov[2, w].tolist())) == sorted(zip(kseg.tolist(), vseg.tolist()))
        np.testing.assert_array_equal(ok[3, w], kseg[asc])
        np.testing.assert_array_equal(ov[3, w], vseg[asc])
        part = stable_order(kseg[:valid])
        np.testing.assert_array_equal(ok[4, w, :valid], kseg[:valid][part])
        np.testing.assert_array_equal(ok[5, w, :valid], kseg[:valid][part])
        np.testing.assert_array_equal(ov[5, w, :valid], vseg[:valid][part])
