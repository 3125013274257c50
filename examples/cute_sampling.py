"""Top-k, top-p (nucleus) and combined top-k/top-p sampling of one token per row, written in
CUTLASS's CuTe DSL: the sampling step of LLM decoding, with CUB's block scans, reductions and
loads (through coopgen) where CuTe DSL has no primitive of its own.

The algorithm is examples/sampling.py's (its docstring says it at length): one thread block
a row of float32 probabilities; no sort, but **rejection with pivots**, in rounds. Each round
draws a token from the probabilities above a lower bound ``low`` by inverse CDF (a walk over
the row in tiles of ``threads * ITEMS``: ``BlockScan::ExclusiveSum`` of each thread's mass
gives every thread its running prefix and the tile's total), then tests it (one walk summing
the mass and count of the tokens above the drawn one's probability and above the midpoint to
``high``; CUB's warp sums, then warp 0's of the warps' partials, end it). An admissible token (fewer than ``k`` tokens and less
than ``p`` of the mass strictly above it) is kept; otherwise ``low`` rises. The answer is an
exact draw from the renormalized top-k ∩ top-p set; ties at its edge are in, as FlashInfer's
``top_k_top_p_sampling_from_probs`` documents.

Random numbers: Philox-4x32-10 keyed by ``seed``, counted by (row, round, ``offset``), the
numba example's generator, so a (seed, offset) gives the same uniforms on any GPU.

    python examples/cute_sampling.py --arch sm_90a   # compile and link, no GPU
    python examples/cute_sampling.py --run           # sample a batch on the GPU, check it

Needs ``pip install 'coopgen[cute]'``.
"""
import argparse
import functools
import os
import sys
import tempfile

import numpy as np

os.environ.setdefault("CUTE_DSL_DUMP_DIR", os.path.join(tempfile.gettempdir(), "coopgen-cute"))
os.makedirs(os.environ["CUTE_DSL_DUMP_DIR"], exist_ok=True)

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cuda.bindings import driver  # noqa: E402
from cutlass import Float32, Int32, Int64, Uint64  # noqa: E402
from cutlass.base_dsl.enums import AddressSpace  # noqa: E402
from cutlass.cute.runtime import make_ptr  # noqa: E402

from coopgen import block, warp  # noqa: E402

#: Probabilities a thread holds per tile: two 16-byte vectors (as in the numba example).
ITEMS = 8
THREADS = 1024
#: Rounds before a row gives up (never reached: ``low`` climbs past one float per round).
MAX_ROUNDS = 1024

_M0, _M1, _W0, _W1 = 0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF


def philox_uniform(seed, offset, row, round_):
    """A uniform Float32 in [0, 1) from Philox-4x32-10: key = the seed's two words, counter =
    (row, round, the offset's two words); 64-bit products give each round's high and low
    words. (A Python function: CuTe DSL traces it into the kernel.)"""
    mask = Uint64(_MASK)
    k0, k1 = seed & mask, seed >> 32
    c0, c1 = Uint64(row) & mask, Uint64(round_) & mask
    c2, c3 = offset & mask, offset >> 32
    for _ in range(10):  # unrolled as it is traced
        p0 = Uint64(_M0) * c0
        p1 = Uint64(_M1) * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & mask, (p0 >> 32) ^ c3 ^ k1, p0 & mask
        k0 = (k0 + Uint64(_W0)) & mask
        k1 = (k1 + Uint64(_W1)) & mask
    return Float32(c0 >> 8) * Float32(1.0 / 16777216.0)  # 24 bits


