"""cuda.coop's call shapes that its own test suite uses, written with ``from coopgen import
coop``, with numpy checks: scan objects declared with a ``StatefulFunction`` prefix callback
(the state passed by each call, after the storage, for one item or an array per thread), scan
objects given ``initial_value=None`` or an initial value that each call passes again, radix
sort objects called with a bit range after the keys, and numba's own ``cuda.local.array`` /
``cuda.shared.array`` passed to primitives that infer sizes from them.

Each ``case_*`` returns a coop_kernels.Case; tests/gpu/compat/test_coop_containers.py launches
them, tests/cpu/test_coop_compile.py links them for sm_90 as their launches would.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import cuda
from numba.cuda import cgutils
from numba.cuda.extending import (lower_builtin, make_attribute_wrapper, models,
                                  register_model, type_callable)

from coop_kernels import Case
from coopgen import coop


class TileTotal:
    """A block prefix callback: the state is the total of the tiles scanned so far."""

    def __init__(self, total):
        self.total = total

    def __call__(state, block_aggregate):
        before = state[0].total
        state[0] = TileTotal(before + block_aggregate)
        return before


# the state's own struct type, as cuda.coop code declares one (a plain int32 state would make
# every 1-element int32 array a prefix callback's state)
class TileTotalType(numba.types.Type):
    def __init__(self):
        super().__init__(name="TileTotal")


TILE_TOTAL_STATE = TileTotalType()


@register_model(TileTotalType)
class _TileTotalModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("total", numba.int32)])


make_attribute_wrapper(TileTotalType, "total", "total")


@type_callable(TileTotal)
def _type_tile_total(context):
    def typer(total):
        if isinstance(total, numba.types.Integer):
            return TILE_TOTAL_STATE
    return typer


@lower_builtin(TileTotal, numba.types.Integer)
def _lower_tile_total(context, builder, sig, args):
    state = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    state.total = context.cast(builder, args[0], sig.args[0], numba.int32)
    return state._getvalue()


TILE_TOTAL = coop.StatefulFunction(TileTotal, TILE_TOTAL_STATE)
SEGMENT = 1024  # items per block, scanned in tiles of threads * items_per_thread


def _segment_scan(items_per_thread, inclusive):
    make = coop.block.make_inclusive_sum if inclusive else coop.block.make_exclusive_sum
    scan = make(numba.int32, threads_per_block=64, items_per_thread=items_per_thread,
                prefix_op=TILE_TOTAL)
    nbytes = scan.temp_storage_bytes
    tile = 64 * items_per_thread

    @cuda.jit
    def kernel(d_in, d_out):
        storage = cuda.shared.array(shape=nbytes, dtype=numba.uint8)
        state = cuda.local.array(1, dtype=TILE_TOTAL_STATE)
        state[0] = TileTotal(0)
        src = cuda.local.array(items_per_thread, dtype=numba.int32)
        dst = cuda.local.array(items_per_thread, dtype=numba.int32)
        seg = cuda.blockIdx.x * SEGMENT
        for start in range(0, SEGMENT, tile):
            for i in range(items_per_thread):
                src[i] = d_in[seg + start + cuda.threadIdx.x * items_per_thread + i]
            if items_per_thread == 1:
                dst[0] = scan(storage, src[0], state)  # one item: the result is returned
            else:
                scan(storage, src, dst, state)
            for i in range(items_per_thread):
                d_out[seg + start + cuda.threadIdx.x * items_per_thread + i] = dst[i]
    return kernel


def _segment_scan_case(rng, items_per_thread, inclusive):
    blocks = 3
    x = rng.integers(-1000, 1000, blocks * SEGMENT, dtype=np.int32)
    segs = x.reshape(blocks, SEGMENT)
    running = np.cumsum(segs, axis=1, dtype=np.int32)
    want = (running if inclusive else running - segs).ravel()

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], want)
    return Case(_segment_scan(items_per_thread, inclusive), blocks, 64, (x, np.zeros_like(x)),
                check)


def case_exclusive_sum_object_prefix_one_item(rng):
    return _segment_scan_case(rng, 1, inclusive=False)


def case_inclusive_sum_object_prefix_array(rng):
    return _segment_scan_case(rng, 4, inclusive=True)


@cuda.jit(device=True)
def load_tile(d_in, items):
    """Thread t's items are d_in[t * n : (t + 1) * n] (n = len(items))."""
    for i in range(len(items)):
        items[i] = d_in[cuda.threadIdx.x * len(items) + i]


