"""More of the call forms cuda.coop code uses, written with ``from coopgen import coop``, with
numpy checks: the scalar Offset/Rotate shuffle named by cuda.coop's enum, a radix sort object
made with the bit range after items_per_thread, scan objects made with items_per_thread before
the operator, a discontinuity object whose call asks for tails, a merge sort comparator taking
complex items through pointers, and a ThreadData exchanged across a warp.

Each ``case_*`` returns a coop_kernels.Case; tests/gpu/compat/test_coop_containers.py launches
them, tests/cpu/test_coop_compile.py links them for sm_90 as their launches would.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import cuda

from coop_kernels import Case
from coopgen import coop

SHUFFLE_THREADS, OFFSET_DISTANCE, ROTATE_DISTANCE = 64, 5, 3


@cuda.jit
def shuffle_offset_and_rotate(d_in, d_offset, d_rotate):
    tid = cuda.threadIdx.x
    value = d_in[tid]
    shifted = coop.block.shuffle(value, block_shuffle_type=coop.block.BlockShuffleType.Offset,
                                 distance=OFFSET_DISTANCE)
    rotated = coop.block.shuffle(value, block_shuffle_type=coop.block.BlockShuffleType.Rotate,
                                 distance=ROTATE_DISTANCE)
    d_offset[tid] = -1
    if tid + OFFSET_DISTANCE < SHUFFLE_THREADS:  # the others get no item
        d_offset[tid] = shifted
    d_rotate[tid] = rotated


def case_shuffle_offset_and_rotate_by_enum(rng):
    """Thread t gets thread t + distance's item (CUB's Offset), or (t + distance) mod n's."""
    x = rng.integers(-1000, 1000, SHUFFLE_THREADS, dtype=np.int32)
    want_offset = np.full_like(x, -1)
    want_offset[:-OFFSET_DISTANCE] = x[OFFSET_DISTANCE:]

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], want_offset)
        np.testing.assert_array_equal(arrays[2], np.roll(x, -ROTATE_DISTANCE))
    return Case(shuffle_offset_and_rotate, 1, SHUFFLE_THREADS,
                (x, np.zeros_like(x), np.zeros_like(x)), check)


def _both_ways(ipt, first, second):
    """A kernel giving thread t's int32 items d_in[t * ipt:][:ipt] to the device functions
    ``first`` and ``second`` (a copy each), storing their results in d_first and d_second."""
    @cuda.jit
    def kernel(d_in, d_first, d_second):
        a = cuda.local.array(ipt, numba.int32)
        b = cuda.local.array(ipt, numba.int32)
        for i in range(ipt):
            a[i] = b[i] = d_in[cuda.threadIdx.x * ipt + i]
        first(a)
        second(b)
        for i in range(ipt):
            d_first[cuda.threadIdx.x * ipt + i] = a[i]
            d_second[cuda.threadIdx.x * ipt + i] = b[i]
    return kernel


def case_radix_sort_object_made_with_bit_range(rng):
    """cuda.coop code passes (begin_bit, end_bit) where its order has value_dtype: numba ints,
    which name int32 as a dtype. A call without values sorts the keys alone."""
    threads, ipt = 64, 2
    begin_bit, end_bit = numba.int32(0), numba.int32(32)
    ascending = coop.block.radix_sort_keys(numba.int32, threads, ipt, begin_bit, end_bit)
    descending = coop.block.radix_sort_keys_descending(numba.int32, threads, ipt, begin_bit,
                                                       end_bit)

    @cuda.jit(device=True)
    def up(keys):
        ascending(keys, ipt, begin_bit, end_bit)

    @cuda.jit(device=True)
    def down(keys):
        descending(keys, ipt, begin_bit, end_bit)

    x = rng.integers(-2**31, 2**31, threads * ipt, dtype=np.int64).astype(np.int32)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], np.sort(x))
        np.testing.assert_array_equal(arrays[2], np.sort(x)[::-1])
    return Case(_both_ways(ipt, up, down), 1, threads, (x, np.zeros_like(x), np.zeros_like(x)),
                check)


@cuda.jit(device=True)
def add_items(a, b):
    return a + b


def case_scan_objects_made_with_items_per_thread_first(rng):
    """exclusive_scan(dtype, threads, items_per_thread, op), as cuda.coop code writes it (its
    documented order has the operator third): a Python operator's exclusive scan starts from
    0."""
    threads, ipt = 128, 4
    exclusive = coop.block.exclusive_scan(numba.int32, threads, ipt, add_items)
    inclusive = coop.block.inclusive_scan(numba.int32, threads, ipt, add_items)

    @cuda.jit(device=True)
    def scan_exclusive(items):
        exclusive(items, items)

    @cuda.jit(device=True)
    def scan_inclusive(items):
        inclusive(items, items)

    x = rng.integers(-1000, 1000, threads * ipt, dtype=np.int32)
    running = np.cumsum(x, dtype=np.int32)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], running - x)
        np.testing.assert_array_equal(arrays[2], running)
    return Case(_both_ways(ipt, scan_exclusive, scan_inclusive), 1, threads,
                (x, np.zeros_like(x), np.zeros_like(x)), check)