@functools.lru_cache(maxsize=None)
def make_sampler(threads: int = THREADS):
    """The ``@cute.jit`` function launching the sampling kernel on one block of ``threads``
    a row: ``(probs, vocab, rows, top_k, top_p, seed, offset, out, stream)``, pointers to the
    float32 (rows, vocab) probabilities, the int32 top_k and float32 top_p a row, the int32
    tokens out. Full tiles load as 16-byte vectors (CUB checks each tile's alignment and falls
    back by itself); the last, partial tile through shared memory, zeros past the row."""
    tile = threads * ITEMS
    WARPS = threads // 32  # noqa: N806 (a constant of the kernel)

    @cute.jit
    def load(row: cute.Tensor, vocab: Int32, start: Int32, items: cute.Tensor):
        src = cute.make_tensor(row.iterator + start, cute.make_layout(tile))
        if start + tile <= vocab:
            block.load(src, items, algorithm="vectorize")
        else:
            block.load(src, items, algorithm="warp_transpose", num_valid_items=vocab - start,
                       oob_default=Float32(0.0))

    @cute.kernel
    def kernel(probs: cute.Pointer, vocab: Int32, top_k: cute.Tensor, top_p: cute.Tensor,
               seed: Uint64, offset: Uint64, out: cute.Tensor):
        t, _, _ = cute.arch.thread_idx()
        r, _, _ = cute.arch.block_idx()
        row = cute.make_tensor(probs + Int64(r) * Int64(vocab), cute.make_layout(vocab))
        k = top_k[r]
        p = top_p[r]
        smem = cutlass.memory.SmemAllocator()
        state = smem.allocate_tensor(Float32, cute.make_layout(4), 16)  # low, high, q, done
        chosen = smem.allocate_tensor(Int32, cute.make_layout(1), 16)
        part_s0 = smem.allocate_tensor(Float32, cute.make_layout(32), 16)  # a value a warp
        part_s1 = smem.allocate_tensor(Float32, cute.make_layout(32), 16)
        part_counts = smem.allocate_tensor(Int64, cute.make_layout(32), 16)
        items = cute.make_rmem_tensor(ITEMS, Float32)
        total = cute.make_rmem_tensor(1, Float32)  # a tile's mass above low, in every thread
        low, high, q = Float32(0.0), Float32(1.0), Float32(1.0)
        n_tiles = (vocab + tile - 1) // tile
        result = Int32(-1)
        round_ = Int32(0)
        searching = cutlass.Boolean(True)
        while searching:
            if t == 0:
                chosen[0] = vocab
            cute.arch.barrier()
            u = philox_uniform(seed, offset, r, round_) * q
            # 1. draw: inverse CDF over the probabilities above low, tile by tile until the
            #    running mass passes u
            running = Float32(0.0)
            j = Int32(0)
            while j < n_tiles and running <= u:
                start = j * tile
                load(row, vocab, start, items)
                mine = Float32(0.0)
                for i in cutlass.range_constexpr(ITEMS):
                    mine = mine + cutlass.select_(items[i] > low, items[i], Float32(0.0))
                before = block.BlockScan.ExclusiveSum(mine, block_aggregate=total,
                                                      algorithm="warp_scans")
                acc = running + before
                if acc <= u and u < acc + mine:  # this thread's items cross u
                    below = Int32(0)  # items whose running mass stays at or below u
                    for i in cutlass.range_constexpr(ITEMS):
                        acc = acc + cutlass.select_(items[i] > low, items[i], Float32(0.0))
                        below = below + cutlass.select_(acc <= u, Int32(1), Int32(0))
                    if below < ITEMS:  # the first item past u (else a rounding miss)
                        cute.arch.atomic_min(chosen.iterator, start + t * ITEMS + below)
                running = running + total[0]
                j = j + 1
            cute.arch.barrier()
            drawn = chosen[0]
            if drawn < vocab:  # else u fell past the mass summed here (rounding): draw again
                # 2. test: mass and count above the pivot and above the midpoint
                pivot0 = row[drawn]
                pivot1 = (pivot0 + high) * Float32(0.5)
                s0, s1 = Float32(0.0), Float32(0.0)
                counts = Int64(0)  # above pivot0 in the low word, above pivot1 in the high
                for jj in cutlass.range(n_tiles):
                    load(row, vocab, jj * tile, items)
                    for i in cutlass.range_constexpr(ITEMS):
                        v = items[i]
                        s0 = s0 + cutlass.select_(v > pivot0, v, Float32(0.0))
                        s1 = s1 + cutlass.select_(v > pivot1, v, Float32(0.0))
                        counts = counts + cutlass.select_(v > pivot0, Int64(1), Int64(0)) \
                            + cutlass.select_(v > pivot1, Int64(1 << 32), Int64(0))
                # each warp's sums (CUB's WarpReduce: shuffles), then warp 0 sums the warps'
                # (one barrier; thread 0 alone adding them up would take 32 shared loads)
                lane, w = t % 32, t // 32
                warp_s0, warp_s1, warp_counts = warp.sum(s0), warp.sum(s1), warp.sum(counts)
                if lane == 0:  # valid in lane 0
                    part_s0[w] = warp_s0
                    part_s1[w] = warp_s1
                    part_counts[w] = warp_counts
                cute.arch.barrier()
                if w == 0:
                    lane_has = lane < WARPS  # a warp's partials to sum
                    zero = Float32(0.0)
                    mass0 = warp.sum(Float32(cutlass.select_(lane_has, part_s0[lane], zero)))
                    mass1 = warp.sum(Float32(cutlass.select_(lane_has, part_s1[lane], zero)))
                    both = warp.sum(Int64(cutlass.select_(lane_has, part_counts[lane],
                                                          Int64(0))))
                    # 3. keep it, or raise low
                    if lane == 0:
                        c0 = Int32(both & Int64(_MASK))
                        c1 = Int32(both >> 32)
                        state[3] = Float32(0.0)
                        if c0 < k and (p >= Float32(1.0) or mass0 < p):
                            state[3] = Float32(1.0)
                        elif c1 < k and (p >= Float32(1.0) or mass1 < p):
                            state[0] = pivot0
                            state[1] = pivot1
                            state[2] = mass0
                        else:
                            state[0] = pivot1
                            state[1] = high
                            state[2] = mass1
                cute.arch.barrier()
                if state[3] != Float32(0.0):
                    result = drawn
                    searching = cutlass.Boolean(False)
                low, high, q = state[0], state[1], state[2]
            round_ = round_ + 1
            if round_ >= MAX_ROUNDS:
                searching = cutlass.Boolean(False)
        if t == 0:
            out[r] = result

    @cute.jit
    def launch(probs: cute.Pointer, vocab: Int32, rows: Int32, top_k: cute.Pointer,
               top_p: cute.Pointer, seed: Uint64, offset: Uint64, out: cute.Pointer,
               stream: driver.CUstream):
        per_row = cute.make_layout(rows)
        kernel(probs, vocab, cute.make_tensor(top_k, per_row), cute.make_tensor(top_p, per_row),
               seed, offset, cute.make_tensor(out, per_row)).launch(
            grid=(rows, 1, 1), block=(threads, 1, 1), stream=stream)
    return launch


