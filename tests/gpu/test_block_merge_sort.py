"""BlockMergeSort: keys and pairs, Sort and StableSort, partial tiles (valid_items +
oob_default), built-in and Python comparators."""
import functools

import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local
from gpu_util import (SMEM_LIMIT, block_id, dtype_id, dtype_max, launch, nthreads, random,
                      rng_for, stable_order, to_device, to_host)

pytestmark = pytest.mark.gpu


@cuda.jit(device=True)
def greater(a, b):
    return a > b


@functools.lru_cache(maxsize=None)
def keys_kernel(ipt):
    """Sort, StableSort, descending by a Python comparator, partial tiles of both."""
    @cuda.jit
    def k(d_in, d_out, valid, oob):
        keys = local.array(ipt, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        nt = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z
        n = nt * ipt
        for s in range(5):
            for i in range(ipt):
                keys[i] = d_in[t * ipt + i]
            if s == 0:
                block.merge_sort_keys(keys, compare_op="<")
            elif s == 1:
                block.stable_merge_sort_keys(keys, compare_op="<")
            elif s == 2:
                block.BlockMergeSort.Sort(keys, greater)
            elif s == 3:
                block.merge_sort_keys(keys, compare_op="<", valid_items=valid, oob_default=oob)
            else:
                block.BlockMergeSort.StableSort(keys, "<", valid, oob)
            for i in range(ipt):
                d_out[s * n + t * ipt + i] = keys[i]
    return k


KEY_CASES = [(np.int32, 128, 4), (np.int8, 128, 4), (np.uint64, 128, 4), (np.float32, 128, 4),
             (np.float64, 256, 16), (np.int16, 32, 16), (np.uint32, 1024, 4),
             (np.int64, (16, 8), 4), (np.float32, (4, 8, 8), 1), (np.int32, 256, 1)]
KEY_CASES = [c for c in KEY_CASES if nthreads(c[1]) * c[2] * np.dtype(c[0]).itemsize <= SMEM_LIMIT]


@pytest.mark.parametrize("dtype,blk,ipt", KEY_CASES,
                         ids=[f"{dtype_id(d)}-{block_id(b)}-ipt{i}" for d, b, i in KEY_CASES])
def test_sort_keys(dtype, blk, ipt):
    nt = nthreads(blk)
    n = nt * ipt
    rng = rng_for("merge-keys", dtype_id(dtype), blk, ipt)
    x = random(dtype, n, rng)
    if np.dtype(dtype).kind in "iu":
        x[x == dtype_max(dtype)] = 0  # oob_default is the maximum
    valid = int(rng.integers(1, n))
    oob = dtype_max(dtype) if np.dtype(dtype).kind in "iu" else np.finfo(dtype).max
    d_out = to_device(np.zeros(5 * n, dtype))
    launch(keys_kernel(ipt), 1, blk, to_device(x), d_out, valid, dtype(oob))
    got = to_host(d_out).reshape(5, n)
    np.testing.assert_array_equal(got[0], np.sort(x))
    np.testing.assert_array_equal(got[1], np.sort(x))
    np.testing.assert_array_equal(got[2], np.sort(x)[::-1])
    part = np.concatenate([np.sort(x[:valid]), np.full(n - valid, oob, dtype)])
    np.testing.assert_array_equal(got[3][:valid], part[:valid])
    np.testing.assert_array_equal(got[4][:valid], part[:valid])


@functools.lru_cache(maxsize=None)
def pairs_kernel(ipt):
    @cuda.jit
    def k(d_keys, d_vals, d_okeys, d_ovals, valid, oob):
        keys = local.array(ipt, d_keys.dtype)
        vals = local.array(ipt, d_vals.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        nt = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z
        n = nt * ipt
        for s in range(4):
            for i in range(ipt):
                keys[i] = d_keys[t * ipt + i]
                vals[i] = d_vals[t * ipt + i]
            if s == 0:
                block.merge_sort_pairs(keys, vals, compare_op="<")
            elif s == 1:
                block.stable_merge_sort_pairs(keys, vals, compare_op="<")
            elif s == 2:
                block.BlockMergeSort.Sort(keys, vals, "<", valid, oob)
            else:
                # CUB merges only the valid items: oob_default must order after every valid
                # key under the comparator, so for descending it is the minimum (0 here).
                block.stable_merge_sort_pairs(keys, vals, compare_op=greater, valid_items=valid,
                                              oob_default=oob - oob)
            for i in range(ipt):
                d_okeys[s * n + t * ipt + i] = keys[i]
                d_ovals[s * n + t * ipt + i] = vals[i]
    return k


PAIR_CASES = [(np.int32, np.float64, 128, 4), (np.float32, np.int16, 256, 4),
              (np.uint8, np.int32, (16, 8), 16), (np.int64, np.uint32, 32, 1)]


@pytest.mark.parametrize("ktype,vtype,blk,ipt", PAIR_CASES,
                         ids=[f"{dtype_id(k)}-{dtype_id(v)}-{block_id(b)}-ipt{i}" for k, v, b, i in PAIR_CASES])
def test_sort_pairs(ktype, vtype, blk, ipt):
    nt = nthreads(blk)
    n = nt * ipt
    rng = rng_for("merge-pairs", dtype_id(ktype), dtype_id(vtype), blk, ipt)
    keys = rng.integers(1, 30, n).astype(ktype)  # many equal keys; 0 is the descending oob
    vals = np.arange(n).astype(vtype)
    valid = int(rng.integers(1, n))
    oob_asc = ktype(100)
    d_okeys, d_ovals = to_device(np.zeros(4 * n, ktype)), to_device(np.zeros(4 * n, vtype))
    launch(pairs_kernel(ipt), 1, blk, to_device(keys), to_device(vals), d_okeys, d_ovals,
           valid, oob_asc)
    okeys, ovals = to_host(d_okeys).reshape(4, n), to_host(d_ovals).reshape(4, n)
    order = stable_order(keys)
    # Unstable sort: keys sorted and (key, value) pairs preserved.
    np.testing.assert_array_equal(okeys[0], keys[order])
    assert sorted(zip(okeys[0].tolist(), ovals[0].tolist())) == sorted(zip(keys.tolist(), vals.tolist()))
    np.testing.assert_array_equal(okeys[1], keys[order])
    np.testing.assert_array_equal(ovals[1], vals[order])
    # Partial tiles: the first valid results are the sorted valid items.
    po = stable_order(keys[:valid])
    np.testing.assert_array_equal(okeys[2][:valid], keys[:valid][po])
    assert sorted(zip(okeys[2][:valid].tolist(), ovals[2][:valid].tolist())) == \
        sorted(zip(keys[:valid].tolist(), vals[:valid].tolist()))
    # Stable, descending by a Python comparator, partial tile: the valid items come first,
    # in descending order, values with them (stable: equal keys keep their order).
    pd = stable_order(keys[:valid], descending=True)
    np.testing.assert_array_equal(okeys[3][:valid], keys[:valid][pd])
    np.testing.assert_array_equal(ovals[3][:valid], vals[:valid][pd])
