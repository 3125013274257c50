"""Misuse of cuda.coop's group-first API is a compile-time error naming the call, the argument,
what was given and what is allowed."""
import numpy as np
import pytest
from numba import cuda

from coopgen import coop
from coopgen.linkcheck import link_as_launched


def warp_group_to_block_call(d_in, d_out):
    items = coop.ThreadData(4, dtype=d_in.dtype)
    coop.radix_sort_keys(coop.this_warp(), items)


def bits_past_the_key(d_in, d_out):
    block = coop.this_block()
    items = coop.ThreadData(4, dtype=np.int32)
    coop.load(block, d_in, items)
    coop.store(block, d_out, coop.radix_sort_keys(block, items, begin_bit=0, end_bit=40))


def unknown_algorithm(d_in, d_out):
    block = coop.this_block()
    items = coop.ThreadData(4, dtype=d_in.dtype)
    coop.load(block, d_in, items, algorithm="warp_shuffle")


def unknown_operator(d_in, d_out):
    block = coop.this_block()
    items = coop.ThreadData(4, dtype=d_in.dtype)
    coop.load(block, d_in, items)
    d_out[0] = coop.reduce(block, items, binary_op="avg")


def lengths_differ(d_in, d_out):
    block = coop.this_block()
    keys = coop.ThreadData(4, dtype=d_in.dtype)
    values = coop.ThreadData(3, dtype=d_in.dtype)
    coop.load(block, d_in, keys)
    coop.radix_sort_pairs(block, keys, values)


def logical_warp_of_40(d_in, d_out):
    coop.sum(coop.this_warp().group_by(40), d_in[0])


def misspelt_keyword(d_in, d_out):
    d_out[0] = coop.sum(coop.this_block(), d_in[0], valid_itemz=3)


def no_group(d_in, d_out):
    d_out[0] = coop.sum(d_in, d_out)


def decode_into_without_items(d_in, d_out):
    block = coop.this_block()
    runs = coop.ThreadData(2, dtype=d_in.dtype)
    coop.load(block, d_in, runs)
    d_out[0] = coop.run_length_decode_into(block, runs, runs, d_out)


def decode_window_by_a_warp(d_in, d_out):
    runs = coop.ThreadData(2, dtype=d_in.dtype)
    coop.run_length_decode(coop.this_warp(), runs, runs, decoded_items_per_thread=2)


def unknown_mode(d_in, d_out):
    block = coop.this_block()
    items = coop.ThreadData(4, dtype=d_in.dtype)
    coop.load(block, d_in, items)
    coop.exchange(block, items, mode="diagonal")


def histogram_without_bins(d_in, d_out):
    block = coop.this_block()
    items = coop.ThreadData(4, dtype=d_in.dtype)
    coop.load(block, d_in, items)
    coop.histogram(block, items)


def too_many_positionals(d_in, d_out):
    d_out[0] = coop.sum(coop.this_block(), d_in[0], 3)


def _running(state, total):
    previous = state[0]
    state[0] = previous + total
    return previous


RUNNING = coop.StatefulFunction(cuda.jit(device=True)(_running), np.int64)


def stateful_prefix_without_state(d_in, d_out):
    d_out[0] = coop.exclusive_sum(coop.this_block(), d_in[0], prefix_op=RUNNING)


def two_prefix_callbacks(d_in, d_out):
    state = coop.ThreadData(1, dtype=np.int64)
    d_out[0] = coop.exclusive_sum(coop.this_block(), d_in[0], state, prefix_op=RUNNING,
                                  block_prefix_callback_op=RUNNING)


def short_atomic_counters(d_in, d_out):
    block = coop.this_block()
    items = coop.ThreadData(4, dtype=d_in.dtype)
    coop.load(block, d_in, items)
    coop.histogram(block, items, bins=64, counter_dtype=np.int16)


def mapped_warps_load(d_in, d_out):
    items = coop.ThreadData(4, dtype=d_in.dtype)
    coop.load(coop.this_block().group_by(2), d_in, items)


def mapped_warps_sum_of_items(d_in, d_out):
    items = coop.ThreadData(4, dtype=d_in.dtype)
    coop.load(coop.this_block(), d_in, items)
    d_out[0] = coop.sum(coop.this_block().group_by(2), items)


def warp_scan_of_no_lanes(d_in, d_out):
    d_out[0] = coop.inclusive_sum(coop.this_warp().group_by(8), d_in[0], valid_items=0)


def logical_warp_rank_in_a_block(d_in, d_out):
    d_out[0] = coop.this_warp().group_by(8).rank("block")


def grid_sum(d_in, d_out):
    d_out[0] = coop.sum(coop.this_grid(), d_in[0])


