"""Combinations CUB does not handle (generator/data/limits.toml) are compile-time errors that
name the primitive, what was given and why; the same calls without the bad part compile."""
import numpy as np
import pytest
from numba import cuda, types
from numba.core.errors import TypingError as CoreTypingError
from numba.cuda.core.errors import TypingError as CudaTypingError

import coopgen
from coopgen import block, local

I32 = types.int32[::1]
TypingError = (CoreTypingError, CudaTypingError)


def typecheck(kernel, threads):
    with coopgen.block_shape(threads):
        cuda.compile_all(kernel, (I32, I32), device=False, abi="numba", cc=(9, 0),
                         output="ltoir")


def scatter_guarded(slicing):
    def k(d_in, d_out):
        a = local.array(4, np.int32)
        b = local.array(4, np.int32)
        r = local.array(4, np.int32)
        for i in range(4):
            a[i] = d_in[i]
            r[i] = d_in[i + 4]
        block.BlockExchange.ScatterToStripedGuarded(input_items=a, output_items=b, ranks=r,
                                                    warp_time_slicing=slicing)
        d_out[0] = b[0]
    return k


def nondeterministic_sum(partial, op):
    def k(d_in, d_out):
        x = d_in[cuda.threadIdx.x]
        if partial:
            s = block.BlockReduce.Sum(input=x, num_valid=d_in[0],
                                      algorithm="warp_reductions_nondeterministic")
        else:
            s = block.BlockReduce.Reduce(input=x, reduction_op=op,
                                         algorithm="warp_reductions_nondeterministic")
        d_out[0] = s
    return k


@cuda.jit(device=True)
def low_bits(key):
    return key & 15


def rank_match(cls_name, radix_bits):
    cls = getattr(block, cls_name)

    def k(d_in, d_out):
        keys = local.array(4, np.uint32)
        ranks = local.array(4, np.int32)
        for i in range(4):
            keys[i] = d_in[i]
        cls.RankKeys(keys=keys, ranks=ranks, digit_extractor=low_bits, radix_bits=radix_bits,
                     is_descending=False)
        d_out[0] = ranks[0]
    return k


NONDETERMINISTIC = coopgen.model.registry.enums()["BlockReduceAlgorithm"].values
HAS_NONDETERMINISTIC = any("NONDETERMINISTIC" in n for n, _ in NONDETERMINISTIC)


def odd_warp_scan(k_threads):
    from coopgen import warp

    def k(d_in, d_out):
        t = cuda.threadIdx.x
        d_out[t] = warp.WarpScan.InclusiveSum(input=d_in[t], logical_warp_threads=k_threads)
    return k


def early_counts_descending():
    def k(d_in, d_out):
        keys = local.array(4, np.uint32)
        ranks = local.array(4, np.int32)
        for i in range(4):
            keys[i] = d_in[i]
        block.BlockRadixRankMatchEarlyCounts.RankKeys(keys=keys, ranks=ranks,
                                                      digit_extractor=low_bits, radix_bits=5,
                                                      is_descending=True)
        d_out[0] = ranks[0]
    return k


PAIR = np.dtype([("key", np.int32), ("weight", np.float32)])


def warp_exchange_shuffle(dtype):
    from coopgen import warp

    def k(d_in, d_out):
        items = local.array(2, dtype)  # typing is what is checked: no data needed
        warp.WarpExchange.StripedToBlocked(items, items, items_per_thread=2,
                                           logical_warp_threads=2,
                                           warp_exchange_algorithm="warp_exchange_shuffle")
    return k


@pytest.mark.parametrize("kernel, threads, message", [
    (warp_exchange_shuffle(PAIR), 64, r"WarpExchange.StripedToBlocked: warp_exchange_algorithm="
                                      r"WARP_EXCHANGE_SHUFFLE, items of .* is not supported: "
                                      r"CUB's shuffle exchange"),
    (odd_warp_scan(12), 96, r"WarpScan.InclusiveSum: logical_warp_threads=12 in a block of 96 "
                            r"threads is not supported: CUB syncs"),
    (early_counts_descending(), 128, r"is_descending=true is not supported"),
    (scatter_guarded(True), 128, r"ScatterToStripedGuarded: warp_time_slicing=true is not "
                                 r"supported: CUB's guarded and flagged scatters ignore"),
    (rank_match("BlockRadixRankMatch", 4), (32, 4), r"BlockRadixRankMatch.RankKeys: "
                                                    r"threads_per_block=\(32, 4, 1\) is not"),
    (rank_match("BlockRadixRankMatchEarlyCounts", 4), 128, r"radix_bits=4 \(< 5\) is not "
                                                          r"supported: CUB's"),
], ids=["shuffle-exchange-of-records", "odd-logical-warps", "early-counts-descending", "time-sliced-guarded-scatter",
        "rank-match-2d", "early-counts-16-digits"])
def test_cub_limits_are_clear_errors(kernel, threads, message):
    with pytest.raises(TypingError, match=message):
        typecheck(kernel, threads)


@pytest.mark.skipif(not HAS_NONDETERMINISTIC, reason="this CCCL has no nondeterministic reduce")
@pytest.mark.parametrize("kernel, message", [
    (nondeterministic_sum(True, None), r"BlockReduce.Sum: algorithm=BLOCK_REDUCE_WARP_REDUCTIONS"
                                       r"_NONDETERMINISTIC, with num_valid is not supported"),
    (nondeterministic_sum(False, "max"), r"reduction_op=::cuda::maximum<>\{\} is not supported"),
], ids=["partial-tile", "max"])
def test_nondeterministic_reduce_is_for_full_tile_sums(kernel, message):
    with pytest.raises(TypingError, match=message):
        typecheck(kernel, 128)


def test_the_same_calls_within_cub_limits_typecheck():
    typecheck(warp_exchange_shuffle(np.int32), 64)
    typecheck(odd_warp_scan(12), 12)  # the block is one logical warp
    typecheck(odd_warp_scan(16), 96)
    typecheck(scatter_guarded(False), 128)
    typecheck(rank_match("BlockRadixRankMatch", 4), 128)
    typecheck(rank_match("BlockRadixRankMatchEarlyCounts", 5), 128)
    if HAS_NONDETERMINISTIC:
        typecheck(nondeterministic_sum(False, "+"), 128)
