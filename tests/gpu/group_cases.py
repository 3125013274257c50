"""Kernels written with cuda.coop's group-first API (``coop.sum(coop.this_block(), x)``), for
either numba compiler (``make(cuda)``), each with numpy's answer.

A case is ``Case(name, make, inputs, want, blocks, dtypes)``: ``make(cuda, **params)`` returns
the kernel; ``inputs(dtype, threads, rng)`` the kernel's arguments (inputs first, then outputs,
as numpy arrays); ``want(args, threads)`` the expected outputs, with ``None`` where the result
is undefined (compared only where defined, through ``masks``). tests/gpu/test_group_api.py runs
them on a GPU; tests/cpu and tests/mlir link each once per compiler.
"""
from __future__ import annotations

import dataclasses

import numpy as np

from coopgen import coop

GRID = 2
ITEMS = 4


@dataclasses.dataclass(frozen=True)
class Case:
    name: str
    make: object
    inputs: object
    want: object
    blocks: tuple = (128, (16, 8), (4, 4, 8))
    dtypes: tuple = (np.int32, np.uint64, np.float32, np.float64)
    params: dict = dataclasses.field(default_factory=dict)
    outputs: int = 1  # how many of the last arguments are outputs


def _rand(dtype, n, rng, lo=-50, hi=50):
    dt = np.dtype(dtype)
    lo = 0 if dt.kind == "u" else lo
    if dt.kind == "f":
        return rng.integers(lo, hi, n).astype(dt)  # exact sums in any order
    return rng.integers(lo, hi, n).astype(dt)


def _tiles(x, threads):
    return x.reshape(GRID, threads * ITEMS)


# --- kernels (factories: the compiler's cuda module in) ------------------------------------

def membership(cuda):
    @cuda.jit
    def k(d_out):
        block = coop.this_block()
        lanes = coop.this_warp().group_by(8)
        pairs = block.group_by(2, exhaustive=False)  # a last odd warp is in no pair
        lanes.sync_aligned()
        coop.this_warp().sync_aligned()
        q = d_out.shape[0] // 4
        g = cuda.blockIdx.x * block.count() + block.rank()
        d_out[g] = lanes.rank()
        d_out[q + g] = lanes.count()
        member = pairs.is_member()
        d_out[2 * q + g] = member
        d_out[3 * q + g] = pairs.rank() if member else -1
    return k


def warp_scalar_store(cuda):
    @cuda.jit
    def k(d_in, d_out):
        block = coop.this_block()
        base = cuda.blockIdx.x * block.count()
        value = d_in[base + block.rank()] + 1  # each warp stores its 32 values after the
        coop.store(coop.this_warp(), d_out, value, algorithm="direct", offset=base)  # last
    return k


def reserved_beside_scratch(cuda):
    @cuda.jit
    def k(d_in, d_out):
        persistent = coop.TempStorage()
        kept = persistent.reserve(ITEMS * 32, d_in.dtype, alignment=16)
        scratch = coop.TempStorage(auto_sync=True)
        block = coop.this_block()
        r, n = block.rank(), block.count()
        base = cuda.blockIdx.x * n
        for i in range(r, kept.shape[0], n):
            kept[i] = d_in[base + i % n] + i
        cuda.syncthreads()
        total = coop.sum(block, d_in[base + r], temp_storage=scratch)
        twice = coop.sum(block, d_in[base + r] * 2, temp_storage=scratch)
        cuda.syncthreads()
        d_out[base + r] = kept[(r * 7) % kept.shape[0]] + total + twice
    return k


def _want_reserved(a, t):
    x = a[0].reshape(GRID, t)
    kept = np.arange(ITEMS * 32)
    pick = (np.arange(t) * 7) % kept.size
    return [(x[:, pick % t] + pick + 3 * x.sum(axis=1, keepdims=True)).reshape(-1)]


def reservations_share_their_storage(cuda):
    """cuda.coop's layout of reservations: a "shared" storage's share its bytes (from its
    start), an "exclusive" storage's get slices of their own, beside its primitives'."""
    @cuda.jit
    def k(d_in, d_out):
        block = coop.this_block()
        r = block.rank()
        base = cuda.blockIdx.x * 128
        storage = coop.TempStorage()
        wide = storage.reserve(256, d_in.dtype, alignment=16)
        narrow = storage.reserve(128, d_in.dtype)  # the first half of wide
        exclusive = coop.TempStorage(sharing="exclusive")
        first = exclusive.reserve(128, d_in.dtype)
        second = exclusive.reserve(128, d_in.dtype)
        wide[r] = d_in[base + r] + r
        wide[r + 128] = d_in[base + r]
        first[r] = d_in[base + r] * 2
        second[r] = d_in[base + r] + 1
        cuda.syncthreads()
        seen = narrow[(r * 7) % 128]
        total = coop.sum(block, first[r], temp_storage=exclusive)
        cuda.syncthreads()
        d_out[base + r] = seen + first[(r * 3) % 128] + second[(r * 5) % 128] + total
    return k


def _want_shared_reservations(a, t):
    x, r = a[0].reshape(GRID, t), np.arange(t)
    seen = x[:, (r * 7) % 128] + (r * 7) % 128
    return [(seen + 2 * x[:, (r * 3) % 128] + x[:, (r * 5) % 128] + 1
             + 2 * x.sum(axis=1, keepdims=True)).reshape(-1)]


LARGE = 13 * 1024  # int32 items: past the 48 KB a kernel may declare statically


def large_reservation(cuda):
    @cuda.jit
    def k(d_in, d_out):
        block = coop.this_block()
        r = block.rank()
        base = cuda.blockIdx.x * 128
        storage = coop.TempStorage(alignment=16, sharing="exclusive")
        own = storage.reserve(128, d_in.dtype)
        big = storage.reserve(LARGE, np.int32)
        own[r] = d_in[base + r]
        for i in range(r, LARGE, 128):
            big[i] = i
        cuda.syncthreads()
        total = coop.sum(block, own[r], temp_storage=storage)
        cuda.syncthreads()
        d_out[base + r] = own[127 - r] + big[LARGE - 1 - r] + total
    return k


def _want_large_reservation(a, t):
    x, r = a[0].reshape(GRID, t), np.arange(t)
    return [(x[:, ::-1] + (LARGE - 1 - r) + x.sum(axis=1, keepdims=True)).reshape(-1)]


