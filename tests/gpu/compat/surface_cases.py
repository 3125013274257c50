"""Kernels written with cuda.coop's spellings on coopgen.block / coopgen.warp, with their numpy
answers: positional items_per_thread and algorithm, num_valid_items / num_valid / valid_items,
binary_op / scan_op / compare_op / flag_op / difference_op, enum members, *_type keywords,
in-place exchange, block.scan, values= on a keys sort, blocked_to_striped, warp.max/min and
two-phase objects built on the host in cuda.coop's positional order.

``CASES`` maps a name to ``make(rng, dtype, block, ipt) -> Case``. tests/gpu/compat runs them on
a GPU; tests/cpu compiles and links each for sm_90.
"""
from __future__ import annotations

import operator
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "examples"))
from _compiler import cuda  # noqa: E402  numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)
from coopgen import block, local, shared, warp
from coopgen.model import registry
from coopgen.enums import BlockLoadAlgorithm, BlockStoreAlgorithm


@dataclass
class Case:
    kernel: Callable  # a plain Python function; the runner jit-compiles it
    block: object  # threads per block: an int or a 2-/3-tuple
    args: tuple  # numpy arrays (copied to the device) and scalars
    check: Callable  # check(host copies of args)


def nthreads(blk) -> int:
    return int(np.prod(blk)) if isinstance(blk, tuple) else int(blk)


def values(dtype, n, rng, lo=None, hi=None):
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo = max(info.min, -(10 ** 6)) if lo is None else lo
        hi = min(info.max, 10 ** 6) if hi is None else hi
        return rng.integers(lo, hi, size=n, dtype=dt, endpoint=True)
    return rng.uniform(-100 if lo is None else lo, 100 if hi is None else hi, n).astype(dt)


def close(got, want, dtype):
    """Equal for integers; for floats, within the rounding of sums taken in another order."""
    if np.dtype(dtype).kind == "f":
        single = np.dtype(dtype) == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-4 if single else 1e-10,
                                   atol=5e-2 if single else 1e-8)
    else:
        np.testing.assert_array_equal(got, want)


def wrapping(fn, x, dtype):
    """numpy's answer with C++'s integer wrap-around."""
    with np.errstate(over="ignore"):
        return fn(x).astype(dtype)


# --- block load / store ----------------------------------------------------------------------

def load_store_positional(rng, dtype, blk, ipt):
    def k(d_in, d_out):
        items = local.array(ipt, d_in.dtype)
        block.load(d_in, items, ipt, "striped")
        block.store(d_out, items, ipt, BlockStoreAlgorithm.STRIPED)

    x = values(dtype, nthreads(blk) * ipt, rng)
    return Case(k, blk, (x, np.zeros_like(x)), lambda a: close(a[1], x, dtype))


def load_store_partial(rng, dtype, blk, ipt):
    def k(d_in, d_out, d_full, n_valid, oob):
        items = local.array(ipt, d_in.dtype)
        block.load(d_in, items, ipt, BlockLoadAlgorithm.DIRECT, n_valid, oob)
        block.store(d_out, items, ipt, "direct", n_valid)
        block.store(d_full, items, ipt)

    n = nthreads(blk) * ipt
    x, before = values(dtype, n, rng), values(dtype, n, rng)
    n_valid = int(rng.integers(1, n))
    oob = values(dtype, 1, rng)[0]

    def check(a):
        close(a[1][:n_valid], x[:n_valid], dtype)
        close(a[1][n_valid:], before[n_valid:], dtype)  # not written
        close(a[2][:n_valid], x[:n_valid], dtype)
        assert (a[2][n_valid:] == oob).all()

    return Case(k, blk, (x, before.copy(), np.zeros_like(x), n_valid, oob), check)


# --- sorts -----------------------------------------------------------------------------------