def grid_sync(d_in, d_out):
    coop.this_grid().sync()


def cluster_reduce(d_in, d_out):
    d_out[0] = coop.reduce(coop.this_cluster(), d_in[0], binary_op="max")


def negative_window_offset(d_in, d_out):
    block = coop.this_block()
    runs = coop.ThreadData(2, dtype=d_in.dtype)
    coop.load(block, d_in, runs)
    coop.store(block, d_out, coop.run_length_decode(block, runs, runs, decoded_items_per_thread=2,
                                                    decoded_window_offset=-1))


CASES = [
    (warp_group_to_block_call, r"coop.radix_sort_keys: the group this_warp\(\) does not fit "
                               r"this call; it takes coop.this_block\(\)"),
    (bits_past_the_key, r"coop.radix_sort_keys: the bit range \[begin_bit=0, end_bit=40\) is "
                        r"not within the 32-bit int32 keys"),
    (unknown_algorithm, r"unknown algorithm='warp_shuffle'; allowed: 'direct', 'striped'"),
    (unknown_operator, r"unknown reduction_op='avg'; built-ins: '\+'"),
    (lengths_differ, r"array 'values' has 3 items but array 'keys' has 4"),
    (logical_warp_of_40, r"group_by: count=40 threads; allowed: 1 to 32"),
    (misspelt_keyword, r"coop.sum: unknown keyword 'valid_itemz' for this_block\(\); allowed: "
                       r"value, broadcast, valid_items"),
    (no_group, r"coop.sum: the first argument must be a group"),
    (decode_into_without_items, r"coop.run_length_decode_into: decoded_items_per_thread=None "
                                r"must be a positive integer constant \(it is required\)"),
    (decode_window_by_a_warp, r"coop.run_length_decode: the group this_warp\(\) does not fit "
                              r"this call; it takes coop.this_block\(\)"),
    (unknown_mode, r"coop.exchange: unknown mode='diagonal'; allowed: 'striped_to_blocked'"),
    (histogram_without_bins, r"coop.histogram: bins=None must be a positive integer constant"),
    (too_many_positionals, r"coop.sum: takes 2 positional arguments \(group, value\), got 3"),
    (stateful_prefix_without_state, r"coop.exclusive_sum: prefix_op=_running \(a "
                                    r"StatefulFunction\) needs its state array"),
    (two_prefix_callbacks, r"coop.exclusive_sum: pass prefix_op= or block_prefix_callback_op=, "
                           r"not both"),
    (short_atomic_counters, r"coop.histogram: counter_dtype=int16 has no atomic add \(the "
                            r"atomic algorithm's\); allowed: int32, uint32, int64, uint64"),
    (mapped_warps_load, r"coop.load: the group this_block\(\).group_by\(2\) does not fit this "
                        r"call; it takes coop.this_block\(\) or coop.this_warp\(\)"),
    (mapped_warps_sum_of_items, r"coop.sum: over this_block\(\).group_by\(2\) takes one value a "
                                r"thread \(a scalar\), not a per-thread array"),
    (warp_scan_of_no_lanes, r"coop.inclusive_sum: valid_items=0 is outside \[1, 8\]"),
    (logical_warp_rank_in_a_block, r"coop.this_warp\(\).group_by\(8\).rank: not available for "
                                   r"this group at level='block'"),
    (negative_window_offset, r"coop.run_length_decode: decoded_window_offset=-1 is outside "
                             r"\[0, inf\]"),
]

#: cuda.coop's NotImplementedError for groups without collectives (its "common V1" profile's)
UNSERVED = [
    (grid_sum, r"coop.sum: the group this_grid\(\) has no collective calls in cuda.coop's "
               r"common V1 profile"),
    (grid_sync, r"coop.this_grid\(\).sync: not available for this group.*common V1"),
    (cluster_reduce, r"coop.reduce: the group this_cluster\(\) \(a thread-block cluster\) has "
                     r"no collective calls in coopgen yet \(its rank, count, is_member and sync "
                     r"work\); this call takes coop.this_block\(\)"),
]


@pytest.mark.parametrize("kernel, message", CASES, ids=[c[0].__name__ for c in CASES])
def test_misuse_is_a_clear_compile_time_error(kernel, message):
    x = np.zeros(512, np.int32)
    with pytest.raises(Exception, match=message):
        link_as_launched(cuda.jit(kernel), 128, x, x)


@pytest.mark.parametrize("kernel, message", UNSERVED, ids=[c[0].__name__ for c in UNSERVED])
def test_groups_without_collectives_are_not_implemented(kernel, message):
    x = np.zeros(512, np.int32)
    with pytest.raises(NotImplementedError, match=message):
        link_as_launched(cuda.jit(kernel), 128, x, x)