@cuda.jit(device=True)
def store_tile(items, d_out):
    for i in range(len(items)):
        d_out[cuda.threadIdx.x * len(items) + i] = items[i]


def larger(a, b):
    return a if a > b else b


def _max_scan_case(rng, host_initial, call_initial):
    """An inclusive max-scan object; its initial value given on the host (or None there) and
    passed again, possibly another one, by the call."""
    threads, ipt = 128, 4
    scan = coop.block.make_inclusive_scan(numba.int32, threads, ipt, scan_op=larger,
                                          initial_value=host_initial)
    nbytes = scan.temp_storage_bytes

    @cuda.jit
    def kernel(d_in, d_out):
        storage = cuda.shared.array(shape=nbytes, dtype=numba.uint8)
        items = cuda.local.array(ipt, dtype=numba.int32)
        load_tile(d_in, items)
        scan(storage, items, items, call_initial)
        store_tile(items, d_out)

    x = rng.integers(-1000, 1000, threads * ipt, dtype=np.int32)
    want = np.maximum.accumulate(np.maximum(x, call_initial))

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], want)
    return Case(kernel, 1, threads, (x, np.zeros_like(x)), check)


def case_inclusive_scan_object_initial_value_in_call(rng):
    return _max_scan_case(rng, None, np.int32(rng.integers(-500, 500)))


def case_inclusive_scan_object_initial_value_again(rng):
    # the call's value is used, whatever the host call gave
    return _max_scan_case(rng, np.int32(-2000), np.int32(rng.integers(-500, 500)))


BITS_BEGIN, BITS_END = numba.int32(4), numba.int32(12)  # numba ints: runtime values


def case_radix_sort_object_bit_range_after_keys(rng):
    threads, ipt = 128, 3
    sort = coop.block.make_radix_sort_keys(dtype=numba.uint32, threads_per_block=threads,
                                           items_per_thread=ipt)
    nbytes = sort.temp_storage_bytes

    @cuda.jit
    def kernel(d_in, d_out):
        storage = cuda.shared.array(shape=nbytes, dtype="uint8")
        keys = cuda.local.array(shape=ipt, dtype=np.uint32)
        for i in range(ipt):
            keys[i] = d_in[cuda.threadIdx.x * ipt + i]
        sort(storage, keys, BITS_BEGIN, BITS_END)  # items_per_thread is the object's
        for i in range(ipt):
            d_out[cuda.threadIdx.x * ipt + i] = keys[i]

    x = rng.integers(0, 1 << 16, threads * ipt, dtype=np.uint32)
    digits = (x >> 4) & 0xFF  # only bits [4, 12) order the keys; the sort is stable
    want = x[np.argsort(digits, kind="stable")]

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], want)
    return Case(kernel, 1, threads, (x, np.zeros_like(x)), check)


BINS = 16


@cuda.jit
def histogram_of_numba_arrays(d_in, d_out):
    # numba's arrays: items per thread (4) and bins come from their shapes
    counts = cuda.shared.array(BINS, numba.uint32)
    samples = cuda.local.array(4, numba.uint8)
    histo = coop.block.histogram(samples, counts)
    histo.init()
    cuda.syncthreads()
    base = cuda.blockIdx.x * cuda.blockDim.x * 4
    coop.block.load(d_in[base:], samples, algorithm="striped")
    histo.composite(samples)
    cuda.syncthreads()
    for b in range(cuda.threadIdx.x, BINS, cuda.blockDim.x):
        d_out[cuda.blockIdx.x * BINS + b] = counts[b]


def case_histogram_of_numba_arrays(rng):
    threads, blocks = 64, 3
    x = rng.integers(0, BINS, blocks * threads * 4, dtype=np.uint8)
    want = np.stack([np.bincount(t, minlength=BINS) for t in x.reshape(blocks, -1)])

    def check(arrays):
        np.testing.assert_array_equal(arrays[1].reshape(blocks, BINS), want)
    return Case(histogram_of_numba_arrays, blocks, threads,
                (x, np.zeros(blocks * BINS, np.uint32)), check)