def radix_sort(rng, dtype, blk, ipt):
    def k(d_keys, d_out, d_desc, d_vals, d_striped):
        keys = local.array(ipt, d_keys.dtype)
        vals = local.array(ipt, np.int32)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        block.load(d_keys, keys, ipt)
        block.radix_sort_keys(keys, ipt)
        block.store(d_out, keys, ipt)
        block.load(d_keys, keys, ipt)
        for i in range(ipt):
            vals[i] = t * ipt + i
        block.radix_sort_keys_descending(keys, ipt, values=vals)
        block.store(d_desc, keys, ipt)
        block.store(d_vals, vals, ipt)
        block.load(d_keys, keys, ipt)
        block.radix_sort_keys(keys, ipt, blocked_to_striped=True)
        block.store(d_striped, keys, ipt, "striped")

    n = nthreads(blk) * ipt
    x = values(dtype, n, rng)

    def check(a):
        close(a[1], np.sort(x), dtype)
        close(a[2], np.sort(x)[::-1], dtype)
        assert sorted(a[3].tolist()) == list(range(n))  # a permutation that carried the keys
        close(x[a[3]], a[2], dtype)
        close(a[4], np.sort(x), dtype)

    z = np.zeros_like(x)
    return Case(k, blk, (x, z, z.copy(), np.zeros(n, np.int32), z.copy()), check)


@cuda.jit(device=True)
def greater(a, b):
    return a > b


def merge_sort(rng, dtype, blk, ipt):
    def k(d_keys, d_out, d_desc, d_vals):
        keys = local.array(ipt, d_keys.dtype)
        vals = local.array(ipt, np.int32)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        block.load(d_keys, keys, ipt)
        block.merge_sort_keys(keys, ipt, "<")
        block.store(d_out, keys, ipt)
        block.load(d_keys, keys, ipt)
        for i in range(ipt):
            vals[i] = t * ipt + i
        block.merge_sort_keys(keys, ipt, greater, values=vals)
        block.store(d_desc, keys, ipt)
        block.store(d_vals, vals, ipt)

    n = nthreads(blk) * ipt
    x = values(dtype, n, rng)

    def check(a):
        close(a[1], np.sort(x), dtype)
        close(a[2], np.sort(x)[::-1], dtype)
        assert sorted(a[3].tolist()) == list(range(n))
        close(x[a[3]], a[2], dtype)

    z = np.zeros_like(x)
    return Case(k, blk, (x, z, z.copy(), np.zeros(n, np.int32)), check)


def radix_rank(rng, dtype, blk, ipt):
    """Ranks by the key bits [begin_bit, end_bit), ascending and descending (unsigned keys)."""
    def k(d_keys, d_up, d_down):
        keys = local.array(ipt, np.uint32)
        ranks = local.array(ipt, np.int32)
        block.load(d_keys, keys, ipt)
        block.radix_rank(keys, ranks, ipt, 3, 8)
        block.store(d_up, ranks, ipt)
        block.radix_rank(keys, ranks, ipt, 3, 8, descending=True)
        block.store(d_down, ranks, ipt)

    n = nthreads(blk) * ipt
    x = rng.integers(0, 1 << 12, n, dtype=np.uint32)
    digit = (x >> 3) & 31

    def ranks_of(order):
        ranks = np.empty(n, np.int32)
        ranks[order] = np.arange(n, dtype=np.int32)
        return ranks

    def check(a):
        np.testing.assert_array_equal(a[1], ranks_of(np.argsort(digit, kind="stable")))
        np.testing.assert_array_equal(a[2], ranks_of(np.argsort(-digit.astype(np.int64),
                                                                kind="stable")))

    z = np.zeros(n, np.int32)
    return Case(k, blk, (x, z, z.copy()), check)


# --- reductions and scans --------------------------------------------------------------------

