"""Kernels written with cuda.coop.numba_mlir's single-phase calls (``coop._block.*``,
``coop._warp.*``) in the forms NVIDIA's suite uses: values passed positionally after the
arrays, ``name=True`` declaring a positional tile item or valid count, ``keys=``/``key_dtype=``
naming dtypes, ``offset=``; two-phase radix sorts called with their bit range or values; and
qualified group calls (``radix_rank_keys``, a ThreadData typed by the cast of its items).

A case is ``Case(name, make, inputs, want)``: ``make(cuda)`` returns the kernel (one block of
``THREADS`` threads), ``inputs(rng)`` its numpy arguments, ``want(args)`` {argument index:
expected array}. tests/gpu/test_single_phase.py runs them on a GPU; tests/cpu links each once
per compiler.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from coopgen.coop import numba_mlir as coop

THREADS, ITEMS = 32, 2
N = THREADS * ITEMS
_block, _warp = coop._block, coop._warp


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    make: object
    inputs: object
    want: object


def sub(a, b):
    return a - b


def different(a, b):
    return a != b


def less(a, b):
    return a < b


def _blocked(x):
    return x.reshape(THREADS, ITEMS)


def _movers(cuda):
    """(load, store) device functions of this compiler, blocked and striped."""
    def load(d, items, striped):
        t = cuda.threadIdx.x
        for i in range(ITEMS):
            items[i] = d[t + i * THREADS] if striped else d[t * ITEMS + i]

    def store(d, items, striped):
        t = cuda.threadIdx.x
        for i in range(ITEMS):
            d[t + i * THREADS if striped else t * ITEMS + i] = items[i]

    return cuda.jit(device=True)(load), cuda.jit(device=True)(store)


def _values(rng):
    return (np.arange(N, dtype=np.int32) % 7) * 3 + rng.integers(0, 2, N).astype(np.int32)


# --- adjacent difference and discontinuity: tile items and valid counts positional ---------

def adjacent(direction, partial=False):
    kind = _block.BlockAdjacentDifferenceType.SubtractLeft if direction == "left" else \
        _block.BlockAdjacentDifferenceType.SubtractRight

    def make(cuda):
        _load, _store = _movers(cuda)

        def body(d_in, d_out, valid, tile):
            items = cuda.local.array(ITEMS, np.int32)
            out = cuda.local.array(ITEMS, np.int32)
            _load(d_in, items, False)
            if partial:
                _block.adjacent_difference(items, out, valid, tile,
                                           block_adjacent_difference_type=kind, dtype="int32",
                                           threads_per_block=THREADS,
                                           items_per_thread=ITEMS, difference_op=sub,
                                           valid_items=True, tile_predecessor_item=True)
            elif direction == "left":
                _block.adjacent_difference(items, out, tile, block_adjacent_difference_type=kind,
                                           items_per_thread=ITEMS, difference_op=sub,
                                           tile_predecessor_item=True)
            else:
                _block.adjacent_difference(items, out, tile, block_adjacent_difference_type=kind,
                                           items_per_thread=ITEMS, difference_op=sub,
                                           tile_successor_item=True)
            _store(d_out, out, False)
        return cuda.jit(body)

    def want(args):
        x, _, valid, tile = args
        out = x.copy() if partial else np.empty_like(x)
        if direction == "left":
            out[0] = x[0] - tile
            end = valid if partial else N
            out[1:end] = x[1:end] - x[:end - 1]
        else:
            out[:-1] = x[:-1] - x[1:]
            out[-1] = x[-1] - tile
        return {1: out}

    return Case(f"adjacent_difference_{direction}{'_partial' * partial}_tile", make,
                lambda rng: [_values(rng), np.zeros(N, np.int32), N - 3, np.int32(-9)], want)


def heads_tile(cuda):
    _load, _store = _movers(cuda)
    @cuda.jit
    def k(d_in, d_heads, tile):
        items = cuda.local.array(ITEMS, np.int32)
        flags = cuda.local.array(ITEMS, np.bool_)
        _load(d_in, items, False)
        _block.discontinuity(items, flags, tile, items_per_thread=ITEMS, flag_op=different,
                             block_discontinuity_type=_block.BlockDiscontinuityType.HEADS,
                             tile_predecessor_item=True)
        _store(d_heads, flags, False)
    return k


def heads_and_tails_tiles(cuda):
    _load, _store = _movers(cuda)
    @cuda.jit
    def k(d_in, d_heads, d_tails, first, last):
        items = cuda.local.array(ITEMS, np.int32)
        heads = cuda.local.array(ITEMS, np.bool_)
        tails = cuda.local.array(ITEMS, np.bool_)
        _load(d_in, items, False)
        _block.discontinuity(items, heads, tails, first, last, dtype="int32",
                             threads_per_block=THREADS, items_per_thread=ITEMS,
                             flag_op=different,
                             block_discontinuity_type=_block.BlockDiscontinuityType.HEADS_AND_TAILS,
                             tile_predecessor_item=True, tile_successor_item=True)
        _store(d_heads, heads, False)
        _store(d_tails, tails, False)
    return k


def _flags(x, first=None, last=None):
    heads = np.concatenate([[x[0] != first], x[1:] != x[:-1]])
    tails = np.concatenate([x[1:] != x[:-1], [x[-1] != last]])
    return heads, tails


# --- exchange: ranks (and flags) positional after the arrays --------------------------------

def scatter(kind, scope="block"):
    striped_in = kind == "ScatterToBlocked"

    def make(cuda):
        _load, _store = _movers(cuda)
        @cuda.jit
        def k(d_in, d_ranks, d_out):
            items = cuda.local.array(ITEMS, np.int32)
            out = cuda.local.array(ITEMS, np.int32)
            ranks = cuda.local.array(ITEMS, np.int32)
            flags = cuda.local.array(ITEMS, np.uint8)
            _load(d_in, items, striped_in)
            _load(d_ranks, ranks, striped_in)
            for i in range(ITEMS):
                flags[i] = ranks[i] % 3 != 0
            if scope == "warp":
                _warp.exchange(items, out, ranks, dtype="int32", items_per_thread=ITEMS,
                               threads_in_warp=THREADS, warp_exchange_type=kind,
                               offset_dtype="int32")
            elif kind == "ScatterToStripedFlagged":
                _block.exchange(items, out, ranks, flags, block_exchange_type=kind,
                                dtype="int32", threads_per_block=THREADS,
                                items_per_thread=ITEMS, offset_dtype="int32",
                                valid_flag_dtype="uint8")
            else:
                _block.exchange(items, out, ranks, block_exchange_type=kind,
                                threads_per_block=THREADS, items_per_thread=ITEMS,
                                offset_dtype="int32")
            _store(d_out, out, not striped_in)
        return k

    def inputs(rng):
        ranks = rng.permutation(N).astype(np.int32)
        if kind == "ScatterToStripedGuarded":
            ranks[::5] = -1  # CUB skips negative ranks
        return [np.arange(N, dtype=np.int32) * 3 + 1, ranks, np.full(N, -7, np.int32)]

    def want(args):
        x, ranks, _ = args
        out = np.full(N, -7, np.int32) if kind != "ScatterToBlocked" else np.empty(N, np.int32)
        keep = ranks >= 0
        if kind == "ScatterToStripedFlagged":
            keep = ranks % 3 != 0
        out[ranks[keep]] = x[keep]
        # ranks a skipped item would fill stay unwritten: compare only where written
        return {2: np.where(np.isin(np.arange(N), ranks[keep]), out, None)}

    return Case(f"{scope}_exchange_{kind}", make, inputs, want)


# --- load and store: valid counts and defaults positional, offset= --------------------------

def load_valid(scope):
    def make(cuda):
        @cuda.jit
        def k(d_in, d_out, valid, oob):
            items = cuda.local.array(ITEMS, np.int32)
            if scope == "warp":
                _warp.load(d_in, items, valid, oob, dtype="int32", items_per_thread=ITEMS,
                           threads_in_warp=THREADS, algorithm="striped")
                _warp.store(d_out, items, valid, items_per_thread=ITEMS,
                            threads_in_warp=THREADS, algorithm="striped")
            else:
                _block.load(d_in, items, valid, oob, dtype="int32", threads_per_block=THREADS,
                            items_per_thread=ITEMS, algorithm="direct")
                _block.store(d_out, items, valid, threads_per_block=THREADS,
                             items_per_thread=ITEMS, algorithm="direct")
        return k

    def want(args):
        x, _, valid, _ = args
        return {1: np.concatenate([x[:valid], np.full(N - valid, -5, np.int32)])}

    return Case(f"{scope}_load_store_valid_oob", make,
                lambda rng: [_values(rng), np.full(N, -5, np.int32), N - 9, np.int32(77)], want)


def load_offset(cuda):
    @cuda.jit
    def k(d_in, d_out, offset):
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        _block.load(d_in, items, offset=offset)
        for i in range(items.items_per_thread):
            items[i] += 1
        _block.store(d_out, items, offset=offset)
    return k


def warp_valid_sum(cuda):
    @cuda.jit
    def k(d_in, d_out, valid):
        t = cuda.threadIdx.x
        total = _warp.sum(d_in[t], valid, dtype="int32", threads_in_warp=THREADS)
        low = _warp.min(d_in[t], valid_items=valid, dtype="int32", threads_in_warp=THREADS)
        if t == 0:
            d_out[0] = total
            d_out[1] = low
    return k


# --- sorts: dtypes by keys=/key_dtype=, two-phase radix calls -------------------------------

def sort_pairs(kind):
    def make(cuda):
        _load, _store = _movers(cuda)
        @cuda.jit
        def k(d_keys, d_values, d_keys_out, d_values_out, valid, oob):
            keys = cuda.local.array(ITEMS, np.int32)
            values = cuda.local.array(ITEMS, np.int32)
            _load(d_keys, keys, False)
            _load(d_values, values, False)
            if kind == "merge":
                _block.merge_sort_pairs(keys, values, keys="int32", values="int32",
                                        threads_per_block=THREADS, items_per_thread=ITEMS,
                                        compare_op=less, valid_items=valid, oob_default=oob)
            elif kind == "warp_merge":
                _warp.merge_sort_pairs(keys, values, keys="int32", values="int32",
                                       items_per_thread=ITEMS, compare_op=less,
                                       threads_in_warp=THREADS)
            else:
                _block.radix_sort_pairs_descending(keys, values, key_dtype="int32",
                                                   value_dtype="int32",
                                                   threads_per_block=THREADS,
                                                   items_per_thread=ITEMS)
            _store(d_keys_out, keys, False)
            _store(d_values_out, values, False)
        return k

    def want(args):
        keys, values, _, _, valid, _ = args
        n = valid if kind == "merge" else N
        order = np.argsort(-keys if kind == "radix" else keys[:n], kind="stable")
        return {2: np.concatenate([keys[:n][order], [None] * (N - n)]),
                3: np.concatenate([values[:n][order], [None] * (N - n)])}

    return Case(f"{kind}_sort_pairs_dtype_keywords", make, lambda rng: [
        rng.permutation(N).astype(np.int32), np.arange(N, dtype=np.int32) + 1000,
        np.zeros(N, np.int32), np.zeros(N, np.int32), N - 5, np.int32(9999)], want)


def radix_two_phase(cuda):
    _load, _store = _movers(cuda)
    bits = _block.make_radix_sort_keys(np.uint32, THREADS, ITEMS, begin_bit=0, end_bit=4)
    pairs = _block.make_radix_sort_keys(np.int32, THREADS, ITEMS, value_dtype=np.int32)
    size, align = bits.temp_storage_bytes, bits.temp_storage_alignment

    @cuda.jit
    def k(d_bits, d_keys, d_values, d_bits_out, d_keys_out, d_values_out):
        low = coop.ThreadData(ITEMS, dtype=d_bits.dtype)
        keys = coop.ThreadData(ITEMS, dtype=d_keys.dtype)
        values = coop.ThreadData(ITEMS, dtype=d_values.dtype)
        temp = coop.TempStorage(size, align)
        _load(d_bits, low, False)
        _load(d_keys, keys, False)
        _load(d_values, values, False)
        bits(low, 0, 4, temp_storage=temp)
        pairs(keys, values)
        _store(d_bits_out, low, False)
        _store(d_keys_out, keys, False)
        _store(d_values_out, values, False)
    return k


def _radix_two_phase_want(args):
    low, keys, values = args[:3]
    order = np.argsort(keys, kind="stable")
    return {3: np.sort(low), 4: keys[order], 5: values[order]}


# --- qualified group calls -------------------------------------------------------------------

def qualified_ranks(cuda):
    @cuda.jit
    def k(source, ranks_out, positions):
        block = coop.this_block()
        keys = coop.ThreadData(ITEMS)
        indices = coop.ThreadData(ITEMS)  # int32, from the cast of what it holds
        coop.load(block, source, keys)
        for item in range(indices.items_per_thread):
            indices[item] = np.int32(block.rank() * ITEMS + item)
        _, ordered = coop.radix_sort_pairs(block, keys, indices, begin_bit=0, end_bit=4)
        ranks = coop.radix_rank_keys(block, keys, begin_bit=0, end_bit=4)
        coop.store(block, ranks_out, ranks)
        coop.store(block, positions, ordered)
    return k


class RunningPrefix:
    def __call__(self_ptr, block_aggregate):
        old = self_ptr[0]
        self_ptr[0] = old + block_aggregate
        return old


def stateful_prefix(cuda):
    # made here, so that the int32 state's callback is this one when the kernel compiles
    prefix = coop.StatefulFunction(RunningPrefix, np.int32, name="running_prefix")

    @cuda.jit
    def k(d_in, d_out, d_final):
        t = cuda.threadIdx.x
        state = cuda.local.array(1, np.int32)
        state[0] = 0
        base = 0
        while base < d_in.size:
            item = cuda.local.array(1, np.int32)
            scanned = cuda.local.array(1, np.int32)
            item[0] = d_in[base + t]
            _block.exclusive_sum(item, scanned, state, dtype="int32", threads_per_block=THREADS,
                                 items_per_thread=1, prefix_op=prefix)
            d_out[base + t] = scanned[0]
            base += THREADS
            cuda.syncthreads()
        if t == 0:
            d_final[0] = state[0]
    return k


def storage_items(cuda):
    @cuda.jit
    def k(output):
        data = coop.ThreadData(2, np.int32, alignment=16)
        scratch = coop.TempStorage(32, alignment=16)  # its bytes, indexed
        data[0] = 7
        data[1] = 11
        scratch[cuda.threadIdx.x % 32] = 13
        output[cuda.threadIdx.x] = data[0] + data[1] + scratch[cuda.threadIdx.x % 32]
    return k


def run_length_fused(offsets: bool):
    """cuda.coop's fused decode made on the host (``rld.decode(...)``): the constructor's
    arguments, then the method's, in one call; with relative offsets, a window offset and
    its temp storage, or the decoded items alone (window 0, CUB's own storage)."""
    def make(cuda):
        rld = _block.run_length(np.int32, THREADS, 2, 4, decoded_offset_dtype=np.uint32)
        decode = rld.decode(np.uint32, np.uint32, with_relative_offsets=offsets,
                            with_decoded_window_offset=offsets, relative_offset_dtype=np.uint32)
        size, align = decode.temp_storage_bytes, decode.temp_storage_alignment

        _load, _ = _movers(cuda)

        @cuda.jit(device=True)
        def out(d_items, d_relative, d_size, items, relative, total):
            t = cuda.threadIdx.x
            for i in range(4):
                d_items[t * 4 + i] = items[i]
                d_relative[t * 4 + i] = relative[i]
            if t == 0:
                d_size[0] = total[0]

        def with_offsets(d_values, d_lengths, d_items, d_relative, d_size, window):
            values = coop.local.array(2, dtype=d_values.dtype)
            lengths = coop.local.array(2, dtype=d_lengths.dtype)
            total = coop.local.array(1, dtype=np.uint32)
            items = coop.local.array(4, dtype=d_values.dtype)
            relative = coop.local.array(4, dtype=np.uint32)
            _load(d_values, values, False)
            _load(d_lengths, lengths, False)
            decode(values, lengths, total, items, relative, window,
                   temp_storage=coop.TempStorage(size, align))
            out(d_items, d_relative, d_size, items, relative, total)

        def items_only(d_values, d_lengths, d_items, d_relative, d_size, window):
            runs = coop.local.array(4, dtype=d_values.dtype)  # values, then lengths
            total = coop.local.array(1, dtype=np.uint32)
            items = coop.local.array(4, dtype=d_values.dtype)
            zeros = coop.local.array(4, dtype=np.uint32)
            for i in range(4):
                zeros[i] = 0
            _load(d_values, runs[:2], False)
            _load(d_lengths, runs[2:], False)
            decode(runs[:2], runs[2:], total, items)
            out(d_items, d_relative, d_size, items, zeros, total)
        return cuda.jit(with_offsets if offsets else items_only)

    def inputs(rng):
        low = 3 if offsets else 2  # the window lies within the decoded items
        return [rng.integers(-99, 99, 2 * THREADS).astype(np.int32),
                rng.integers(low, low + 3, 2 * THREADS).astype(np.uint32),
                np.zeros(4 * THREADS, np.int32), np.ones(4 * THREADS, np.uint32),
                np.zeros(1, np.uint32), np.uint32(50 if offsets else 0)]

    def want(a):
        decoded = np.repeat(a[0], a[1])
        relative = np.concatenate([np.arange(n) for n in a[1]])
        w = slice(int(a[5]), int(a[5]) + 4 * THREADS)
        return {2: decoded[w], 3: relative[w] if offsets else np.zeros(4 * THREADS),
                4: [a[1].sum()]}
    return Case(f"run_length_fused_decode{'_offsets_window' * offsets}", make, inputs, want)


def _qualified_want(args):
    order = np.argsort(args[0] & np.uint32(15), kind="stable")
    ranks = np.empty(N, np.int32)
    ranks[order] = np.arange(N)
    return {1: ranks, 2: order.astype(np.int32)}


CASES = [
    adjacent("left"), adjacent("left", partial=True), adjacent("right"),
    Case("discontinuity_heads_tile", heads_tile,
         lambda rng: [_values(rng), np.zeros(N, np.bool_), np.int32(5)],
         lambda a: {1: _flags(a[0], a[2])[0]}),
    Case("discontinuity_heads_and_tails_tiles", heads_and_tails_tiles,
         lambda rng: [_values(rng), np.zeros(N, np.bool_), np.zeros(N, np.bool_), np.int32(5),
                      np.int32(7)],
         lambda a: dict(zip((1, 2), _flags(a[0], a[3], a[4])))),
    scatter("ScatterToBlocked"), scatter("ScatterToStripedFlagged"),
    scatter("ScatterToStripedGuarded"), scatter("ScatterToStriped", "warp"),
    load_valid("block"), load_valid("warp"),
    Case("block_load_store_offset", load_offset,
         lambda rng: [_values(np.random.default_rng(1)).repeat(3), np.zeros(3 * N, np.int32), N],
         lambda a: {1: np.concatenate([[None] * N, a[0][N:2 * N] + 1, [None] * N])}),
    Case("warp_sum_valid_positional", warp_valid_sum,
         lambda rng: [rng.integers(-50, 50, THREADS).astype(np.int32), np.zeros(2, np.int32),
                      11],
         lambda a: {1: np.array([a[0][:11].sum(), a[0][:11].min()], np.int32)}),
    sort_pairs("merge"), sort_pairs("warp_merge"), sort_pairs("radix"),
    Case("radix_two_phase_bits_and_values", radix_two_phase,
         lambda rng: [rng.integers(0, 16, N).astype(np.uint32),
                      rng.permutation(N).astype(np.int32), np.arange(N, dtype=np.int32) * 5,
                      np.zeros(N, np.uint32), np.zeros(N, np.int32), np.zeros(N, np.int32)],
         _radix_two_phase_want),
    Case("qualified_radix_rank_keys_and_inferred_indices", qualified_ranks,
         lambda rng: [rng.integers(0, 256, N).astype(np.uint32), np.zeros(N, np.int32),
                      np.zeros(N, np.int32)], _qualified_want),
    Case("stateful_prefix_positional_state", stateful_prefix,
         lambda rng: [np.arange(1, 4 * THREADS + 1, dtype=np.int32) % 5,
                      np.zeros(4 * THREADS, np.int32), np.zeros(1, np.int32)],
         lambda a: {1: np.cumsum(a[0]) - a[0], 2: np.array([a[0].sum()], np.int32)}),
    Case("temp_storage_items", storage_items, lambda rng: [np.zeros(THREADS, np.int32)],
         lambda a: {0: np.full(THREADS, 31, np.int32)}),
    run_length_fused(True), run_length_fused(False),
]
