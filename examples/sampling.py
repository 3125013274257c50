"""Top-k, top-p (nucleus) and combined top-k/top-p sampling of one token per row, from
probabilities or from logits with a temperature: the sampling step of LLM decoding.

One thread block per row; rows are float32 probabilities that sum to 1 (``from_logits``
makes them with a softmax first). The kernel never sorts: it samples by **rejection with
pivots**, in rounds, each a walk over the row in tiles of ``threads * ITEMS`` probabilities.

The tokens that may be drawn: token ``i`` is *admissible* when fewer than ``k`` tokens are
strictly more probable than it, and the tokens strictly more probable than it hold less than
``p`` of the mass. Ties at the edge are therefore all in (the rule FlashInfer documents for
its ``top_k_top_p_sampling_from_probs``): with k=2 and probabilities (0.4, 0.3, 0.3), all three
tokens are admissible. The admissible set is "every token at least as probable as some
threshold", so it sits above any token found not to be in it.

Each round, with a lower bound ``low`` (0 at first) below every admissible token:

1. **draw** a token from the probabilities above ``low``, renormalized: a uniform ``u`` times
   their mass ``q``, found by inverse CDF. Per tile, ``block.exclusive_sum`` of each thread's
   sum of its items (those above ``low``) gives every thread its running prefix and the
   tile's total; the one thread whose items cross ``u`` finds the token in its items. The
   walk stops at that tile;
2. **test** it: one walk over the whole row sums, per thread, the mass and the count of the
   tokens above the drawn token's probability ``pivot`` and above ``(pivot + high) / 2``;
   one ``block.reduce`` of those four numbers as a record (value/count pairs) ends it;
3. if fewer than ``k`` tokens and less than ``p`` of the mass lie above ``pivot``, the token
   is admissible: done. Otherwise ``low`` rises to ``pivot`` (or to the midpoint, when even
   that fails) and ``q`` to the mass above it: no admissible token is lost, and the drawn one
   can never be drawn again.

A token drawn from the renormalized probabilities above ``low`` and kept only if admissible is
a draw from the renormalized probabilities of the admissible set, whatever ``low`` was: the
answer is exact, and the rounds only cost time (a few, as ``low`` climbs geometrically).

Random numbers come from a counter-based generator (Philox-4x32-10 keyed by ``seed``, counted
by row, round and ``offset``): one uniform per row and round, the same for a given
(seed, offset) on any GPU and launch, so runs are reproducible and a caller advances
``offset`` between steps.

    python examples/sampling.py        # samples a batch and checks membership
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda

from coopgen import block, local

#: Probabilities a thread holds per tile: two 16-byte vectors, so that one row (batch 1 has a
#: single block) keeps twice the bytes in flight of one vector a thread.
ITEMS = 8
THREADS = 1024
#: A round's value/count pairs: mass and count above the pivot and above the midpoint.
PAIRS = np.dtype([("s0", np.float32), ("c0", np.int32), ("s1", np.float32), ("c1", np.int32)],
                 align=True)
#: Rounds before a row gives up (never reached: ``low`` climbs past one float per round).
MAX_ROUNDS = 1024

_M0, _M1, _W0, _W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF


@cuda.jit(device=True, inline=True)
def philox_uniform(seed, offset, row, round_):
    """A uniform float32 in [0, 1) from Philox-4x32-10: key = the seed's two words, counter =
    (row, round, the offset's two words). Counter-based, so any (seed, offset, row, round)
    gives the same number everywhere."""
    mask, half = np.uint64(_MASK), np.uint64(32)
    k0, k1 = seed & mask, seed >> half
    c0, c1 = np.uint64(row) & mask, np.uint64(round_) & mask
    c2, c3 = offset & mask, offset >> half
    for _ in range(10):
        p0 = np.uint64(_M0) * c0
        p1 = np.uint64(_M1) * c2
        c0, c1, c2, c3 = (p1 >> half) ^ c1 ^ k0, p1 & mask, (p0 >> half) ^ c3 ^ k1, p0 & mask
        k0 = (k0 + np.uint64(_W0)) & mask
        k1 = (k1 + np.uint64(_W1)) & mask
    return np.float32(c0 >> np.uint64(8)) * np.float32(1.0 / 16777216.0)  # 24 bits


@cuda.jit(device=True)
def add_pairs(a, b, out):
    out.s0 = a.s0 + b.s0
    out.c0 = a.c0 + b.c0
    out.s1 = a.s1 + b.s1
    out.c1 = a.c1 + b.c1


@functools.lru_cache(maxsize=None)
def make_kernel(threads: int = THREADS, vectorize: bool = True):
    """The sampling kernel for blocks of ``threads``. ``vectorize``: full tiles load as 16-byte
    vectors (CUB checks each tile's alignment and falls back by itself); the last, partial
    tile loads coalesced through shared memory (``warp_transpose``), zeros past the row."""
    tile = threads * ITEMS

    @cuda.jit
    def top_k_top_p_kernel(probs, vocab, top_k, top_p, seed, offset, out):
        row = cuda.blockIdx.x
        t = cuda.threadIdx.x
        row_probs = probs[row * vocab:(row + 1) * vocab]
        k = top_k[row]
        p = top_p[row]
        state = cuda.shared.array(4, np.float32)  # low, high, q, done
        chosen = cuda.shared.array(1, np.int32)
        items = local.array(ITEMS, np.float32)
        total = local.array(1, np.float32)  # a tile's mass above low, in every thread
        pairs = local.array(1, PAIRS)
        low = np.float32(0.0)
        high = np.float32(1.0)
        q = np.float32(1.0)
        n_tiles = (vocab + tile - 1) // tile
        result = np.int32(-1)
        for round_ in range(MAX_ROUNDS):
            if t == 0:
                chosen[0] = vocab
            cuda.syncthreads()
            u = philox_uniform(seed, offset, row, round_) * q
            # 1. draw: inverse CDF over the probabilities above low
            running = np.float32(0.0)
            for j in range(n_tiles):
                start = j * tile
                if start + tile <= vocab and vectorize:
                    block.load(row_probs[start:], items, algorithm="vectorize")
                else:
                    block.load(row_probs[start:], items, ITEMS, "warp_transpose", vocab - start,
                               np.float32(0.0))
                mine = np.float32(0.0)
                for i in range(ITEMS):
                    if items[i] > low:
                        mine += items[i]
                before = block.BlockScan.ExclusiveSum(mine, block_aggregate=total,
                                                      algorithm="warp_scans")
                acc = running + before
                if acc <= u < acc + mine:
                    for i in range(ITEMS):
                        if items[i] > low:
                            acc += items[i]
                            if acc > u:
                                cuda.atomic.min(chosen, 0, np.int32(start + t * ITEMS + i))
                                break
                running += total[0]
                if running > u:
                    break
            cuda.syncthreads()
            drawn = chosen[0]
            if drawn >= vocab:  # u fell past the mass summed here (rounding): draw again
                continue
            # 2. test: mass and count above the pivot and above the midpoint
            pivot0 = row_probs[drawn]
            pivot1 = (pivot0 + high) * np.float32(0.5)
            s0 = np.float32(0.0)
            s1 = np.float32(0.0)
            c0 = np.int32(0)
            c1 = np.int32(0)
            for j in range(n_tiles):
                start = j * tile
                if start + tile <= vocab and vectorize:
                    block.load(row_probs[start:], items, algorithm="vectorize")
                else:
                    block.load(row_probs[start:], items, ITEMS, "warp_transpose", vocab - start,
                               np.float32(0.0))
                for i in range(ITEMS):
                    v = items[i]
                    if v > pivot0:
                        s0 += v
                        c0 += 1
                    if v > pivot1:
                        s1 += v
                        c1 += 1
            pairs[0].s0 = s0
            pairs[0].c0 = c0
            pairs[0].s1 = s1
            pairs[0].c1 = c1
            agg = block.reduce(pairs, binary_op=add_pairs)  # valid in thread 0
            # 3. keep it, or raise low
            if t == 0:
                state[3] = np.float32(0.0)
                if agg.c0 < k and (p >= np.float32(1.0) or agg.s0 < p):
                    state[3] = np.float32(1.0)
                elif agg.c1 < k and (p >= np.float32(1.0) or agg.s1 < p):
                    state[0], state[1], state[2] = pivot0, pivot1, agg.s0
                else:
                    state[0], state[1], state[2] = pivot1, high, agg.s1
            cuda.syncthreads()
            if state[3] != np.float32(0.0):
                result = drawn
                break
            low, high, q = state[0], state[1], state[2]
        if t == 0:
            out[row] = result

    return top_k_top_p_kernel


@functools.lru_cache(maxsize=None)
def make_softmax_kernel(threads: int = THREADS):
    """probs = softmax(logits / temperature) per row (a max, then a sum of exponentials)."""

    @cuda.jit
    def softmax_kernel(logits, vocab, inv_temperature, probs):
        row = cuda.blockIdx.x
        t = cuda.threadIdx.x
        base = row * vocab
        shared = cuda.shared.array(1, np.float32)
        biggest = np.float32(-np.inf)
        for i in range(t, vocab, threads):
            biggest = max(biggest, logits[base + i] * inv_temperature)
        m = block.reduce(biggest, binary_op="max")
        if t == 0:
            shared[0] = m
        cuda.syncthreads()
        m = shared[0]
        mine = np.float32(0.0)
        for i in range(t, vocab, threads):
            mine += math.exp(logits[base + i] * inv_temperature - m)
        z = block.sum(mine)
        cuda.syncthreads()
        if t == 0:
            shared[0] = np.float32(1.0) / z
        cuda.syncthreads()
        r = shared[0]
        for i in range(t, vocab, threads):
            probs[base + i] = math.exp(logits[base + i] * inv_temperature - m) * r

    return softmax_kernel


def _device(a, name: str, dtype):
    """A numba device array over ``a`` (numba's, or any ``__cuda_array_interface__`` producer
    such as PyTorch or CuPy), without a copy; host arrays are copied over."""
    if isinstance(a, np.ndarray):
        a = cuda.to_device(a)
    elif not cuda.is_cuda_array(a):
        raise ValueError(f"sampling: {name} must be an array, not {type(a).__name__}")
    a = a if hasattr(a, "copy_to_host") else cuda.as_cuda_array(a)
    if np.dtype(a.dtype) != np.dtype(dtype):
        raise ValueError(f"sampling: {name} must be {np.dtype(dtype).name}, not {a.dtype}")
    return a


def _per_row(value, rows: int, dtype, name: str, stream):
    """A per-row parameter: a scalar for every row, or an array of one value a row."""
    if np.ndim(value) == 0:
        return cuda.to_device(np.full(rows, value, dtype), stream=stream)
    arr = _device(value, name, dtype)
    if arr.shape != (rows,):
        raise ValueError(f"sampling: {name} has shape {arr.shape}, must be ({rows},)")
    return arr


def top_k_top_p_sampling_from_probs(probs, top_k=None, top_p=None, *, seed: int = 0,
                                    offset: int = 0, out=None, stream=0,
                                    threads: int = THREADS):
    """One token a row of ``probs`` (rows, vocab), float32 rows summing to 1, drawn from the
    renormalized probabilities of its top-k ∩ top-p set. ``top_k`` (int) and ``top_p``
    (float in (0, 1]) are scalars or one value a row; None means no limit. Returns ``out``
    (rows,) int32 (made when not given). Reproducible: the same (seed, offset) gives the same
    tokens."""
    probs = _device(probs, "probs", np.float32)
    if probs.ndim != 2:
        raise ValueError(f"sampling: probs must be 2-D (rows, vocab), not {probs.ndim}-D")
    rows, vocab = probs.shape
    if not probs.is_c_contiguous():
        raise ValueError("sampling: probs must be C-contiguous")
    if top_k is not None and np.ndim(top_k) == 0 and top_k < 1:
        raise ValueError(f"sampling: top_k={top_k} must be at least 1")
    if top_p is not None and np.ndim(top_p) == 0 and not 0 < top_p <= 1:
        raise ValueError(f"sampling: top_p={top_p} must be in (0, 1]")
    if not 0 <= seed < 2**64 or not 0 <= offset < 2**64:
        raise ValueError("sampling: seed and offset must be in [0, 2**64)")
    if out is None:
        out = cuda.device_array(rows, np.int32, stream=stream)
    result, out = out, _device(out, "out", np.int32)
    if rows == 0:
        return result
    ks = _per_row(vocab if top_k is None else top_k, rows, np.int32, "top_k", stream)
    ps = _per_row(1.0 if top_p is None else top_p, rows, np.float32, "top_p", stream)
    kernel = make_kernel(threads)
    kernel[rows, threads, stream](probs.reshape(probs.size), np.int32(vocab), ks, ps,
                                  np.uint64(seed), np.uint64(offset), out)
    return result


def top_k_sampling_from_probs(probs, top_k, **kws):
    return top_k_top_p_sampling_from_probs(probs, top_k=top_k, **kws)


def top_p_sampling_from_probs(probs, top_p, **kws):
    return top_k_top_p_sampling_from_probs(probs, top_p=top_p, **kws)


def softmax(logits, temperature: float = 1.0, out=None, stream=0, threads: int = THREADS):
    """softmax(logits / temperature) per row, float32 (rows, vocab)."""
    logits = _device(logits, "logits", np.float32)
    if logits.ndim != 2:
        raise ValueError(f"sampling: logits must be 2-D (rows, vocab), not {logits.ndim}-D")
    if not temperature > 0:
        raise ValueError(f"sampling: temperature={temperature} must be positive")
    rows, vocab = logits.shape
    if out is None:
        out = cuda.device_array((rows, vocab), np.float32, stream=stream)
    if rows:
        make_softmax_kernel(threads)[rows, threads, stream](
            logits.reshape(logits.size), np.int32(vocab), np.float32(1.0 / temperature),
            out.reshape(out.size))
    return out


def top_k_top_p_sampling_from_logits(logits, temperature: float = 1.0, top_k=None, top_p=None,
                                     **kws):
    """``top_k_top_p_sampling_from_probs`` of ``softmax(logits / temperature)``."""
    stream = kws.get("stream", 0)
    return top_k_top_p_sampling_from_probs(softmax(logits, temperature, stream=stream),
                                           top_k, top_p, **kws)


def admissible(probs: np.ndarray, top_k=None, top_p=None) -> np.ndarray:
    """numpy's answer: a (rows, vocab) mask of the tokens each row may draw (the module
    docstring's rule: fewer than k tokens, and less than p of the mass, strictly above)."""
    probs = np.asarray(probs, np.float64)
    rows, vocab = probs.shape
    k = np.broadcast_to(vocab if top_k is None else np.asarray(top_k), (rows,))
    p = np.broadcast_to(1.0 if top_p is None else np.asarray(top_p, np.float64), (rows,))
    order = np.sort(probs, axis=1)[:, ::-1]
    csum = np.concatenate([np.zeros((rows, 1)), np.cumsum(order, axis=1)], axis=1)
    mask = np.zeros(probs.shape, bool)
    for r in range(rows):
        above = vocab - np.searchsorted(order[r, ::-1], probs[r], side="right")
        mass = csum[r, above]
        mask[r] = (probs[r] > 0) & (above < k[r]) & ((p[r] >= 1) | (mass < p[r]))
    return mask


def main():
    rng = np.random.default_rng(0)
    rows, vocab = 8, 32000
    logits = rng.standard_normal((rows, vocab)).astype(np.float32) * 3
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs = (probs / probs.sum(1, keepdims=True)).astype(np.float32)
    tokens = top_k_top_p_sampling_from_probs(probs, top_k=50, top_p=0.9, seed=1).copy_to_host()
    ok = admissible(probs, 50, 0.9)[np.arange(rows), tokens]
    print("tokens", tokens, "all admissible:", bool(ok.all()))


if __name__ == "__main__":
    main()