def reduce_sum(rng, dtype, blk, ipt):
    def k(d_in, d_out, n_valid):
        items = local.array(ipt, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        block.load(d_in, items, ipt)
        s = block.sum(items, ipt)
        m = block.reduce(items, ipt, "max")
        o = block.reduce(items, binary_op=operator.add)
        lo = block.reduce(d_in[t * ipt], 1, np.minimum, n_valid)  # first item of the threads
        if t == 0:
            d_out[0] = s
            d_out[1] = m
            d_out[2] = o
            d_out[3] = lo

    nt = nthreads(blk)
    x = values(dtype, nt * ipt, rng)
    n_valid = int(rng.integers(1, nt + 1))

    def check(a):
        close(a[1][0], wrapping(lambda v: v.sum(dtype=dtype), x, dtype), dtype)
        close(a[1][1], x.max(), dtype)
        close(a[1][2], wrapping(lambda v: v.sum(dtype=dtype), x, dtype), dtype)
        close(a[1][3], x[::ipt][:n_valid].min(), dtype)

    return Case(k, blk, (x, np.zeros(4, dtype), n_valid), check)


def scans(rng, dtype, blk, ipt):
    def k(d_in, d_ex, d_inc_max, d_ex_min, d_inc, d_agg):
        items = local.array(ipt, d_in.dtype)
        out = local.array(ipt, d_in.dtype)
        block.load(d_in, items, ipt)
        block.scan(items, out, ipt)  # cuda.coop's default: an exclusive sum
        block.store(d_ex, out, ipt)
        block.scan(items, out, ipt, mode="inclusive", scan_op="max")
        block.store(d_inc_max, out, ipt)
        block.exclusive_scan(items, out, ipt, "minimum")  # starts from the identity
        block.store(d_ex_min, out, ipt)
        block.inclusive_sum(items, out, ipt, block_aggregate=d_agg)
        block.store(d_inc, out, ipt)

    n = nthreads(blk) * ipt
    x = values(dtype, n, rng, -50 if np.dtype(dtype).kind != "u" else 0, 50)
    big = np.finfo(dtype).max if np.dtype(dtype).kind == "f" else np.iinfo(dtype).max

    def check(a):
        inc = wrapping(lambda v: np.cumsum(v, dtype=dtype), x, dtype)
        close(a[1], np.concatenate([[0], inc[:-1]]).astype(dtype), dtype)
        close(a[2], np.maximum.accumulate(x), dtype)
        close(a[3], np.concatenate([[big], np.minimum.accumulate(x)[:-1]]).astype(dtype), dtype)
        close(a[4], inc, dtype)
        close(a[5][0], inc[-1], dtype)

    z = np.zeros_like(x)
    return Case(k, blk, (x, z, z.copy(), z.copy(), z.copy(), np.zeros(1, dtype)), check)


# --- data movement ---------------------------------------------------------------------------

def exchange_in_place(rng, dtype, blk, ipt):
    def k(d_in, d_out, d_back):
        items = local.array(ipt, d_in.dtype)
        block.load(d_in, items, ipt, "striped")
        block.exchange(items, items_per_thread=ipt)  # StripedToBlocked, in place
        block.store(d_out, items, ipt)  # blocked: the input again
        block.exchange(items, None, ipt, block_exchange_type=block.BlockExchangeType.BlockedToStriped)
        block.store(d_back, items, ipt, "striped")

    x = values(dtype, nthreads(blk) * ipt, rng)

    def check(a):
        close(a[1], x, dtype)
        close(a[2], x, dtype)

    return Case(k, blk, (x, np.zeros_like(x), np.zeros_like(x)), check)


def neighbours(rng, dtype, blk, ipt):
    def k(d_in, d_heads, d_diff, d_next):
        items = local.array(ipt, d_in.dtype)
        heads = local.array(ipt, np.int32)
        diff = local.array(ipt, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        block.load(d_in, items, ipt)
        block.discontinuity(items, heads, flag_op="!=")  # items come first
        block.store(d_heads, heads, ipt)
        block.adjacent_difference(items, diff, ipt, "-")
        block.store(d_diff, diff, ipt)
        d_next[t] = block.shuffle(items[0], distance=1)

    nt = nthreads(blk)
    x = np.floor(values(dtype, nt * ipt, rng, 0, 3)).astype(dtype)  # runs of equal items

    def check(a):
        want = np.ones(x.size, np.int32)
        want[1:] = x[1:] != x[:-1]
        np.testing.assert_array_equal(a[1], want)
        diff = x.copy()
        with np.errstate(over="ignore"):
            diff[1:] = x[1:] - x[:-1]
        close(a[2], diff, dtype)
        close(a[3][:nt - 1], x[::ipt][1:], dtype)  # the next thread's first item

    return Case(k, blk, (x, np.zeros(x.size, np.int32), np.zeros_like(x), np.zeros(nt, dtype)),
                check)


# --- warp ------------------------------------------------------------------------------------

def warp_reductions_and_scans(rng, dtype, blk, ipt):
    def k(d_in, d_red, d_half, d_ex, d_inc):
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        x = d_in[t]
        s = warp.sum(x)
        hi = warp.max(x)
        lo = warp.min(x)
        half = warp.reduce(x, "max", 16)  # logical warps of 16 threads
        d_ex[t] = warp.exclusive_scan(x, "+", 0)
        d_inc[t] = warp.inclusive_sum(x)
        if t % 32 == 0:
            d_red[(t // 32) * 3 + 0] = s
            d_red[(t // 32) * 3 + 1] = hi
            d_red[(t // 32) * 3 + 2] = lo
        if t % 16 == 0:
            d_half[t // 16] = half

    nt = nthreads(blk)
    lo = -50 if np.dtype(dtype).kind != "u" else 0
    x = values(dtype, nt, rng, lo, 50)

    def check(a):
        w = x.reshape(-1, 32)
        red = a[1].reshape(-1, 3)
        close(red[:, 0], wrapping(lambda v: v.sum(axis=1, dtype=dtype), w, dtype), dtype)
        close(red[:, 1], w.max(axis=1), dtype)
        close(red[:, 2], w.min(axis=1), dtype)
        close(a[2], x.reshape(-1, 16).max(axis=1), dtype)
        inc = wrapping(lambda v: np.cumsum(v, axis=1, dtype=dtype), w, dtype)
        ex = np.concatenate([np.zeros((w.shape[0], 1), dtype), inc[:, :-1]], axis=1)
        close(a[4].reshape(-1, 32), inc, dtype)
        close(a[3].reshape(-1, 32), ex, dtype)

    z = np.zeros_like(x)
    return Case(k, blk, (x, np.zeros(nt // 32 * 3, dtype), np.zeros(nt // 16, dtype), z,
                         z.copy()), check)


def warp_partial_scan(rng, dtype, blk, ipt):
    """valid_items= on warp scans: CUB 3.5.0's hidden *ScanPartial."""
    if registry.package().CCCL < "3.5.0":
        pytest.skip("warp scans take valid_items= from CCCL 3.5.0 on")

    def k(d_in, d_inc, d_ex, n_valid):
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        d_inc[t] = warp.inclusive_scan(d_in[t], "+", valid_items=n_valid)
        d_ex[t] = warp.exclusive_scan(d_in[t], "max", d_in[0], 32, n_valid)

    nt = nthreads(blk)
    x = values(dtype, nt, rng, 0, 50)
    n_valid = int(rng.integers(1, 32))

    def check(a):
        w = x.reshape(-1, 32)[:, :n_valid]
        inc = wrapping(lambda v: np.cumsum(v, axis=1, dtype=dtype), w, dtype)
        close(a[1].reshape(-1, 32)[:, :n_valid], inc, dtype)
        run = np.maximum.accumulate(np.concatenate([np.full((w.shape[0], 1), x[0]), w], 1), 1)
        close(a[2].reshape(-1, 32)[:, :n_valid], run[:, :n_valid].astype(dtype), dtype)

    z = np.zeros_like(x)
    return Case(k, blk, (x, z, z.copy(), n_valid), check)


def warp_data(rng, dtype, blk, ipt):
    def k(d_in, d_sorted, d_copy):
        items = local.array(ipt, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        base = (t // 32) * 32 * ipt
        warp.load(d_in[base:], items, ipt, 32, "striped")
        warp.exchange(items, items_per_thread=ipt)  # StripedToBlocked, in place
        warp.store(d_copy[base:], items, ipt, 32, "direct")
        warp.merge_sort_keys(items, ipt, "<")
        warp.store(d_sorted[base:], items, ipt)

    x = values(dtype, nthreads(blk) * ipt, rng)

    def check(a):
        close(a[1].reshape(-1, 32 * ipt), np.sort(x.reshape(-1, 32 * ipt), axis=1), dtype)
        close(a[2], x, dtype)

    return Case(k, blk, (x, np.zeros_like(x), np.zeros_like(x)), check)


def histogram(rng, dtype, blk, ipt):
    """block.histogram(items, histogram) (cuda.coop's default: atomic) and a two-phase one
    made on the host, called as h() then h.init(hist) and h.composite(items, hist)."""
    bins = 32
    made = block.histogram(np.uint8, np.uint32, blk, ipt, bins)

    def k(d_in, d_single, d_two):
        items = local.array(ipt, np.uint8)
        single = shared.array(bins, np.uint32)
        two = shared.array(bins, np.uint32)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        block.load(d_in, items, ipt)
        h = block.histogram(items, single)
        h.init()
        cuda.syncthreads()
        h.composite(items)
        h2 = made()
        h2.init(two)
        cuda.syncthreads()
        h2.composite(items, two)
        cuda.syncthreads()
        if t < bins:
            d_single[t] = single[t]
            d_two[t] = two[t]

    x = rng.integers(0, bins, nthreads(blk) * ipt, dtype=np.uint8)

    def check(a):
        want = np.bincount(x, minlength=bins)
        np.testing.assert_array_equal(a[1], want)
        np.testing.assert_array_equal(a[2], want)

    return Case(k, blk, (x, np.zeros(bins, np.uint32), np.zeros(bins, np.uint32)), check)


# --- two-phase objects made on the host in cuda.coop's positional order -------------------

def two_phase(rng, dtype, blk, ipt):
    load = block.load(dtype, blk, ipt, "warp_transpose")
    store = block.store(dtype, blk, ipt, BlockStoreAlgorithm.WARP_TRANSPOSE)
    biggest = block.reduce(dtype, blk, "max", ipt)
    total = block.sum(dtype, blk, ipt)
    sort = block.radix_sort_keys(dtype, blk, ipt)
    warp_max = warp.reduce(dtype, "max")

    def k(d_in, d_out, d_red):
        items = local.array(ipt, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        load(d_in, items)
        m = biggest(items)
        s = total(items)
        w = warp_max(items[0])
        sort(items)
        store(d_out, items)
        if t == 0:
            d_red[0] = m
            d_red[1] = s
            d_red[2] = w

    x = values(dtype, nthreads(blk) * ipt, rng)

    def check(a):
        close(a[1], np.sort(x), dtype)
        close(a[2][0], x.max(), dtype)
        close(a[2][1], wrapping(lambda v: v.sum(dtype=dtype), x, dtype), dtype)
        close(a[2][2], x.reshape(-1, ipt)[:32, 0].max(), dtype)

    return Case(k, blk, (x, np.zeros_like(x), np.zeros(3, dtype)), check)


CASES = {f.__name__: f for f in (
    load_store_positional, load_store_partial, radix_sort, merge_sort, radix_rank, reduce_sum,
    scans,
    exchange_in_place, neighbours, histogram, warp_reductions_and_scans, warp_partial_scan,
    warp_data, two_phase)}

#: (dtype, block, items per thread) each case runs with; 2-D and 3-D blocks included.
PARAMS = [(np.int32, 128, 4), (np.float32, (16, 8), 3), (np.int64, (8, 4, 4), 2),
          (np.uint16, 256, 1), (np.float64, 64, 5)]