RUNS, DECODED = 2, 4  # runs and decoded items per thread
RUN_LENGTH = coop.block.run_length(np.uint32, 32, RUNS, DECODED, decoded_offset_dtype=np.uint32)


@cuda.jit
def run_length_object_full_call(d_values, d_lengths, d_items, d_offsets, d_total):
    values = coop.local.array(RUNS, dtype=d_values.dtype)
    lengths = coop.local.array(RUNS, dtype=d_lengths.dtype)
    coop.block.load(d_values, values)
    coop.block.load(d_lengths, lengths)
    total = coop.local.array(1, dtype=np.uint32)
    total[0] = 0
    # the object called with the single-phase arguments again, its constants included
    decoder = RUN_LENGTH(values, lengths, RUNS, DECODED, total, decoded_offset_dtype=np.uint32)
    items = coop.local.array(DECODED, dtype=d_values.dtype)
    offsets = coop.local.array(DECODED, dtype=d_lengths.dtype)
    decoder.decode(items, 0, offsets)
    for i in range(DECODED):
        d_items[cuda.threadIdx.x * DECODED + i] = items[i]
        d_offsets[cuda.threadIdx.x * DECODED + i] = offsets[i]
    if cuda.threadIdx.x == 0:
        d_total[0] = total[0]


def case_run_length_object_full_call(rng):
    window = 32 * DECODED
    values = rng.permutation(32 * RUNS).astype(np.uint32)
    lengths = rng.integers(1, 4, 32 * RUNS).astype(np.uint32)
    items = np.repeat(values, lengths)[:window]
    offsets = np.concatenate([np.arange(n) for n in lengths]).astype(np.uint32)[:window]

    def check(arrays):
        np.testing.assert_array_equal(arrays[2][:len(items)], items)
        np.testing.assert_array_equal(arrays[3][:len(items)], offsets)
        assert arrays[4][0] == lengths.sum()
    return Case(run_length_object_full_call, 1, 32,
                (values, lengths, np.zeros(window, np.uint32), np.zeros(window, np.uint32),
                 np.zeros(1, np.uint32)), check)


def keys_before(a, b):
    return a < b


WARP_SORT = coop.warp.make_merge_sort_keys(numba.int16, 3, keys_before)  # (dtype, ipt, op)


@cuda.jit
def warp_sorts_of_every_warp(d_in, d_out):
    lane, warp = cuda.threadIdx.x % 32, cuda.threadIdx.x // 32
    keys = cuda.local.array(3, dtype=np.int16)
    base = (cuda.blockIdx.x * cuda.blockDim.x + warp * 32) * 3
    for i in range(3):
        keys[i] = d_in[base + lane * 3 + i]
    WARP_SORT(keys)
    for i in range(3):
        d_out[base + lane * 3 + i] = keys[i]


def case_warp_sorts_of_every_warp(rng):
    threads, blocks = 256, 2
    x = rng.integers(-30000, 30000, blocks * threads * 3, dtype=np.int16)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], np.sort(x.reshape(-1, 96), axis=1).ravel())
    return Case(warp_sorts_of_every_warp, blocks, threads, (x, np.zeros_like(x)), check)


def case_exclusive_scan_object_python_operator(rng):
    """No initial value with a Python operator: coopgen.coop starts from 0, as cuda.coop does
    (coopgen.block would leave thread 0's first output undefined, as CUB does)."""
    threads, ipt = 128, 4
    scan = coop.block.make_exclusive_scan(numba.int32, threads, ipt, scan_op=larger)
    nbytes = scan.temp_storage_bytes

    @cuda.jit
    def kernel(d_in, d_out):
        storage = cuda.shared.array(shape=nbytes, dtype=numba.uint8)
        items = cuda.local.array(ipt, dtype=numba.int32)
        load_tile(d_in, items)
        scan(storage, items, items)
        store_tile(items, d_out)

    x = rng.integers(-1000, 1000, threads * ipt, dtype=np.int32)

    def check(arrays):
        seeded = np.maximum.accumulate(np.concatenate([[0], x[:-1]])).astype(np.int32)
        np.testing.assert_array_equal(arrays[1], seeded)
    return Case(kernel, 1, threads, (x, np.zeros_like(x)), check)