def helpers(cuda):
    """A group, a ThreadData typed only by its use in an ``inline="always"`` helper, and a
    TempStorage reserving in another helper, all passed to device functions."""
    @cuda.jit(device=True, inline="always")
    def load_into(group, source, items):
        coop.load(group, source, items)

    @cuda.jit(device=True)
    def load_tile(group, source):
        items = coop.ThreadData(items_per_thread=ITEMS)
        load_into(group, source, items)
        return items

    @cuda.jit(device=True, inline="always")
    def allocate(storage):
        alias = storage
        return alias.reserve(128, np.float64)

    @cuda.jit
    def k(d_in, d_out):
        block = coop.this_block()
        r = block.rank()
        tile = d_in[cuda.blockIdx.x * 128 * ITEMS:]
        items = load_tile(block, tile)
        storage = coop.TempStorage(sharing="exclusive")
        halves = allocate(storage)
        halves[r] = r + 0.5
        cuda.syncthreads()
        for i in range(ITEMS):
            items[i] += halves[127 - r]
        coop.store(block, d_out[cuda.blockIdx.x * 128 * ITEMS:], items)
    return k


def _want_helpers(a, t):
    x = a[0].reshape(GRID, t, ITEMS)
    return [(x + (t - 1 - np.arange(t))[None, :, None] + 0.5).reshape(-1)]


def partial_transpose_load(cuda, warp):
    @cuda.jit(device=True, inline="always")
    def marked(items, r):
        for i in range(ITEMS):
            items[i] = -1 - (r * ITEMS + i)  # each slot's own mark

    @cuda.jit
    def by_block(d_in, valid, d_out):
        block = coop.this_block()
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        r, base = block.rank(), cuda.blockIdx.x * block.count() * ITEMS
        marked(items, r)
        loaded = coop.load(block, d_in, items, algorithm="transpose", valid_items=valid[0],
                           offset=base)
        for i in range(ITEMS):
            d_out[base + r * ITEMS + i] = loaded[i]

    @cuda.jit
    def by_logical_warp(d_in, valid, d_out):
        block = coop.this_block()
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        r, base = block.rank(), cuda.blockIdx.x * block.count() * ITEMS
        marked(items, r)
        loaded = coop.load(coop.this_warp().group_by(8), d_in, items, algorithm="transpose",
                           valid_items=valid[0], offset=base)
        for i in range(ITEMS):
            d_out[base + r * ITEMS + i] = loaded[i]
    return by_logical_warp if warp else by_block


