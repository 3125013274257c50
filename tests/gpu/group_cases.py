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


INTS = (np.int32, np.uint32, np.int64)
CASES = [
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
    *[Case(f"warp_{w}", warps, lambda dt, t, rng: [
        _rand(dt, GRID * t * ITEMS, rng), np.zeros(GRID * t * ITEMS, dt),
        np.zeros(2 * GRID * t, dt)], _want_warps(w), params={"width": w}, outputs=2,
        dtypes=(np.int32, np.uint32, np.float32), blocks=(64, 128)) for w in (8, 16, 32)],
]