@cuda.jit(device=True)
def differ(a, b):
    return numba.int32(1 if a != b else 0)


def case_discontinuity_object_called_for_tails(rng):
    """Two objects made alike (HEADS by default); the call picks CUB's FlagTails for one."""
    threads, ipt = 128, 4
    heads = coop.block.discontinuity(np.uint32, threads, ipt, flag_op=differ,
                                     flag_dtype=np.int32)
    tails = coop.block.discontinuity(np.uint32, threads, ipt, flag_op=differ,
                                     flag_dtype=np.int32)
    kinds = coop.block.BlockDiscontinuityType

    @cuda.jit
    def kernel(d_in, d_heads, d_tails):
        items = coop.local.array(ipt, dtype=d_in.dtype)
        head_flags = coop.local.array(ipt, dtype=np.int32)
        tail_flags = coop.local.array(ipt, dtype=np.int32)
        coop.block.load(d_in, items, items_per_thread=ipt)
        heads(items, head_flags, flag_op=differ, block_discontinuity_type=kinds.HEADS)
        cuda.syncthreads()
        tails(items, tail_flags, flag_op=differ, block_discontinuity_type=kinds.TAILS)
        coop.block.store(d_heads, head_flags, items_per_thread=ipt)
        coop.block.store(d_tails, tail_flags, items_per_thread=ipt)

    x = rng.integers(0, 4, threads * ipt).astype(np.uint32)  # runs of equal items
    want_heads = np.ones(x.size, np.int32)
    want_heads[1:] = x[1:] != x[:-1]
    want_tails = np.ones(x.size, np.int32)
    want_tails[:-1] = x[:-1] != x[1:]

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], want_heads)
        np.testing.assert_array_equal(arrays[2], want_tails)
    zeros = np.zeros(x.size, np.int32)
    return Case(kernel, 1, threads, (x, zeros, zeros.copy()), check)


@cuda.jit(device=True)
def real_part_larger(a, b):
    return a[0].real > b[0].real  # cuda.coop passes such items by pointer


MERGE_IPT = 3


@cuda.jit
def sort_complex_by_real_part(d_in, d_out):
    items = cuda.local.array(MERGE_IPT, dtype=np.complex128)
    for i in range(MERGE_IPT):
        items[i] = d_in[cuda.threadIdx.x * MERGE_IPT + i]
    coop.block.merge_sort_keys(items, MERGE_IPT, real_part_larger)
    for i in range(MERGE_IPT):
        d_out[cuda.threadIdx.x * MERGE_IPT + i] = items[i]


def case_merge_sort_complex_comparator_on_pointers(rng):
    threads = 128
    n = threads * MERGE_IPT
    x = (rng.random(n) + 1j * rng.random(n)).astype(np.complex128)

    def check(arrays):
        got = arrays[1]
        np.testing.assert_array_equal(got.real, np.sort(x.real)[::-1])
        np.testing.assert_array_equal(np.sort_complex(got), np.sort_complex(x))  # a permutation
    return Case(sort_complex_by_real_part, 1, threads, (x, np.zeros_like(x)), check)


WARP_IPT = 4


@cuda.jit
def warp_exchange_thread_data(d_in, d_out):
    lane = cuda.threadIdx.x
    striped = coop.ThreadData(WARP_IPT, dtype=numba.int32)
    blocked = cuda.local.array(WARP_IPT, dtype=numba.int32)
    for i in range(WARP_IPT):
        striped[i] = d_in[i * 32 + lane]
    coop.warp.exchange(striped, blocked, items_per_thread=WARP_IPT,
                       warp_exchange_type=coop.warp.WarpExchangeType.StripedToBlocked,
                       threads_in_warp=32)
    for i in range(WARP_IPT):
        d_out[lane * WARP_IPT + i] = blocked[i]


def case_warp_exchange_of_thread_data(rng):
    """A ThreadData is a local array in coopgen: warp.exchange takes it (cuda.coop refuses)."""
    x = rng.integers(-1000, 1000, 32 * WARP_IPT, dtype=np.int32)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], x)
    return Case(warp_exchange_thread_data, 1, 32, (x, np.zeros_like(x)), check)


CASES = [case_shuffle_offset_and_rotate_by_enum, case_radix_sort_object_made_with_bit_range,
         case_scan_objects_made_with_items_per_thread_first,
         case_discontinuity_object_called_for_tails,
         case_merge_sort_complex_comparator_on_pointers, case_warp_exchange_of_thread_data]