def pointer(cls, address: int = 0):
    """A global pointer argument of cutlass's number class ``cls`` (address 0: a placeholder
    to compile with), aligned to its item only (rows start anywhere)."""
    return make_ptr(cls, address, AddressSpace.gmem, assumed_align=4)


def placeholders():
    """The launch's arguments to compile with (no GPU needed)."""
    return (pointer(Float32), Int32(1), Int32(1), pointer(Int32), pointer(Float32), Uint64(0),
            Uint64(0), pointer(Int32), driver.CUstream(0))


@functools.lru_cache(maxsize=None)
def compiled_sampler(threads: int = THREADS):
    """The sampler compiled for the current GPU (once per block size)."""
    return cute.compile(make_sampler(threads), *placeholders())


def _address(array, name: str, dtype) -> int:
    face = getattr(array, "__cuda_array_interface__", None)
    if face is None:
        raise ValueError(f"cute_sampling: {name} must be a device array "
                         f"(__cuda_array_interface__), not {type(array).__name__}")
    if np.dtype(face["typestr"]) != np.dtype(dtype):
        raise ValueError(f"cute_sampling: {name} must be {np.dtype(dtype).name}, "
                         f"not {np.dtype(face['typestr']).name}")
    size, shape = np.dtype(dtype).itemsize, face["shape"]
    contiguous = tuple(int(np.prod(shape[i + 1:], dtype=np.int64)) * size
                       for i in range(len(shape)))
    if face.get("strides") not in (None, contiguous):
        raise ValueError(f"cute_sampling: {name} must be C-contiguous")
    return face["data"][0]