def add(a, b):
    return a + b


def case_exclusive_scan_object_prefix_state_after_arrays(rng):
    """A scan object declared with a prefix callback takes its state after the two arrays."""
    threads, ipt = 64, 3
    start = int(rng.integers(-100, 100))
    scan = coop.block.make_exclusive_scan(numba.int32, threads, ipt, scan_op=add,
                                          prefix_op=TILE_TOTAL)
    nbytes = scan.temp_storage_bytes

    @cuda.jit
    def kernel(d_in, d_out):
        storage = cuda.shared.array(shape=nbytes, dtype=numba.uint8)
        state = cuda.local.array(1, dtype=TILE_TOTAL_STATE)
        state[0] = TileTotal(start)
        items = cuda.local.array(ipt, dtype=numba.int32)
        load_tile(d_in, items)
        scan(storage, items, items, state)
        store_tile(items, d_out)

    x = rng.integers(-1000, 1000, threads * ipt, dtype=np.int32)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], start + np.cumsum(x) - x)
    return Case(kernel, 1, threads, (x, np.zeros_like(x)), check)


def larger_first(a, b):
    return a > b


def case_merge_sort_object_call_repeats_its_constants(rng):
    """cuda.coop's merge sort objects may be called with items_per_thread and the operator
    again (sort(keys, ipt, op)), or with values after the keys (sort(keys, values))."""
    threads, ipt = 64, 2
    keys_only = coop.block.merge_sort_keys(numba.int32, threads, ipt, larger_first)
    pairs = coop.block.merge_sort_keys(numba.int32, threads, ipt, larger_first,
                                       value_dtype=numba.int32)

    @cuda.jit
    def kernel(d_in, d_out, d_keys, d_vals):
        keys = coop.local.array(ipt, dtype=numba.int32)
        load_tile(d_in, keys)
        keys_only(keys, ipt, larger_first)
        store_tile(keys, d_out)
        load_tile(d_in, keys)
        vals = coop.local.array(ipt, dtype=numba.int32)
        for i in range(ipt):
            vals[i] = cuda.threadIdx.x * ipt + i
        pairs(keys, vals)
        store_tile(keys, d_keys)
        store_tile(vals, d_vals)

    x = rng.permutation(threads * ipt).astype(np.int32)
    order = np.argsort(-x, kind="stable")

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], x[order])
        np.testing.assert_array_equal(arrays[2], x[order])
        np.testing.assert_array_equal(arrays[3], order)
    return Case(kernel, 1, threads, (x, np.zeros_like(x), np.zeros_like(x), np.zeros_like(x)),
                check)


def total_before(a, b):  # cuda.coop's comparison of struct items: on pointers
    return a[0].total < b[0].total


STRUCT_SORT = coop.block.merge_sort_keys(TILE_TOTAL_STATE, 64, 3, total_before)


@cuda.jit
def merge_sort_of_struct_items(d_in, d_out):
    items = coop.local.array(3, dtype=TILE_TOTAL_STATE)
    for i in range(3):
        items[i] = TileTotal(d_in[cuda.threadIdx.x * 3 + i])
    STRUCT_SORT(items)
    for i in range(3):
        d_out[cuda.threadIdx.x * 3 + i] = items[i].total


def case_merge_sort_of_struct_items(rng):
    x = rng.integers(-10 ** 6, 10 ** 6, 64 * 3, dtype=np.int32)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], np.sort(x))
    return Case(merge_sort_of_struct_items, 1, 64, (x, np.zeros_like(x)), check)


RANK_BITS = (2, 7)
RANK = coop.block.radix_rank(numba.uint32, 64, 3, *RANK_BITS, descending=True)


@cuda.jit
def radix_rank_object_full_call(d_in, d_out):
    keys = cuda.local.array(3, numba.uint32)
    ranks = cuda.local.array(3, numba.int32)
    load_tile(d_in, keys)
    # the object called with the single-phase arguments again, its constants included
    RANK(keys, ranks, 3, RANK_BITS[0], RANK_BITS[1], True)
    store_tile(ranks, d_out)