def _want_partial_transpose(warp):
    def want(a, t):
        x, valid = a[0].reshape(GRID, t * ITEMS), int(a[1][0])
        slot = np.arange(t * ITEMS)  # blocked: thread r's item i is slot r * ITEMS + i
        tile = 8 * ITEMS if warp else t * ITEMS  # a logical warp's tile, or the block's
        within = slot % tile
        got = np.where(within < valid, x[:, (slot // tile) * tile + within], -1 - slot)
        return [got.astype(a[0].dtype).reshape(-1)]
    return want


def warp_partial_sort(cuda):
    @cuda.jit
    def k(d_in, d_out):
        warp = coop.this_warp()
        base = cuda.blockIdx.x * coop.this_block().count() * ITEMS
        keys = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        coop.load(warp, d_in, keys, offset=base)
        ordered = coop.merge_sort_keys(warp, keys, valid_items=32 * ITEMS - 9, oob_default=99)
        coop.store(warp, d_out, ordered, offset=base)
    return k


def _want_warp_partial_sort(a, t):
    # CUB sorts the valid keys into a warp tile's first valid_items places; the places after
    # them hold its filler, which CUB leaves undefined (it does not reset a thread's first item)
    valid = 32 * ITEMS - 9
    tiles = a[0].reshape(-1, 32 * ITEMS)
    want = np.full(tiles.shape, None, dtype=object)
    want[:, :valid] = np.sort(tiles[:, :valid], axis=1)
    return [want.reshape(-1)]


def scalar_sorts(cuda):
    @cuda.jit
    def k(d_in, d_out):
        block = coop.this_block()
        n, r = block.count(), block.rank()
        base = cuda.blockIdx.x * n
        x = d_in[base + r]
        d_out[3 * base + r] = coop.merge_sort_keys(block, x)
        keys, where = coop.radix_sort_pairs(block, x, r)  # a scalar key and value a thread
        d_out[3 * base + n + r] = keys
        d_out[3 * base + 2 * n + r] = d_in[base + where]
    return k


def _want_scalar_sorts(a, t):
    ordered = np.sort(a[0].reshape(GRID, t), axis=1)
    return [np.concatenate([ordered] * 3, axis=1).reshape(-1)]


def closure_operators(cuda):
    def difference(current, neighbor):  # plain Python functions the kernel closes over
        return current * 2 - neighbor

    def rises(previous, current):
        return previous < current

    @cuda.jit
    def k(d_in, d_out, d_heads):
        block = coop.this_block()
        base = cuda.blockIdx.x * block.count() * ITEMS
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        coop.load(block, d_in, items, offset=base)
        diffs = coop.adjacent_difference(block, items, direction="right",
                                         tile_successor_item=7, difference_op=difference)
        heads = coop.discontinuity(block, diffs, flag_op=rises, tile_predecessor_item=4)
        coop.store(block, d_out, diffs, offset=base)
        coop.store(block, d_heads, heads, offset=base)
    return k


def _want_closure_operators(a, t):
    x = a[0].reshape(GRID, t * ITEMS)
    diffs = x * 2 - np.concatenate([x[:, 1:], np.full((GRID, 1), 7, x.dtype)], axis=1)
    before = np.concatenate([np.full((GRID, 1), 4, x.dtype), diffs[:, :-1]], axis=1)
    return [diffs.reshape(-1), (before < diffs).astype(np.int32).reshape(-1)]


def _want_membership(a, t):
    rank = np.arange(a[0].size // 4) % t
    member = rank < (t // 32 // 2) * 64
    return [np.concatenate([rank % 8, np.full(rank.size, 8), member,
                            np.where(member, rank % 64, -1)])]


MODULE_WARP = coop.this_warp()  # a group made on the host, outside any kernel


def mapped_reductions(cuda, width, exhaustive):
    """Sums and maxima over a block's groups of ``width`` warps, and a module's warp's sum."""
    @cuda.jit
    def k(d_in, d_sum, d_max, d_warp):
        block = coop.this_block()
        warps = block.group_by(width, exhaustive=exhaustive)
        g = cuda.blockIdx.x * block.count() + block.rank()
        d_sum[g] = coop.sum(warps, d_in[g])
        d_max[g] = coop.reduce(warps, d_in[g], binary_op="max")
        d_warp[g] = coop.sum(MODULE_WARP, d_in[g])
    return k


def _want_mapped(width, exhaustive):
    """Each group's sum and maximum in its members (zero past the whole groups when not
    exhaustive); each physical warp's sum."""
    def want(a, t):
        x = a[0].reshape(GRID, t)
        sums, maxima, warp_sums = (np.zeros_like(x) for _ in range(3))
        warps = -(-t // 32)
        for b in range(GRID):
            for w in range(warps):
                lanes = slice(32 * w, min(32 * w + 32, t))
                warp_sums[b, lanes] = x[b, lanes].sum(dtype=x.dtype)
            groups = -(-warps // width) if exhaustive else warps // width
            for gr in range(groups):
                members = slice(32 * width * gr, min(32 * width * (gr + 1), t))
                sums[b, members] = x[b, members].sum(dtype=x.dtype)
                maxima[b, members] = x[b, members].max()
        return [sums.reshape(-1), maxima.reshape(-1), warp_sums.reshape(-1)]
    return want


def level_queries(cuda):
    """rank/count of each group at the levels around it (cuda.coop's: the finer's within the
    coarser)."""
    @cuda.jit
    def k(d_out):
        thread, warp, block = coop.this_thread(), coop.this_warp(), coop.this_block()
        lanes, warps, grid = warp.group_by(8), block.group_by(2), coop.this_grid()
        q = d_out.shape[0] // 12
        g = grid.rank()
        d_out[g] = thread.rank("block")
        d_out[q + g] = warp.count("block")
        d_out[2 * q + g] = lanes.rank("warp")
        d_out[3 * q + g] = lanes.count("warp")
        d_out[4 * q + g] = warps.rank("block")
        d_out[5 * q + g] = warps.count("block")
        d_out[6 * q + g] = warps.count("thread")
        d_out[7 * q + g] = block.rank_as(np.int64, "grid")
        d_out[8 * q + g] = block.count("grid")
        d_out[9 * q + g] = grid.count("block")
        d_out[10 * q + g] = thread.count("warp")
        d_out[11 * q + g] = coop.sum(thread, d_out[g])
    return k


def _want_level_queries(a, t):
    n = a[0].size // 12
    rank = np.arange(n) % t
    ones = np.ones(n, np.int64)
    return [np.concatenate([rank, ones * -(-t // 32), (rank % 32) // 8, ones * 4, rank // 64,
                            ones * -(-t // 64), ones * 64, np.arange(n) // t, ones * GRID,
                            ones * GRID, ones * 32, rank])]


def cluster_queries(cuda):
    """A thread-block cluster's queries and barrier (launched with ``cluster=`` on sm_90)."""
    @cuda.jit
    def k(d_out):
        cluster = coop.this_cluster()
        cluster.sync()
        q = d_out.shape[0] // 5
        g = cuda.grid(1)
        d_out[g] = cluster.rank("block")
        d_out[q + g] = cluster.count("block")
        d_out[2 * q + g] = cluster.is_member()
        d_out[3 * q + g] = coop.this_thread().rank("cluster")
        d_out[4 * q + g] = cluster.count("thread")
    return k


def want_cluster_queries(blocks, threads, cluster):
    g = np.arange(blocks * threads)
    block = g // threads
    return np.concatenate([block % cluster, np.full(g.size, cluster), np.ones(g.size),
                           (block % cluster) * threads + g % threads,
                           np.full(g.size, cluster * threads)])


def load_store(cuda, algorithm):
    @cuda.jit
    def k(d_in, d_out):
        block = coop.this_block()
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        base = cuda.blockIdx.x * block.count() * ITEMS
        coop.load(block, d_in, items, algorithm=algorithm, offset=base)
        coop.store(block, d_out, items, algorithm=algorithm, offset=base)
    return k


def partial_load(cuda):
    @cuda.jit
    def k(d_in, valid, d_out):
        block = coop.this_block()
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        base = cuda.blockIdx.x * block.count() * ITEMS
        coop.load(block, d_in, items, algorithm="striped", valid_items=valid[0],
                  oob_default=7, offset=base)
        coop.store(block, d_out, items, algorithm="striped", offset=base)
    return k


def reductions(cuda, broadcast):
    @cuda.jit
    def k(d_in, d_out):
        block = coop.this_block()
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        base = cuda.blockIdx.x * block.count() * ITEMS
        coop.load(block, d_in, items, offset=base)
        total = coop.sum(block, items, broadcast=broadcast)
        biggest = coop.reduce(block, items[0], binary_op="max", broadcast=broadcast)
        mine = coop.sum(coop.this_thread(), items)
        g = cuda.blockIdx.x * block.count() + block.rank()
        if broadcast or block.rank() == 0:
            d_out[3 * g] = total
            d_out[3 * g + 1] = biggest
        d_out[3 * g + 2] = mine
    return k


def scans(cuda, op):
    @cuda.jit
    def k(d_in, d_out, d_copy):
        block = coop.this_block()
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        base = cuda.blockIdx.x * block.count() * ITEMS
        coop.load(block, d_in, items, offset=base)
        if op == 0:
            out = coop.exclusive_sum(block, items)
        elif op == 1:
            out = coop.inclusive_sum(block, items)
        elif op == 2:
            out = coop.exclusive_scan(block, items, scan_op="max", initial_value=-1000)
        elif op == 3:
            out = coop.inclusive_scan(block, items, scan_op="min")
        else:
            out = coop.scan(block, items, mode="inclusive")
        coop.store(block, d_out, out, offset=base)
        coop.store(block, d_copy, items, offset=base)  # the input stays as it was
    return k


def sorts(cuda, kind, descending):
    @cuda.jit
    def k(d_in, d_out, d_vals):
        block = coop.this_block()
        keys = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        base = cuda.blockIdx.x * block.count() * ITEMS
        coop.load(block, d_in, keys, offset=base)
        if kind == 0:
            out = coop.radix_sort_keys(block, keys, descending=descending)
            coop.store(block, d_out, out, offset=base)
        elif kind == 1:
            out = coop.merge_sort_keys(block, keys, descending=descending)
            coop.store(block, d_out, out, offset=base)
        else:
            vals = coop.ThreadData(ITEMS, dtype=np.int32)
            for i in range(ITEMS):
                vals[i] = block.rank() * ITEMS + i
            ks, vs = coop.radix_sort_pairs(block, keys, vals, descending=descending)
            coop.store(block, d_out, ks, offset=base)
            coop.store(block, d_vals, vs, offset=base)
    return k


def rearrange(cuda, kind):
    @cuda.jit
    def k(d_in, d_out):
        block = coop.this_block()
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        base = cuda.blockIdx.x * block.count() * ITEMS
        coop.load(block, d_in, items, offset=base)
        if kind == 0:
            out = coop.exchange(block, items, mode="blocked_to_striped")
        elif kind == 1:
            out = coop.adjacent_difference(block, items)
        elif kind == 2:
            out = coop.adjacent_difference(block, items, direction="right")
        else:
            out = coop.shuffle(block, items, mode="up")
        for i in range(ITEMS):  # each thread's own items, in blocked order
            d_out[base + block.rank() * ITEMS + i] = out[i]
    return k


def flags(cuda, mode):
    @cuda.jit
    def k(d_in, d_heads, d_tails):
        block = coop.this_block()
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        base = cuda.blockIdx.x * block.count() * ITEMS
        coop.load(block, d_in, items, offset=base)
        if mode == 2:
            heads, tails = coop.discontinuity(block, items, mode="heads_and_tails")
            coop.store(block, d_heads, heads, offset=base)
            coop.store(block, d_tails, tails, offset=base)
        elif mode == 1:
            f = coop.discontinuity(block, items, mode="tails")
            coop.store(block, d_heads, f, offset=base)
        else:
            f = coop.discontinuity(block, items)  # heads
            coop.store(block, d_heads, f, offset=base)
    return k


def counting(cuda, kind, counter=None, width=32, descending=False):
    """kind 0: ranks by bits 2 to 4; 1: a histogram of ``counter`` counters; 2: ranks by the
    top eight bits of ``width``-bit keys (signed and floating keys by their order)."""
    @cuda.jit
    def k(d_in, d_out):
        block = coop.this_block()
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        base = cuda.blockIdx.x * block.count() * ITEMS
        coop.load(block, d_in, items, offset=base)
        if kind == 0:
            ranks = coop.radix_rank(block, items, begin_bit=2, radix_bits=3)
            coop.store(block, d_out, ranks, offset=base)
        elif kind == 2:
            ranks = coop.radix_rank(block, items, begin_bit=width - 8, end_bit=width,
                                    descending=descending)
            coop.store(block, d_out, ranks, offset=base)
        else:
            counts = coop.histogram(block, items, bins=64, bins_per_thread=1,
                                    counter_dtype=counter)
            if block.rank() < 64:
                d_out[cuda.blockIdx.x * 64 + block.rank()] = counts[0]
    return k


HISTOGRAM_BINS = 97  # more bins than a 64-thread block: two counters a thread, striped


def histogram_kept(cuda, algorithm):
    """cuda.coop's histogram (``algorithm`` "atomic" or "sort", whose CUB radix-sorts its
    samples in place) of 97 bins at two counters a thread, int64 counters, then the samples
    stored again: they must be as loaded."""
    @cuda.jit
    def k(d_in, d_counts, d_kept):
        block = coop.this_block()
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        base = cuda.blockIdx.x * block.count() * ITEMS
        coop.load(block, d_in, items, offset=base)
        counts = coop.histogram(block, items, bins=HISTOGRAM_BINS, bins_per_thread=2,
                                counter_dtype=np.int64, algorithm=algorithm)
        slot = (cuda.blockIdx.x * block.count() + block.rank()) * 2
        d_counts[slot] = counts[0]
        d_counts[slot + 1] = counts[1]
        coop.store(block, d_kept, items, offset=base)
    return k


TILES = 3  # the tiles a block scans one after the other, carrying its running prefix
PREFIX_START = 5  # the running prefix's first value


def _carry(state, total):
    """A block prefix callback's state first: the prefix before this tile, then the next."""
    previous = state[0]
    state[0] = previous + total
    return previous


def prefix_scans(cuda, kind):
    """A block's TILES tiles scanned in turn, the running prefix carried by a prefix callback:
    kind 0 a StatefulFunction over arrays (exclusive), kind 1 a device function taking the
    state first over one item a thread (inclusive), and the last tile's aggregate."""
    carry = cuda.jit(device=True)(_carry)
    running = coop.StatefulFunction(carry, np.int64)

    @cuda.jit
    def k(d_in, d_out, d_final):
        block = coop.this_block()
        state = coop.ThreadData(1, dtype=np.int64)
        state[0] = PREFIX_START
        aggregate = coop.ThreadData(1, dtype=d_in.dtype)
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        n = block.count() * (ITEMS if kind == 0 else 1)
        for tile in range(TILES):
            base = (cuda.blockIdx.x * TILES + tile) * n
            if kind == 0:
                coop.load(block, d_in, items, offset=base)
                out = coop.exclusive_sum(block, items, state, prefix_op=running)
                coop.store(block, d_out, out, offset=base)
            else:
                d_out[base + block.rank()] = coop.inclusive_sum(
                    block, d_in[base + block.rank()], state, block_prefix_callback_op=carry)
                # CUB's scans give a prefix callback or an aggregate: the tile's, apart
                coop.exclusive_sum(block, d_in[base + block.rank()], aggregate_output=aggregate)
        if block.rank() == 0:
            d_final[cuda.blockIdx.x] = state[0]
            d_final[GRID + cuda.blockIdx.x] = aggregate[0]  # the last tile's (kind 1)
    return k


def _prefix_inputs(kind):
    def inputs(dtype, threads, rng):
        x = _rand(dtype, GRID * TILES * threads * (ITEMS if kind == 0 else 1), rng, 0, 50)
        return [x, np.zeros(x.size, dtype), np.zeros(2 * GRID, np.int64)]
    return inputs


def _want_prefix(kind):
    def want(args, threads):
        x = args[0].reshape(GRID, -1).astype(np.int64)
        incl = PREFIX_START + np.cumsum(x, axis=1)
        out = incl if kind == 1 else incl - x
        final = list(PREFIX_START + x.sum(axis=1))
        last = list(x[:, -threads:].sum(axis=1)) if kind == 1 else [None] * GRID
        return [out.reshape(-1).astype(args[0].dtype), np.array(final + last, dtype=object)]
    return want


def _ordered_keys(dtype, threads, rng):
    """Keys whose top eight bits order them as their values (equal bits: equal values)."""
    n, dt = GRID * threads * ITEMS, np.dtype(dtype)
    if dt.kind == "f":  # +-2**e, exponents apart in the top seven exponent bits; zeros of both signs
        step = 2 if dt.itemsize == 4 else 16
        x = rng.choice([-1.0, 1.0], n) * 2.0 ** (step * rng.integers(-30, 30, n))
        x[rng.integers(0, n, n // 16)] = 0.0
        x[rng.integers(0, n, n // 16)] = -0.0
    else:
        top = rng.integers(-128 if dt.kind == "i" else 0, 128 if dt.kind == "i" else 256, n)
        x = top.astype(np.int64 if dt.kind == "i" else np.uint64)
        x = x << (8 * dt.itemsize - 8)
    return [x.astype(dt), np.zeros(n, np.int32)]


def _want_ordered_ranks(descending):
    def want(args, threads):
        x = _tiles(args[0], threads).astype(np.float64)  # exact: the keys are 2**k multiples
        ranks = np.empty(x.shape, np.int32)
        for b in range(GRID):
            order = np.argsort(-x[b] if descending else x[b], kind="stable")
            ranks[b, order] = np.arange(x.shape[1])
        return [ranks.reshape(-1)]
    return want


def top_k(cuda, largest):
    @cuda.jit
    def k(d_in, d_out):
        block = coop.this_block()
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        base = cuda.blockIdx.x * block.count() * ITEMS
        coop.load(block, d_in, items, offset=base)
        if largest:
            top = coop.topk_max_keys(block, items, 16)
        else:
            top = coop.topk_min_keys(block, items, 16)
        coop.store(block, d_out, top, offset=base)
    return k


def run_length(cuda):
    @cuda.jit
    def k(d_values, d_lengths, d_out):
        block = coop.this_block()
        values = coop.ThreadData(2, dtype=d_values.dtype)
        lengths = coop.ThreadData(2, dtype=np.int32)
        coop.load(block, d_values, values)
        coop.load(block, d_lengths, lengths)
        out = coop.run_length_decode(block, values, lengths, decoded_items_per_thread=ITEMS)
        coop.store(block, d_out, out)
    return k


def run_length_window(cuda):
    """Each block decodes the same runs from its own window offset (``d_offsets``), with the
    relative offsets and the decoded size."""
    @cuda.jit
    def k(d_values, d_lengths, d_offsets, d_out, d_relative, d_total):
        block = coop.this_block()
        values = coop.ThreadData(2, dtype=d_values.dtype)
        lengths = coop.ThreadData(2, dtype=d_lengths.dtype)
        coop.load(block, d_values, values)
        coop.load(block, d_lengths, lengths)
        relative = coop.ThreadData(ITEMS, dtype=np.uint32)
        total = coop.ThreadData(1, dtype=np.uint64)
        out = coop.run_length_decode(block, values, lengths, decoded_items_per_thread=ITEMS,
                                     decoded_window_offset=d_offsets[cuda.blockIdx.x],
                                     relative_offsets=relative, total_decoded_size=total)
        base = cuda.blockIdx.x * block.count() * ITEMS
        coop.store(block, d_out, out, offset=base)
        coop.store(block, d_relative, relative, offset=base)
        d_total[cuda.blockIdx.x * block.count() + block.rank()] = total[0]
    return k


def run_length_into(cuda):
    """Each block decodes the same runs, every window, into its own part of ``d_out`` (from 3
    items in), the relative offsets into ``d_relative``."""
    @cuda.jit
    def k(d_values, d_lengths, d_out, d_relative, d_total):
        block = coop.this_block()
        values = coop.ThreadData(2, dtype=d_values.dtype)
        lengths = coop.ThreadData(2, dtype=d_lengths.dtype)
        coop.load(block, d_values, values)
        coop.load(block, d_lengths, lengths)
        start = cuda.blockIdx.x * (d_out.shape[0] // cuda.gridDim.x) + 3
        total = coop.run_length_decode_into(block, values, lengths, d_out,
                                            decoded_items_per_thread=ITEMS,
                                            destination_offset=start, relative_offsets=d_relative)
        d_total[cuda.blockIdx.x * block.count() + block.rank()] = total
    return k


def run_length_checked(cuda, into, offset_dtype=np.uint32):
    """run_length_decode (or _into, relative offsets too) of two runs a thread from a run-time
    offset, whose preconditions trap (tests/gpu/test_group_api_traps.py runs bad inputs)."""
    @cuda.jit
    def k(values, lengths, output, relative, offset):
        block = coop.this_block()
        runs = coop.ThreadData(2, dtype=values.dtype)
        sizes = coop.ThreadData(2, dtype=lengths.dtype)
        coop.load(block, values, runs)
        coop.load(block, lengths, sizes)
        if into:
            coop.run_length_decode_into(block, runs, sizes, output, decoded_items_per_thread=2,
                                        relative_offsets=relative, destination_offset=offset,
                                        decoded_offset_dtype=offset_dtype)
        else:
            coop.store(block, output, coop.run_length_decode(
                block, runs, sizes, decoded_items_per_thread=2, decoded_window_offset=offset,
                decoded_offset_dtype=offset_dtype))
    return k


def warps(cuda, width):
    @cuda.jit
    def k(d_in, d_out, d_sums):
        lw = coop.this_warp().group_by(width)
        items = coop.ThreadData(ITEMS, dtype=d_in.dtype)
        t = cuda.threadIdx.x
        base = cuda.blockIdx.x * cuda.blockDim.x * ITEMS  # each warp's tile follows by itself
        coop.load(lw, d_in, items, algorithm="striped", offset=base)
        ordered = coop.merge_sort_keys(lw, items)
        coop.store(lw, d_out, ordered, offset=base)
        total = coop.sum(lw, items[0])
        scanned = coop.exclusive_sum(lw, items[1])
        g = cuda.blockIdx.x * cuda.blockDim.x + t
        d_sums[2 * g] = total
        d_sums[2 * g + 1] = scanned
    return k


# --- inputs and answers ---------------------------------------------------------------------

def _one_input(dtype, threads, rng, outputs=1, out_dtype=None):
    x = _rand(dtype, GRID * threads * ITEMS, rng)
    return [x] + [np.zeros(x.size, out_dtype or dtype) for _ in range(outputs)]


def _blocked_from_striped(t, threads):
    """Each tile's items as threads hold them after a striped load, blocked."""
    return t.reshape(-1, ITEMS, threads).transpose(0, 2, 1).reshape(t.shape)


def _want_scans(op):
    def want(args, threads):
        x = _tiles(args[0], threads)
        if op in (0, 1, 4):
            incl = np.cumsum(x.astype(np.float64 if x.dtype.kind == "f" else x.dtype), axis=1)
            out = incl if op in (1, 4) else np.concatenate([np.zeros((GRID, 1)), incl[:, :-1]], 1)
        elif op == 2:
            out = np.maximum.accumulate(np.concatenate([np.full((GRID, 1), -1000), x[:, :-1]],
                                                       1).astype(np.float64), axis=1)
        else:
            out = np.minimum.accumulate(x, axis=1)
        return [out.reshape(-1).astype(x.dtype), args[0]]
    return want


def _want_sort(kind, descending):
    def want(args, threads):
        x = _tiles(args[0], threads)
        order = np.argsort(-x.astype(np.float64) if descending else x, axis=1, kind="stable")
        keys = np.take_along_axis(x, order, 1).reshape(-1)
        if kind < 2:
            return [keys, None]
        return [keys, None]  # values: checked against the keys in the test
    return want


def _want_rearrange(kind):
    def want(args, threads):
        x = _tiles(args[0], threads)
        if kind == 0:  # blocked -> striped: thread t's item i is tile[i * threads + t]
            return [x.reshape(GRID, ITEMS, threads).transpose(0, 2, 1).reshape(-1)]
        if kind == 1:
            d = x.copy()
            d[:, 1:] = x[:, 1:] - x[:, :-1]
            return [d.reshape(-1)]
        if kind == 2:
            d = x.copy()
            d[:, :-1] = x[:, :-1] - x[:, 1:]
            return [d.reshape(-1)]
        up = np.empty_like(x)
        up[:, 1:] = x[:, :-1]
        up = up.reshape(-1).astype(object)
        up[::threads * ITEMS] = None  # thread 0's first: undefined (CUB's Up)
        return [up]
    return want


def _want_flags(mode):
    def want(args, threads):
        x = _tiles(args[0], threads)
        heads = np.ones_like(x, dtype=np.int32)
        heads[:, 1:] = x[:, 1:] != x[:, :-1]
        tails = np.ones_like(x, dtype=np.int32)
        tails[:, :-1] = x[:, :-1] != x[:, 1:]
        return [(heads if mode != 1 else tails).reshape(-1),
                tails.reshape(-1) if mode == 2 else None]
    return want


def _want_counting(kind):
    def want(args, threads):
        x = _tiles(args[0], threads)
        if kind == 0:
            digit = (x.astype(np.int64) >> 2) & 7
            ranks = np.empty_like(digit)
            for b in range(GRID):
                order = np.argsort(digit[b], kind="stable")
                ranks[b, order] = np.arange(x.shape[1])
            return [ranks.reshape(-1).astype(np.int32)]
        counts = np.stack([np.bincount(x[b].astype(np.int64), minlength=64)[:64]
                           for b in range(GRID)])
        out = np.full(args[1].size, None, dtype=object)
        out[:counts.size] = counts.reshape(-1)
        return [out]
    return want


def _histogram_kept_inputs(dt, t, rng):
    """Samples in 0..96 in a scrambled order (a sort would change it), as cuda.coop's test."""
    i = np.arange(GRID * t * ITEMS, dtype=np.int64)
    return [((i * 29 + i // 5 + rng.integers(0, 97)) % HISTOGRAM_BINS).astype(dt),
            np.full(GRID * t * 2, -1, np.int64), np.zeros(GRID * t * ITEMS, dt)]


def _want_histogram_kept(args, threads):
    """Thread r's counters: bins r and r + threads (zero past the last bin), per block."""
    x = _tiles(args[0], threads)
    counts = np.zeros((GRID, threads, 2), np.int64)
    for b in range(GRID):
        per_bin = np.bincount(x[b].astype(np.int64), minlength=HISTOGRAM_BINS)
        for i in range(2):
            bins = np.arange(threads) + i * threads
            inside = bins < HISTOGRAM_BINS
            counts[b, inside, i] = per_bin[bins[inside]]
    return [counts.reshape(-1), args[0]]


def _want_warps(width):
    def want(args, threads):
        x = args[0].reshape(-1, width * ITEMS)
        keys = np.sort(x, axis=1).reshape(-1)
        items = _blocked_from_striped_w(args[0], width)
        first, second = items[:, :, 0], items[:, :, 1]
        sums = np.repeat(first.sum(axis=1, dtype=x.dtype if x.dtype.kind != "f" else None),
                         width)
        excl = (np.cumsum(second, axis=1) - second).reshape(-1)
        pairs = np.stack([sums, excl], 1).reshape(-1).astype(x.dtype)
        return [keys, pairs]
    return want


def _blocked_from_striped_w(x, width):
    """(warps, lanes, items): lane l's item i of a striped load is tile[i * width + l]."""
    return x.reshape(-1, ITEMS, width).transpose(0, 2, 1)


def _reduction_inputs(dtype, threads, rng):
    x = _rand(dtype, GRID * threads * ITEMS, rng)
    return [x, np.zeros(3 * GRID * threads, dtype)]


def _want_reductions(broadcast):
    def want(args, threads):
        x = _tiles(args[0], threads)
        per_thread = x.reshape(GRID, threads, ITEMS)
        out = np.full((GRID, threads, 3), None, dtype=object)
        sums, firsts = x.sum(axis=1, dtype=x.dtype), per_thread[:, :, 0].max(axis=1)
        rows = slice(None) if broadcast else slice(0, 1)
        out[:, rows, 0] = sums[:, None]
        out[:, rows, 1] = firsts[:, None]
        out[:, :, 2] = per_thread.sum(axis=2, dtype=x.dtype)
        return [out.reshape(-1)]
    return want


def _run_length_inputs(dtype, threads, rng):
    values = _rand(dtype, GRID * threads * 2, rng)
    lengths = rng.integers(1, 3, GRID * threads * 2).astype(np.int32)
    lengths[: threads * 2] = np.minimum(lengths[: threads * 2], 2)
    return [values, lengths, np.zeros(GRID * threads * ITEMS, dtype)]


def _want_run_length(args, threads):
    values, lengths = args[0][: threads * 2], args[1][: threads * 2]
    decoded = np.repeat(values, lengths)[: threads * ITEMS]
    out = np.zeros(threads * ITEMS, dtype=values.dtype)  # zero past the decoded items
    out[: decoded.size] = decoded
    # every block decodes the first block's runs into the same place
    return [np.concatenate([out, np.full(threads * ITEMS, None, dtype=object)])]


def _runs(dtype, threads, rng, longest, length_dtype):
    """A block's runs: lengths 1 to ``longest``, the last third zero-length padding."""
    values = _rand(dtype, threads * 2, rng)
    lengths = rng.integers(1, longest + 1, threads * 2).astype(length_dtype)
    lengths[threads * 4 // 3:] = 0
    return values, lengths


def _decoded(values, lengths):
    """The decoded items and each one's offset within its run."""
    n = lengths.astype(np.int64)
    return np.repeat(values, n), np.concatenate([np.arange(k) for k in n]).astype(np.uint64)


def _run_length_window_inputs(past_end, length_dtype):
    def inputs(dtype, threads, rng):
        values, lengths = _runs(dtype, threads, rng, 3, length_dtype)
        total = int(lengths.astype(np.int64).sum())
        offsets = np.array([total, 2**32 + 1] if past_end else [3, total - 7], np.uint64)
        return [values, lengths, offsets, np.full(GRID * threads * ITEMS, 99, dtype),
                np.zeros(GRID * threads * ITEMS, np.uint32), np.zeros(GRID * threads, np.uint64)]
    return inputs


def _want_run_length_window(args, threads):
    """cuda.coop's window: the decoded items from the offset, then zero items and all-ones
    relative offsets; the decoded size in every thread."""
    values, lengths, offsets = args[:3]
    decoded, relative = _decoded(values, lengths)
    window = threads * ITEMS
    out = np.zeros((GRID, window), values.dtype)
    rel = np.full((GRID, window), np.iinfo(np.uint32).max, np.uint32)
    for b, offset in enumerate(offsets.astype(object)):
        part = decoded[offset:offset + window]
        out[b, :part.size], rel[b, :part.size] = part, relative[offset:offset + window]
    return [out.reshape(-1), rel.reshape(-1), np.full(GRID * threads, decoded.size)]


def _run_length_into_inputs(dtype, threads, rng):
    values, lengths = _runs(dtype, threads, rng, 8, np.uint32)  # about three windows
    space = threads * 2 * 8 + 8  # a block's part of the output
    return [values, lengths, np.full(GRID * space, 7, dtype),
            np.full(GRID * space, 5, np.uint64), np.zeros(GRID * threads, np.uint64)]


def _want_run_length_into(args, threads):
    """Every window stored from 3 items into a block's part; the rest as it was."""
    values, lengths, out, rel = args[:4]
    decoded, relative = _decoded(values, lengths)
    out, rel = out.copy().reshape(GRID, -1), rel.copy().reshape(GRID, -1)
    out[:, 3:3 + decoded.size], rel[:, 3:3 + decoded.size] = decoded, relative
    return [out.reshape(-1), rel.reshape(-1), np.full(GRID * threads, decoded.size)]


def _compare(got, want, dtype):
    if want is None:
        return
    want = np.asarray(want, dtype=object)
    defined = np.array([w is not None for w in want])
    g, w = np.asarray(got)[defined], want[defined].astype(np.asarray(got).dtype)
    if np.dtype(dtype).kind == "f" and np.asarray(got).dtype.kind == "f":
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-3)
    else:
        np.testing.assert_array_equal(g, w)


def check(case, dtype, args, outs, threads):
    """A case's outputs (``outs``, after a launch on ``args``) against numpy's answers."""
    if case.name.startswith("topk"):
        x = args[0].reshape(GRID, threads * ITEMS)
        got = outs[0].reshape(GRID, threads * ITEMS)[:, :16]
        big = case.params["largest"]
        want = np.sort(x, axis=1)[:, ::-1][:, :16] if big else np.sort(x, axis=1)[:, :16]
        np.testing.assert_array_equal(np.sort(got, axis=1), np.sort(want, axis=1))
        return
    wants = case.want(args, threads)
    for got, want in zip(outs, wants):
        _compare(got, want, dtype)
    if case.name.startswith("sort_2"):  # pairs: each value is the index of its key
        keys, values = outs
        np.testing.assert_array_equal(args[0][values.reshape(GRID, -1) + np.arange(GRID)[:, None]
                                              * threads * ITEMS].reshape(-1), keys)


INTS = (np.int32, np.uint32, np.int64)
CASES = [
    Case("closure_operators", closure_operators,
         lambda dt, t, rng: [_rand(dt, GRID * t * ITEMS, rng), np.zeros(GRID * t * ITEMS, dt),
                             np.zeros(GRID * t * ITEMS, np.int32)],
         _want_closure_operators, dtypes=(np.int32, np.float64), outputs=2),
    Case("scalar_sorts", scalar_sorts,
         lambda dt, t, rng: [_rand(dt, GRID * t, rng), np.zeros(3 * GRID * t, dt)],
         _want_scalar_sorts),
    Case("warp_partial_sort", warp_partial_sort,
         lambda dt, t, rng: [_rand(dt, GRID * t * ITEMS, rng), np.zeros(GRID * t * ITEMS, dt)],
         _want_warp_partial_sort, blocks=(128, (32, 2), (8, 4, 2))),
    *[Case(f"partial_transpose_load_{'warp8' if w else 'block'}", partial_transpose_load,
           lambda dt, t, rng, w=w: [_rand(dt, GRID * t * ITEMS, rng, 0, 50),
                                    np.array([8 * ITEMS - 5 if w else t * ITEMS - 37]),
                                    np.zeros(GRID * t * ITEMS, dt)],
           _want_partial_transpose(w), params={"warp": w}, dtypes=(np.int32, np.float64))
      for w in (False, True)],
    Case("reserved_beside_scratch", reserved_beside_scratch,
         lambda dt, t, rng: [_rand(dt, GRID * t, rng), np.zeros(GRID * t, dt)],
         _want_reserved, blocks=(128, (16, 8), (4, 4, 8)), dtypes=(np.int32, np.float64)),
    Case("reservations_share_their_storage", reservations_share_their_storage,
         lambda dt, t, rng: [_rand(dt, GRID * t, rng), np.zeros(GRID * t, dt)],
         _want_shared_reservations, blocks=(128, (16, 8), (4, 4, 8)),
         dtypes=(np.int32, np.float64)),
    Case("large_reservation", large_reservation,
         lambda dt, t, rng: [_rand(dt, GRID * t, rng), np.zeros(GRID * t, dt)],
         _want_large_reservation, blocks=(128, (4, 4, 8)), dtypes=(np.int32, np.float64)),
    Case("device_helpers", helpers,
         lambda dt, t, rng: [_rand(dt, GRID * t * ITEMS, rng), np.zeros(GRID * t * ITEMS, dt)],
         _want_helpers, blocks=(128, (4, 4, 8)), dtypes=(np.float64, np.float32)),
    Case("warp_scalar_store", warp_scalar_store,
         lambda dt, t, rng: [_rand(dt, GRID * t, rng), np.zeros(GRID * t, dt)],
         lambda a, t: [a[0] + 1], blocks=(128, (32, 2), (8, 4, 2)),
         dtypes=(np.int32, np.float64)),
    Case("membership", membership, lambda dt, t, rng: [np.zeros(4 * GRID * t, dt)],
         _want_membership, blocks=(96, (32, 5), (16, 2, 4)), dtypes=(np.int64,)),
    *[Case(f"mapped_reductions_{w}_{'all' if e else 'whole'}", mapped_reductions,
           lambda dt, t, rng: [_rand(dt, GRID * t, rng)] + [np.zeros(GRID * t, dt)
                                                            for _ in range(3)],
           _want_mapped(w, e), params={"width": w, "exhaustive": e}, outputs=3,
           blocks=(128, (32, 5), (16, 2, 5)), dtypes=(np.int32, np.float64))
      for w in (2, 3) for e in (True, False)],
    Case("level_queries", level_queries, lambda dt, t, rng: [np.zeros(12 * GRID * t, dt)],
         _want_level_queries, blocks=(96, (32, 5), (16, 2, 4)), dtypes=(np.int64,)),
    *[Case(f"load_store_{a}", load_store, _one_input, lambda a_, t: [a_[0]],
           params={"algorithm": a})
      for a in ("direct", "striped", "vectorize", "transpose", "warp_transpose")],
    Case("partial_load", partial_load,
         lambda dt, t, rng: [_rand(dt, GRID * t * ITEMS, rng), np.array([t * ITEMS - 5]),
                             np.zeros(GRID * t * ITEMS, dt)],
         lambda a, t: [np.where(np.arange(a[0].size) % (t * ITEMS) < t * ITEMS - 5, a[0], 7)
                       .astype(a[0].dtype)]),
    *[Case(f"reductions_broadcast_{b}", reductions, _reduction_inputs, _want_reductions(b),
           params={"broadcast": b}) for b in (True, False)],
    *[Case(f"scan_{op}", scans, lambda dt, t, rng: _one_input(dt, t, rng, 2), _want_scans(op),
           params={"op": op}, outputs=2,
           dtypes=(np.int32, np.int64, np.float64) if op == 2 else (np.int32, np.uint64,
                                                                     np.float32, np.float64))
      for op in range(5)],
    *[Case(f"sort_{kind}_{'desc' if d else 'asc'}", sorts,
           lambda dt, t, rng: _one_input(dt, t, rng) + [np.zeros(GRID * t * ITEMS, np.int32)],
           _want_sort(kind, d), params={"kind": kind, "descending": d}, outputs=2,
           dtypes=INTS + ((np.float32,) if kind == 1 else ()),
           blocks=(128, (16, 8)) if kind == 1 else (128, (16, 8), (4, 4, 8)))
      for kind in range(3) for d in (False, True)],
    *[Case(f"rearrange_{kind}", rearrange, _one_input, _want_rearrange(kind),
           params={"kind": kind}, dtypes=(np.int32, np.int64, np.float64)) for kind in range(4)],
    *[Case(f"flags_{m}", flags, lambda dt, t, rng: [
        _rand(dt, GRID * t * ITEMS, rng, 0, 3), np.zeros(GRID * t * ITEMS, np.int32),
        np.zeros(GRID * t * ITEMS, np.int32)], _want_flags(m), params={"mode": m}, outputs=2,
        dtypes=(np.int32, np.float64)) for m in range(3)],
    Case("radix_rank", counting, lambda dt, t, rng: _one_input(dt, t, rng, 1, np.int32),
         _want_counting(0), params={"kind": 0}, dtypes=(np.int32, np.uint32),
         blocks=(128, (16, 8), (4, 4, 8))),
    Case("histogram", counting, lambda dt, t, rng: [_rand(dt, GRID * t * ITEMS, rng, 0, 64),
                                                    np.zeros(GRID * 64, np.int32)],
         _want_counting(1), params={"kind": 1}, dtypes=(np.uint8, np.int32)),
    *[Case(f"histogram_{c.__name__}", counting, lambda dt, t, rng, c=c: [
        _rand(dt, GRID * t * ITEMS, rng, 0, 64), np.zeros(GRID * 64, c)], _want_counting(1),
        params={"kind": 1, "counter": c}, dtypes=(np.uint8, np.int64)) for c in (np.uint64,
                                                                                 np.int64)],
    *[Case(f"histogram_kept_{a}", histogram_kept, _histogram_kept_inputs,
           _want_histogram_kept, params={"algorithm": a}, outputs=2,
           dtypes=(np.uint8, np.int32, np.uint64), blocks=(64, (8, 4, 2), 128))
      for a in ("atomic", "sort")],
    *[Case(f"prefix_scan_{kind}", prefix_scans, _prefix_inputs(kind), _want_prefix(kind),
           params={"kind": kind}, outputs=2, dtypes=(np.int32, np.int64), blocks=(128, (16, 8)))
      for kind in range(2)],
    *[Case(f"radix_rank_ordered{w}_{'desc' if d else 'asc'}", counting, _ordered_keys,
           _want_ordered_ranks(d), params={"kind": 2, "width": w, "descending": d},
           dtypes=(np.int32, np.float32, np.uint32) if w == 32 else (np.int64, np.float64),
           blocks=(128, (16, 8))) for w in (32, 64) for d in (False, True)],
    *[Case(f"topk_{'max' if big else 'min'}", top_k, _one_input, None,
           params={"largest": big}, dtypes=(np.int32, np.uint32), blocks=(128, 256))
      for big in (True, False)],
    Case("run_length_decode", run_length, _run_length_inputs, _want_run_length,
         dtypes=(np.int32, np.float64), blocks=(128, (16, 8))),
    Case("run_length_window", run_length_window, _run_length_window_inputs(False, np.uint32),
         _want_run_length_window, dtypes=(np.int32, np.float64), blocks=(128, (16, 8)),
         outputs=3),
    Case("run_length_past_end", run_length_window, _run_length_window_inputs(True, np.int64),
         _want_run_length_window, dtypes=(np.int16, np.float32), blocks=(64, (8, 4, 2)),
         outputs=3),
    Case("run_length_into", run_length_into, _run_length_into_inputs, _want_run_length_into,
         dtypes=(np.int32, np.float64), blocks=(128, (16, 8), 37), outputs=3),
    *[Case(f"warp_{w}", warps, lambda dt, t, rng: [
        _rand(dt, GRID * t * ITEMS, rng), np.zeros(GRID * t * ITEMS, dt),
        np.zeros(2 * GRID * t, dt)], _want_warps(w), params={"width": w}, outputs=2,
        dtypes=(np.int32, np.uint32, np.float32), blocks=(64, 128)) for w in (8, 16, 32)],
]
