"""BlockRadixSort: keys and pairs, ascending and descending, blocked and blocked-to-striped
results, begin/end bits, radix_bits; faithful, Pythonic and two-phase surfaces."""
import functools

import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local
from gpu_util import (ALL_DTYPES, BLOCKS, SMEM_LIMIT, block_id, dtype_id, launch, nthreads,
                      random, rng_for, stable_order, to_device, to_host)

pytestmark = pytest.mark.gpu

GRID = 2


@functools.lru_cache(maxsize=None)
def keys_kernel(ipt):
    """Four sorts of the same tile: ascending, descending, and both to striped."""
    @cuda.jit
    def k(d_in, d_out):
        keys = local.array(ipt, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        nt = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z
        n = nt * ipt
        tile = cuda.blockIdx.x * n
        for s in range(4):
            for i in range(ipt):
                keys[i] = d_in[tile + t * ipt + i]
            if s == 0:
                block.radix_sort_keys(keys)
            elif s == 1:
                block.radix_sort_keys_descending(keys)
            elif s == 2:
                block.BlockRadixSort.SortBlockedToStriped(keys)
            else:
                block.BlockRadixSort.SortDescendingBlockedToStriped(keys)
            for i in range(ipt):
                d_out[(cuda.blockIdx.x * 4 + s) * n + t * ipt + i] = keys[i]
    return k


def _striped(sorted_tile, nt, ipt):
    """Thread-major registers after a sort to striped: thread t item i holds sorted[i*nt + t]."""
    return sorted_tile.reshape(ipt, nt).T.reshape(-1)


def _smem(nt, ipt, itemsize):
    return nt * ipt * itemsize


KEY_CASES = ([(dt, 128, 4) for dt in ALL_DTYPES]
             + [(np.int32, b, ipt) for b in BLOCKS for ipt in (1, 16)]
             + [(np.float64, (16, 8), 16), (np.uint8, 1024, 16), (np.int64, (4, 8, 8), 4)])
KEY_CASES = [c for c in KEY_CASES if _smem(nthreads(c[1]), c[2], np.dtype(c[0]).itemsize) <= SMEM_LIMIT]


@pytest.mark.parametrize("dtype,blk,ipt", KEY_CASES,
                         ids=[f"{dtype_id(d)}-{block_id(b)}-ipt{i}" for d, b, i in KEY_CASES])
def test_sort_keys(dtype, blk, ipt):
    nt = nthreads(blk)
    n = nt * ipt
    x = random(dtype, GRID * n, rng_for("keys", dtype_id(dtype), blk, ipt))
    d_out = to_device(np.zeros(GRID * 4 * n, dtype))
    launch(keys_kernel(ipt), GRID, blk, to_device(x), d_out)
    got = to_host(d_out).reshape(GRID, 4, n)
    for g in range(GRID):
        asc = np.sort(x[g * n:(g + 1) * n])
        desc = asc[::-1]
        np.testing.assert_array_equal(got[g, 0], asc)
        np.testing.assert_array_equal(got[g, 1], desc)
        np.testing.assert_array_equal(got[g, 2], _striped(asc, nt, ipt))
        np.testing.assert_array_equal(got[g, 3], _striped(desc, nt, ipt))


@functools.lru_cache(maxsize=None)
def pairs_kernel(ipt):
    @cuda.jit
    def k(d_keys, d_vals, d_okeys, d_ovals):
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
                block.radix_sort_pairs(keys, vals)
            elif s == 1:
                block.radix_sort_pairs_descending(keys, vals)
            elif s == 2:
                block.BlockRadixSort.SortBlockedToStriped(keys, vals)
            else:
                block.BlockRadixSort.SortDescendingBlockedToStriped(keys, vals)
            for i in range(ipt):
                d_okeys[s * n + t * ipt + i] = keys[i]
                d_ovals[s * n + t * ipt + i] = vals[i]
    return k


PAIR_CASES = [(np.int32, np.float32, 128, 4), (np.uint8, np.int64, 128, 4),
              (np.float64, np.int32, 256, 4), (np.int16, np.uint16, (16, 8), 16),
              (np.uint64, np.float64, 32, 16), (np.float32, np.int8, 1024, 1),
              (np.int64, np.uint32, (4, 8, 8), 4)]


@pytest.mark.parametrize("ktype,vtype,blk,ipt", PAIR_CASES,
                         ids=[f"{dtype_id(k)}-{dtype_id(v)}-{block_id(b)}-ipt{i}" for k, v, b, i in PAIR_CASES])
def test_sort_pairs_is_stable(ktype, vtype, blk, ipt):
    nt = nthreads(blk)
    n = nt * ipt
    rng = rng_for("pairs", dtype_id(ktype), dtype_id(vtype), blk, ipt)
    keys = rng.choice(random(ktype, 40, rng), n)  # 40 distinct keys: stability shows
    vals = (np.arange(n) % (np.iinfo(vtype).max if np.dtype(vtype).kind in "iu" else n)).astype(vtype)
    d_okeys, d_ovals = to_device(np.zeros(4 * n, ktype)), to_device(np.zeros(4 * n, vtype))
    launch(pairs_kernel(ipt), 1, blk, to_device(keys), to_device(vals), d_okeys, d_ovals)
    okeys, ovals = to_host(d_okeys).reshape(4, n), to_host(d_ovals).reshape(4, n)
    asc, desc = stable_order(keys), stable_order(keys, descending=True)
    np.testing.assert_array_equal(okeys[0], keys[asc])
    np.testing.assert_array_equal(ovals[0], vals[asc])
    np.testing.assert_array_equal(okeys[1], keys[desc])
    np.testing.assert_array_equal(ovals[1], vals[desc])
    np.testing.assert_array_equal(okeys[2], _striped(keys[asc], nt, ipt))
    np.testing.assert_array_equal(ovals[2], _striped(vals[asc], nt, ipt))
    np.testing.assert_array_equal(okeys[3], _striped(keys[desc], nt, ipt))
    np.testing.assert_array_equal(ovals[3], _striped(vals[desc], nt, ipt))


@functools.lru_cache(maxsize=None)
def bits_kernel(radix_bits):
    @cuda.jit
    def k(d_in, d_out, begin_bit, end_bit):
        keys = local.array(4, d_in.dtype)
        vals = local.array(4, np.int32)
        t = cuda.threadIdx.x
        n = cuda.blockDim.x * 4
        for s in range(3):
            for i in range(4):
                keys[i] = d_in[t * 4 + i]
                vals[i] = t * 4 + i
            if s == 0:
                block.radix_sort_keys(keys, begin_bit=begin_bit, end_bit=end_bit,
                                      radix_bits=radix_bits)
            elif s == 1:
                block.radix_sort_pairs(keys, vals, begin_bit=begin_bit, end_bit=end_bit,
                                       radix_bits=radix_bits)
            else:
                block.radix_sort_keys_descending(keys, begin_bit=begin_bit, end_bit=end_bit,
                                                 radix_bits=radix_bits)
            for i in range(4):
                if s == 1:  # (a conditional expression would unify uint64/int32 to float64)
                    d_out[s * n + t * 4 + i] = vals[i]
                else:
                    d_out[s * n + t * 4 + i] = keys[i]
    return k


BIT_CASES = [(np.uint32, 4, 0, 32), (np.uint32, 4, 4, 12), (np.uint32, 6, 3, 17),
             (np.uint64, 5, 20, 45), (np.uint16, 1, 2, 9)]


@pytest.mark.parametrize("dtype,radix_bits,begin,end", BIT_CASES,
                         ids=[f"{dtype_id(d)}-r{r}-{b}-{e}" for d, r, b, e in BIT_CASES])
def test_begin_end_bits(dtype, radix_bits, begin, end):
    n = 128 * 4
    x = random(dtype, n, rng_for("bits", dtype_id(dtype), radix_bits, begin, end))
    d_out = to_device(np.zeros(3 * n, dtype))
    launch(bits_kernel(radix_bits), 1, 128, to_device(x), d_out, begin, end)
    got = to_host(d_out).reshape(3, n)
    digit = (x.astype(np.uint64) >> np.uint64(begin)) & np.uint64((1 << (end - begin)) - 1)
    asc, desc = stable_order(digit), stable_order(digit, descending=True)
    np.testing.assert_array_equal(got[0], x[asc])
    np.testing.assert_array_equal(got[1], asc.astype(dtype))
    np.testing.assert_array_equal(got[2], x[desc])


TWO_PHASE = block.BlockRadixSort(np.int32, threads_per_block=128, items_per_thread=4)


@functools.lru_cache(maxsize=None)
def two_phase_kernel():
    @cuda.jit
    def k(d_in, d_out):
        keys = local.array(4, np.int32)
        plain = cuda.local.array(4, np.int32)
        t = cuda.threadIdx.x
        for i in range(4):
            keys[i] = d_in[t * 4 + i]
            plain[i] = d_in[t * 4 + i]
        TWO_PHASE.Sort(keys)
        block.BlockRadixSort.SortDescending(plain, items_per_thread=4, threads_per_block=128)
        for i in range(4):
            d_out[t * 4 + i] = keys[i]
            d_out[512 + t * 4 + i] = plain[i]
    return k


def test_two_phase_and_plain_arrays():
    x = random(np.int32, 512, rng_for("radix-two-phase"))
    d_out = to_device(np.zeros(1024, np.int32))
    launch(two_phase_kernel(), 1, 128, to_device(x), d_out)
    got = to_host(d_out)
    np.testing.assert_array_equal(got[:512], np.sort(x))
    np.testing.assert_array_equal(got[512:], np.sort(x)[::-1])