def case_radix_rank_object_full_call(rng):
    x = rng.integers(0, 1 << 16, 64 * 3, dtype=np.uint32)
    digits = (x >> RANK_BITS[0]) & ((1 << (RANK_BITS[1] - RANK_BITS[0])) - 1)
    # descending digits: a digit's ranks start after the items of every larger digit
    first = {d: int((digits > d).sum()) for d in np.unique(digits)}

    def check(arrays):
        ranks = arrays[1]
        np.testing.assert_array_equal(np.sort(ranks), np.arange(len(x)))
        for d, r in zip(digits, ranks):
            assert first[d] <= r < first[d] + (digits == d).sum()
    return Case(radix_rank_object_full_call, 1, 64, (x, np.zeros(len(x), np.int32)), check)


def case_warp_scan_object_initial_value_positional(rng):
    # ws(x, init): cuda.coop's second positional is the initial value, never CCCL 3.5.0's
    # valid_items (a valid count of 0 left every lane undefined)
    ws = coop.warp.exclusive_scan(dtype=numba.int32, scan_op="max", initial_value=0)
    init = numba.int32(rng.integers(-500, 500))

    @cuda.jit
    def kernel(d_in, d_out):
        t = cuda.threadIdx.x
        d_out[t] = ws(d_in[t], init)

    x = rng.integers(-1000, 1000, 64, dtype=np.int32)
    want = np.concatenate([np.maximum.accumulate(np.concatenate([[init], w[:-1]]))
                           for w in x.reshape(2, 32)]).astype(np.int32)
    want = np.maximum(want, init)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], want)
    return Case(kernel, 1, 64, (x, np.zeros_like(x)), check)


def case_warp_load_object_valid_count_positional(rng):
    # wl(src, dst, num_valid, oob): the host call's valid count may be passed again by position
    ipt = 4
    wl = coop.warp.load(numba.int32, ipt, 32, "striped", 50)
    valid = int(rng.integers(1, 32 * ipt))

    @cuda.jit
    def kernel(d_in, d_out, n):
        items = cuda.local.array(ipt, numba.int32)
        wl(d_in, items, n, -7)
        for i in range(ipt):
            d_out[cuda.threadIdx.x * ipt + i] = items[i]

    x = rng.integers(-1000, 1000, 32 * ipt, dtype=np.int32)
    striped = np.where(np.arange(32 * ipt) < valid, x, -7).reshape(ipt, 32)
    want = striped.T.reshape(-1)  # thread t holds items t, t+32, ... (striped)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], want)
    return Case(kernel, 1, 32, (x, np.zeros_like(x), valid), check)


CASES = [case_radix_rank_object_full_call, case_merge_sort_of_struct_items, case_merge_sort_object_call_repeats_its_constants,
         case_exclusive_scan_object_python_operator,
         case_exclusive_scan_object_prefix_state_after_arrays, case_warp_sorts_of_every_warp, case_run_length_object_full_call, case_radix_sort_object_bit_range_after_keys, case_histogram_of_numba_arrays,
         case_exclusive_sum_object_prefix_one_item, case_inclusive_sum_object_prefix_array,
         case_inclusive_scan_object_initial_value_in_call,
         case_inclusive_scan_object_initial_value_again,
         case_warp_scan_object_initial_value_positional,
         case_warp_load_object_valid_count_positional]

# cuda.coop's documented prefix callbacks (prefix_kernels.py)
from prefix_kernels import CASES as _PREFIX_CASES  # noqa: E402

CASES += _PREFIX_CASES

# two-phase primitives in a gpu_dataclass, every way of sharing temp storage (dataclass_kernels.py)
from dataclass_kernels import CASES as _DATACLASS_CASES  # noqa: E402

CASES += _DATACLASS_CASES

# more call forms of cuda.coop code (suite_kernels.py)
from suite_kernels import CASES as _SUITE_CASES  # noqa: E402

CASES += _SUITE_CASES

# cuda.coop's registrations through numba.core.extending, scalar shifts, ThreadData sugar
from registration_kernels import CASES as _REGISTRATION_CASES  # noqa: E402

CASES += _REGISTRATION_CASES