def bind(probs, top_k, top_p, out, *, stream: int = 0, threads: int = THREADS):
    """The sampler bound to its arrays: a function of ``(seed, offset)`` that launches it (the
    arrays' checks and pointers made once, as a decoding loop calls it step after step).
    ``probs`` (rows, vocab) float32 rows summing to 1, ``top_k`` (rows,) int32, ``top_p``
    (rows,) float32 in (0, 1], ``out`` (rows,) int32: device arrays (anything with
    ``__cuda_array_interface__``: PyTorch, CuPy, numba); ``stream`` a CUDA stream handle (0:
    the default stream)."""
    shape = probs.__cuda_array_interface__["shape"]
    if len(shape) != 2:
        raise ValueError(f"cute_sampling: probs must be 2-D (rows, vocab), not {len(shape)}-D")
    rows, vocab = shape
    for name, a in (("top_k", top_k), ("top_p", top_p), ("out", out)):
        if tuple(a.__cuda_array_interface__["shape"]) != (rows,):
            raise ValueError(f"cute_sampling: {name} must have shape ({rows},)")
    args = (pointer(Float32, _address(probs, "probs", np.float32)), Int32(vocab), Int32(rows),
            pointer(Int32, _address(top_k, "top_k", np.int32)),
            pointer(Float32, _address(top_p, "top_p", np.float32)))
    tail = (pointer(Int32, _address(out, "out", np.int32)), driver.CUstream(stream))
    sampler = compiled_sampler(threads)

    def draw(seed: int = 0, offset: int = 0) -> None:
        if not 0 <= seed < 2**64 or not 0 <= offset < 2**64:
            raise ValueError("cute_sampling: seed and offset must be in [0, 2**64)")
        if rows:
            sampler(*args, Uint64(seed), Uint64(offset), *tail)
    return draw


def top_k_top_p_sampling_from_probs(probs, top_k, top_p, out, *, seed: int = 0,
                                    offset: int = 0, stream: int = 0,
                                    threads: int = THREADS):
    """One token a row of ``probs`` into ``out``, drawn from the renormalized probabilities of
    its top-k ∩ top-p set (``bind`` says what the arguments are). Reproducible: the same
    (seed, offset) gives the same tokens. Returns ``out``."""
    bind(probs, top_k, top_p, out, stream=stream, threads=threads)(seed, offset)
    return out


def link(archs) -> None:
    for arch in archs:
        compiled = cute.compile[cute.GPUArch(arch), cute.KeepPTX](make_sampler(),
                                                                  *placeholders())
        print(f"{arch}: the sampling kernel compiled and linked "
              f"({len(compiled.artifacts.PTX)} bytes of PTX)")


def run() -> int:
    """A batch sampled on the GPU; every token must be admissible (examples/sampling.py's
    numpy rule)."""
    from numba import cuda

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from sampling import admissible

    rng = np.random.default_rng(0)
    rows, vocab, k, p = 8, 32000, 50, 0.9
    logits = rng.standard_normal((rows, vocab)).astype(np.float32) * 3
    probs = np.exp(logits - logits.max(1, keepdims=True))
    probs = (probs / probs.sum(1, keepdims=True)).astype(np.float32)
    d_probs = cuda.to_device(probs)
    ks = cuda.to_device(np.full(rows, k, np.int32))
    ps = cuda.to_device(np.full(rows, p, np.float32))
    out = cuda.device_array(rows, np.int32)
    top_k_top_p_sampling_from_probs(d_probs, ks, ps, out, seed=1)
    cuda.synchronize()
    tokens = out.copy_to_host()
    ok = (tokens >= 0).all() and admissible(probs, k, p + 2e-5)[np.arange(rows), tokens].all()
    print("tokens", tokens, "all admissible:", bool(ok))
    return 0 if ok else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", action="append", default=[], help="sm_90a, sm_100a, ...")
    ap.add_argument("--run", action="store_true", help="sample on the GPU, check the tokens")
    args = ap.parse_args(argv)
    if args.arch or not args.run:
        link(args.arch or ["sm_90a"])
    return run() if args.run else 0


if __name__ == "__main__":
    sys.exit(main())
