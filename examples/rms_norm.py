"""Fused RMSNorm forward over rows, y = x / sqrt(mean(x^2) + eps) * w, for float16 and
bfloat16 rows with float32 accumulation: one read of x and one write of y, the rest stays in
registers.

One thread block per row; each thread holds ``items`` elements of the row, two 16-byte vectors
(a 4096-wide row: 256 threads of 16 elements; ``plan`` says how many otherwise, and
``examples/torch_rms_norm.py`` times the candidates and keeps the fastest, ``coopgen.autotune``). Vector v of
every thread comes from the row's v-th slice of ``threads`` vectors, so a warp's load reads 512
contiguous bytes (``make_kernel``'s ``blocked`` variant puts a thread's vectors side by side,
which makes the L1 serve every 32-byte sector twice).

1. ``block.load`` the row and the weights before the reduction (ptxas issues the weights'
   loads after the row's squares; ``make_kernel``'s ``loads_barrier`` keeps them beside the
   row's). When every row is made of whole 16-byte vectors (a multiple of 8 elements,
   so each row starts as 16-byte aligned as the array), the rows travel as **16-byte items**
   (``VECTOR_BITS``), eight elements each, loaded striped (``algorithm="striped"``: item v of
   each thread from the row's v-th slice, a warp's load 512 contiguous bytes), which is one
   ``ld.global.v2`` of 16 bytes an item, the widest access a thread can make. CUB's vectorized
   load of 2-byte items would build 8-byte vectors; of 32-bit words, 16-byte ones, but behind a
   run-time alignment check with a second path of 4-byte loads, which made every load later
   (``docs/pytorch.md``, the copy floor). Items past a row's end (rows narrower than the
   block's vectors) load as zeros and are not stored. The kernel reads each thread's items as
   32-bit words (``items.view(np.uint32)``, still registers), and each element as half of a
   word through a few lines of CUDA C++ linked beside it (``PAIR_SOURCE``: one instruction
   converts an element to float32, one packs two floats into a word of the output), where
   numba's element view of a 16-byte item would shift the item's 64-bit halves for every odd
   element and build each output word from masked and shifted halves. Other rows load
   guarded, one element at a time, with zeros past the end, as do rows that do not start on a
   16-byte boundary;
2. square each item **in float32** and add the squares: the thread's own in four independent chains (``CHAINS``), then
   ``warp.sum`` (CUB's ``WarpReduce``) within each warp, whose lane 0 leaves the warp's sum in
   shared memory; after the block's one barrier, each warp adds those sums with ``warp.sum``
   again and broadcasts the total to its lanes with a shuffle. Every thread then has the row's
   sum: the block reduction is one barrier where ``block.sum`` (sum in thread 0) and a
   shared ``rstd`` take three, a shorter wait for a few rows. The items are converted
   first because CUB adds in the item type: a sum of the halves themselves would round every
   partial sum to 11 (float16) or 8 (bfloat16) bits;
3. each thread computes ``rstd = rsqrt(sum / hidden + eps)`` with the GPU's approximate
   reciprocal and reciprocal square root (2 ulp of float32 each; the tolerance below counts
   them), float32 denormals flushed to zero (the kernels compile with ``fastmath``, as
   Triton's do by default);
4. ``y = x * rstd * w`` in float32, rounded once to the row's type, and ``block.store``.

Full-row kernels declare launch bounds for an SM's 2,048 threads (``SM_THREADS``), which keeps
them at 32 registers: four blocks of 512 threads an SM instead of three. Those of four vectors a
thread declare the blocks that 56 registers allow (``WIDE_REGISTERS``): three of 352 threads,
where bfloat16 would otherwise take 75-77 and two.

Five more layouts for the autotuner (``make_kernel``; ``examples/torch_rms_norm.py`` names the
candidates):

- **a row over a cluster** (``cluster``), for a few wide rows (sm_90 and later): the row is split
  in 2, 4 or 8 parts, one a block, and the blocks of a thread-block cluster add their sums
  through distributed shared memory (``CLUSTER_SOURCE``, CUDA C++ linked beside the kernel:
  numba has no intrinsics for it), so a decode batch of 16,384-wide rows loads on eight SMs a
  row instead of one; the launch gives the cluster's shape (``coopgen.torch``'s ``cluster=``);

- **late weights** (``late_weights``), for wide rows at 4 to 8 vectors a thread: only x is
  loaded before the reduction; after it, each vector's weights come from L2 and its output is
  stored at once. A thread then holds one row's vectors, not two: at 13,824 wide, 288 threads of
  six vectors take 56 registers in bfloat16 (four blocks an SM, each with its row in flight) and
  64 in float16 (three), where 576 of three hold two blocks' rows; 16,384 rows ran in 220 µs
  instead of 234 on an H200;

- **a warp per row** (``warp_rows``), for narrow rows (up to 2,048 elements: eight 16-byte
  vectors a lane): each warp loads its row and the weights with ``warp.load`` (CUB's WarpLoad,
  16-byte vectors, a warp's access 512 contiguous bytes), adds the squares with ``warp.sum``
  and broadcasts the sum with a shuffle, and stores with ``warp.store``: no shared memory and no
  barrier, several rows a block. At 1,024 wide a block per row spends two warp reductions, a
  shared-memory round trip and a barrier after the loads; a warp spends one reduction;
- **CUB's BlockReduce** (``block.sum`` with the raking or warp-reductions algorithm, the sum in
  thread 0 broadcast through shared memory) in place of the two ``warp.sum`` stages, for a few
  rows, where one block runs on an SM and its reduction's latency is the time;
- **a barrier after the loads** (``loads_barrier``), for thousands of rows: every load of x and
  w in flight at once (ptxas moves no load past a barrier), each x * w formed before the
  reduction.

Inputs are device arrays: numba's, or any DLPack producer (PyTorch, CuPy, JAX), seen without a
copy. DLPack comes first because it names bfloat16; a ``__cuda_array_interface__`` typestr
cannot (PyTorch gives 'V2', older releases '<f2', which reads as float16).

    python examples/rms_norm.py        # checks float16 and bfloat16 rows against numpy

bfloat16 host arrays come from ml_dtypes (``pip install "coopgen[bf16]"``).
"""
from __future__ import annotations

import functools
import os

import numpy as np
from _compiler import cuda, libdevice  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local, warp

VECTOR = 8  # elements of a 2-byte type in one 16-byte access
#: The item type of rows of whole 16-byte vectors: numpy's one 16-byte type, used as bits only
#: (a thread's vectors are viewed as elements in registers). A load of such an item is one
#: ``ld.global.v2.f64``, with no alignment check: CUB's vectorized load of words checks the
#: pointer on every load and keeps a second path of 4-byte loads beside the 16-byte one, which
#: delays the load (``docs/pytorch.md``, the copy floor). The arrays must be 16-byte aligned:
#: the callers check it on the host.
VECTOR_BITS = np.complex128
#: 16-byte vectors a thread holds while the row fits 1024 threads. tools/bench's sweep (RESULTS.md)
#: measured 2 fastest at hidden 4096 and 8192: 4 vectors (256 threads at 8192) need 48-64
#: registers and fell to 0.81x copy bandwidth; 1 vector (1024 threads) to 0.89x.
VECTORS = 2
MAX_THREADS = 1024
#: The threads an SM of compute capability 8.0 or 9.0 holds. Full-row kernels of at most
#: ``VECTORS`` vectors a thread declare launch bounds asking for all of them (four blocks of 512
#: threads, 16 of 128), so ptxas keeps them to 65,536 / 2,048 = 32 registers. Left to itself it
#: takes 40, which fits three blocks of 448 or 512 threads: 0.84-0.88x the copy bandwidth at
#: 7168- and 8192-wide rows against 0.95-0.98x at 32 (tools/bench/RESULTS.md); nothing spills.
SM_THREADS = 2048
SM_REGISTERS = 65536
#: the registers four vectors a thread take: float16's, and bfloat16's under launch bounds
#: (sm_90). Left alone, ptxas gives bfloat16 rows with a tail 75-77, which at 352 threads
#: (11,008 wide) fits two blocks an SM, not three: 222 µs for 16,384 rows on an H200, 187
#: with the bounds (float16: 182)
WIDE_REGISTERS = 56
DTYPES = ("float16", "bfloat16")
#: ``COOPGEN_RMSNORM_CACHE=1``: ``make_kernel``'s kernels are ``cache=True`` kernels (numba's
#: on-disk cache, in ``NUMBA_CACHE_DIR`` where set), one cache file per variant
KERNEL_CACHE = os.environ.get("COOPGEN_RMSNORM_CACHE") == "1"


def plan(hidden: int, threads: int | None = None) -> tuple[int, int]:
    """(threads, items per thread) for rows of ``hidden`` elements: ``VECTORS`` 16-byte vectors
    a thread (threads = hidden / 16, rounded up to whole warps); rows wider than 1024 such
    threads get more vectors. ``threads`` (a multiple of 32) overrides the choice."""
    if hidden < 1:
        raise ValueError(f"rms_norm: hidden={hidden} must be positive")
    if threads is None:
        vectors = max(VECTORS, -(-hidden // (VECTOR * MAX_THREADS)))
        items = VECTOR * vectors
        threads = 32 * -(-(-(-hidden // items)) // 32)
    elif threads % 32 or not 32 <= threads <= MAX_THREADS:
        raise ValueError(f"rms_norm: threads={threads} must be a multiple of 32 from 32 to "
                         f"{MAX_THREADS}")
    else:
        items = VECTOR * -(-hidden // (VECTOR * threads))
    return threads, items


#: The block reductions a row-per-block kernel may use (``make_kernel``'s ``reduce``): "warps",
#: ``warp.sum`` in each warp, then over the warps' sums (one barrier, then five shuffles and a
#: broadcast); "warps_shared", ``warp.sum`` in each warp, then every thread adds the warps'
#: sums from shared memory itself (one barrier, no shuffle after it: broadcast reads and four
#: chains of adds); or CUB's BlockReduce (``block.sum``) with one of its algorithms, its sum in
#: thread 0 broadcast through shared memory (a second barrier)
REDUCTIONS = ("warps", "warps_shared", "raking_commutative_only", "warp_reductions")
WARP = 32
#: A thread adds its squares in this many independent chains (one chain of 32 dependent adds
#: is 32 adds' latency between the loads' arrival and the first shuffle)
CHAINS = 4


#: CUDA C++ a cluster's blocks call to add their sums (``make_kernel``'s ``cluster``): numba has
#: no intrinsics for a cluster's barrier or its distributed shared memory (sm_90 and later)
CLUSTER_SOURCE = r"""
// The row's sum over the blocks of a cluster: thread 0 of each block publishes its block's sum
// in its shared memory; after the cluster's barrier every thread adds the blocks' sums in rank
// order (so every block gets the same float) through distributed shared memory, then arrives
// at a second barrier: the others may exit once all have read (rms_cluster_exit waits there).
extern "C" __device__ int rms_cluster_sum(float* sum, float block_sum, int ranks) {
    __shared__ float published;
    if (threadIdx.x == 0) published = block_sum;
    asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
                 "barrier.cluster.wait.acquire.aligned;" ::: "memory");
    unsigned mine;
    asm("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }"
        : "=r"(mine) : "l"(&published));
    float total = 0.0f;
    for (int rank = 0; rank < ranks; ++rank) {
        unsigned theirs;
        float part;
        asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(theirs) : "r"(mine), "r"(rank));
        asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(part) : "r"(theirs) : "memory");
        total += part;
    }
    asm volatile("barrier.cluster.arrive.relaxed.aligned;" ::: "memory");
    *sum = total;
    return 0;
}

// A block may leave once every block of its cluster has read its published sum.
extern "C" __device__ int rms_cluster_exit(int* done) {
    asm volatile("barrier.cluster.wait.aligned;" ::: "memory");
    *done = 1;
    return 0;
}
"""


#: CUDA C++ for the two 2-byte elements of a 32-bit word (``make_kernel``'s ``pairs``). A thread's
#: 16-byte items are two 64-bit halves to numba, so it reads an element by a 64-bit shift (ptxas
#: keeps it for the odd elements: a shift and a conversion where one conversion of the word's
#: high half would do) and writes one by masks, shifts and byte permutes of the half: at 8,192
#: wide, four vectors a thread spent some 260 instructions after the reduction, Triton's kernel
#: some 150. Here a word's element converts in one instruction and two floats pack in one.
PAIR_SOURCE = r"""
// a word's low (l) or high (h) float16 as float32: one conversion of that half of the register
#define RMS_F16_HALF(NAME, HALF)                                                           \
    extern "C" __device__ int NAME(float* value, unsigned pair) {                          \
        asm("{ .reg .b16 l, h; mov.b32 {l, h}, %1; cvt.f32.f16 %0, " HALF "; }"            \
            : "=f"(*value) : "r"(pair));                                                   \
        return 0;                                                                          \
    }
RMS_F16_HALF(rms_f16_low, "l")
RMS_F16_HALF(rms_f16_high, "h")
extern "C" __device__ int rms_bf16_low(float* value, unsigned pair) {
    asm("shl.b32 %0, %1, 16;" : "=f"(*value) : "r"(pair));
    return 0;
}
extern "C" __device__ int rms_bf16_high(float* value, unsigned pair) {
    asm("and.b32 %0, %1, 0xffff0000;" : "=f"(*value) : "r"(pair));
    return 0;
}
// low in bits 0-15, high in bits 16-31, each rounded to nearest even
extern "C" __device__ int rms_f16_pair(unsigned* pair, float low, float high) {
#if __CUDA_ARCH__ >= 800
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(*pair) : "f"(high), "f"(low));
#else
    asm("{ .reg .b16 l, h; cvt.rn.f16.f32 l, %1; cvt.rn.f16.f32 h, %2; mov.b32 %0, {l, h}; }"
        : "=r"(*pair) : "f"(low), "f"(high));
#endif
    return 0;
}
extern "C" __device__ int rms_bf16_pair(unsigned* pair, float low, float high) {
#if __CUDA_ARCH__ >= 800
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(*pair) : "f"(high), "f"(low));
#else
    unsigned bits[2] = {__float_as_uint(low), __float_as_uint(high)};
    for (int i = 0; i < 2; ++i) {
        bits[i] = (bits[i] & 0x7fffffffu) > 0x7f800000u ? 0x7fc00000u  // NaN stays NaN
                  : bits[i] + 0x7fffu + ((bits[i] >> 16) & 1u);
    }
    *pair = (bits[0] >> 16) | (bits[1] & 0xffff0000u);
#endif
    return 0;
}
"""


@functools.lru_cache(maxsize=None)
def _pair_functions(dtype: str):
    """(low, high, pair) of ``PAIR_SOURCE`` for ``dtype``: a word's low and high element as
    float32, and the word of two float32 values."""
    source = cuda.CUSource(PAIR_SOURCE)
    prefix = "rms_f16" if dtype == "float16" else "rms_bf16"
    return (cuda.declare_device(f"{prefix}_low", "float32(uint32)", link=source),
            cuda.declare_device(f"{prefix}_high", "float32(uint32)", link=source),
            cuda.declare_device(f"{prefix}_pair", "uint32(float32, float32)", link=source))


@functools.lru_cache(maxsize=None)
def _cluster_functions():
    """(rms_cluster_sum, rms_cluster_exit) as numba device functions (numba-cuda)."""
    from numba.cuda import CUSource
    source = CUSource(CLUSTER_SOURCE)
    return (cuda.declare_device("rms_cluster_sum", "float32(float32, int32)", link=source),
            cuda.declare_device("rms_cluster_exit", "int32()", link=source))


@functools.lru_cache(maxsize=None)
def make_kernel(dtype: str, items: int, full: bool, convert_once: bool = False,
                striped: bool = False, blocked: bool = False, threads: int | None = None,
                tail: bool = False, reduce: str = "warps", warp_rows: int = 0,
                late_weights: bool = False, cluster: int = 0, loads_barrier: bool = False,
                pairs: bool = True, cache: bool | None = None):
    """The kernel for rows of ``dtype`` with ``items`` elements per thread. ``full``: every row
    is exactly threads * items long, and x, w and y come as 16-byte ``VECTOR_BITS`` items
    (eight elements each; uint32 words where ``blocked``, uint64 where ``striped``); otherwise
    they come as elements and load guarded. ``convert_once``: keep each element's
    float32 value from the squares to the output (``items`` more registers) instead of
    converting it again. ``striped`` (full rows, ``items`` a multiple of 4): x, w and y come
    as uint64 words of four elements, loaded and stored striped (a warp's access is 256
    contiguous bytes) instead of in 16-byte vectors. ``blocked``: each thread's 16-byte vectors
    lie side by side in the row (one ``block.load`` of all of them), so a warp's load of its
    first vectors touches every other 16 bytes, and the L1 serves each 32-byte sector twice;
    by default vector v of every thread comes from the row's v-th slice of threads * 16
    bytes (a striped ``block.load`` of 16-byte items: a warp reads 512 contiguous bytes).
    ``threads``: the block size it will launch with, for its launch bounds (``SM_THREADS``).
    ``tail`` (with
    ``full``, not ``striped`` or ``blocked``): rows of whole 16-byte vectors (a multiple of 8
    elements) narrower than threads * items: the rows still come as 16-byte items, and a
    thread loads and stores only its items that lie in the row (zeros past it).
    ``reduce``: the block's reduction, one of ``REDUCTIONS``; CUB's (for a few rows: one block
    an SM whatever its registers) declare no launch bounds.
    ``warp_rows`` (with ``full``, not ``striped`` or ``blocked``): a warp per row instead of a
    block, ``warp_rows`` rows a block (``threads`` = 32 * ``warp_rows``; ``items`` per lane):
    ``warp.load`` and ``warp.store`` (CUB's WarpLoad and WarpStore, 16-byte vectors, a warp's
    access 512 contiguous bytes), ``warp.sum`` and a shuffle: no shared memory and no barrier.
    ``late_weights`` (with ``full``, not ``striped``, ``blocked`` or ``warp_rows``): load only x
    before the reduction, and each vector's weights after it, storing that vector's output at
    once (a thread holds x alone through the reduction: fewer registers, more blocks an SM).
    ``cluster`` (with ``full``, not ``striped``, ``blocked`` or ``warp_rows``; the two-stage
    reduction): the row is split in ``cluster`` parts of whole 16-byte vectors, one a block, and
    each cluster of that many blocks (a launch with that cluster shape, sm_90 or later: block b
    holds part b % cluster of row b // cluster) adds its blocks' sums through distributed shared
    memory (``CLUSTER_SOURCE``): a few wide rows load on that many SMs instead of one each.
    ``loads_barrier`` (with ``full``, not ``warp_rows``, ``late_weights`` or ``cluster``): a
    barrier right after the loads of x and w, and each product x * w formed before the reduction
    (``out = x * w * rstd``). ptxas otherwise issues the weights' loads late, after the row's
    squares, and a barrier is a point no load moves past, so every load of x and w is in
    flight at once: more bytes in flight an SM, which rows of thousands of rows, where the
    memory's bandwidth is the time, run 2% faster (docs/pytorch.md, run f); a few rows do not.
    ``pairs`` (full rows of at most four vectors a thread): each element read, and each two
    written, as half of a 32-bit word through ``PAIR_SOURCE`` (one instruction converts an
    element, one packs two), not through numba's element view of the 16-byte items: a third
    fewer instructions after the reduction; decode batches at 7,168 and 8,192 wide ran 5-6%
    faster on an H200 (docs/pytorch.md, run g).
    ``cache`` (default ``KERNEL_CACHE``): a ``cache=True`` kernel whose cache file names the
    variant, so processes compiling other variants at once never write the same file (numba
    keeps one index per function and rewrites it on every save)."""
    if reduce not in REDUCTIONS:
        raise ValueError(f"rms_norm: reduce={reduce!r} is none of {REDUCTIONS}")
    if late_weights and not (full and not striped and not blocked and not warp_rows):
        raise ValueError("rms_norm: late weights (late_weights) take rows of 16-byte vectors "
                         "in slices (full, not striped, blocked or a warp per row)")
    if warp_rows and not (full and not striped and not blocked and reduce == "warps"):
        raise ValueError("rms_norm: a warp per row (warp_rows) takes rows of 16-byte vectors "
                         "in slices (full, not striped or blocked) and its own reduction")
    if cluster and not (full and not striped and not blocked and not warp_rows and
                        reduce == "warps" and 2 <= cluster <= 8):
        raise ValueError(f"rms_norm: a cluster of {cluster} blocks a row takes 2 to 8 blocks, "
                         f"rows of 16-byte vectors in slices (full, not striped, blocked or a "
                         f"warp per row) and the two-stage reduction")
    if loads_barrier and not (full and not warp_rows and not late_weights and not cluster):
        raise ValueError("rms_norm: a barrier after the loads (loads_barrier) takes full rows "
                         "of a block, their weights loaded with them (not warp_rows, "
                         "late_weights or cluster)")
    # (the kernel names them in branches that numba prunes where cluster is 0)
    cluster_sum, cluster_exit = _cluster_functions() if cluster else (None, None)
    # full rows: each element read, and each two written, through ``PAIR_SOURCE``; up to four
    # vectors a thread (past them the loops of calls stay loops, and the arrays they index go
    # to local memory)
    pairs = pairs and full and items <= 4 * VECTOR
    low, high, pair = _pair_functions(dtype) if pairs else (None, None, None)
    element = np.dtype(dtype)
    words = items // 2
    quads = items // 4
    vectors = words // 4  # 16-byte vectors a thread
    vector_slots = max(vectors, 1)  # (striped kernels of half a vector name y_vecs too)
    two_stage = reduce == "warps"
    shared_sums = reduce == "warps_shared"
    if shared_sums and not threads:
        raise ValueError("rms_norm: reduce='warps_shared' adds each warp's sum: it needs the "
                         "block size (threads)")
    warps = -(-threads // WARP) if threads else WARP
    # full rows only: the guarded element-by-element path would spill at 32 registers, and
    # so would the other reductions and the cluster's at 16 items (their kernels, for a few
    # rows, where one block runs an SM, only promise their block size; the cluster's call
    # keeps a thread's vectors live across it)
    # four vectors a thread: the blocks that WIDE_REGISTERS a thread allow, where more than one
    wide_blocks = SM_REGISTERS // (threads * WIDE_REGISTERS) if threads else 0
    row_kernel = threads and full and two_stage and not warp_rows and not cluster
    bounds = {"launch_bounds": (threads, SM_THREADS // threads)} \
        if row_kernel and items <= VECTOR * VECTORS \
        else {"launch_bounds": (threads, wide_blocks)} \
        if row_kernel and items == 4 * VECTOR and wide_blocks > 1 \
        else {"launch_bounds": (threads,)} if threads and (not two_stage or cluster) else {}

    def rms_norm_kernel(x, w, y, hidden, eps):
        # rows of 16-byte vectors (full, not striped or blocked): x, w and y come as VECTOR_BITS
        # items; base, w_base: the first vector of this block's (or warp's) row and weights;
        # row: the vectors of the row (or of the block's part of it, in a cluster)
        w_base, row = 0, hidden >> 3
        inverse = libdevice.fast_fdividef(np.float32(1), np.float32(hidden))  # off the path
        if warp_rows:  # a warp's row
            base = (cuda.blockIdx.x * warp_rows + (cuda.threadIdx.x >> 5)) * row
            if base >= x.size:  # past the last row: the block's last warps
                return
        elif cluster:  # the block's part of its cluster's row
            part = row // cluster
            w_base = cuda.blockIdx.x % cluster * part
            base = cuda.blockIdx.x // cluster * row + w_base
            row = part
        elif full and not striped and not blocked:
            base = cuda.blockIdx.x * row
        if full and striped:
            base = cuda.blockIdx.x * (hidden >> 2)
            x_quads = local.array(quads, np.uint64)
            w_quads = local.array(quads, np.uint64)
            block.load(x[base:], x_quads, algorithm="striped")
            block.load(w, w_quads, algorithm="striped")
            vals = x_quads.view(element)
            weights = w_quads.view(element)
            x_pairs, w_pairs = x_quads.view(np.uint32), w_quads.view(np.uint32)
        elif full and blocked:
            base = cuda.blockIdx.x * (hidden >> 1)
            x_words = local.array(words, np.uint32)
            w_words = local.array(words, np.uint32)
            block.load(x[base:], x_words, algorithm="vectorize")
            block.load(w, w_words, algorithm="vectorize")
            vals = x_words.view(element)
            weights = w_words.view(element)
            x_pairs, w_pairs = x_words, w_words
        elif full:  # vector v of each thread (lane) from the row's v-th slice: striped
            x_vecs = local.array(vectors, VECTOR_BITS)
            w_vecs = local.array(vectors, VECTOR_BITS)
            if warp_rows:  # CUB's WarpLoad: a lane's vectors, 512 contiguous bytes a slice
                if tail:  # zeros past the row's end
                    warp.load(x[base:], x_vecs, algorithm="striped", num_valid_items=row,
                              oob_default=0)
                    warp.load(w, w_vecs, algorithm="striped", num_valid_items=row,
                              oob_default=0)
                else:
                    warp.load(x[base:], x_vecs, algorithm="striped")
                    warp.load(w, w_vecs, algorithm="striped")
            elif tail:
                block.load(x[base:], x_vecs, algorithm="striped", num_valid_items=row,
                           oob_default=0)
                if not late_weights:
                    block.load(w[w_base:], w_vecs, algorithm="striped", num_valid_items=row,
                               oob_default=0)
            else:
                block.load(x[base:], x_vecs, algorithm="striped")
                if not late_weights:
                    block.load(w[w_base:], w_vecs, algorithm="striped")
            vals = x_vecs.view(element)
            weights = w_vecs.view(element)
            x_pairs, w_pairs = x_vecs.view(np.uint32), w_vecs.view(np.uint32)
        else:
            base = cuda.blockIdx.x * hidden
            vals = local.array(items, element)
            weights = local.array(items, element)
            block.load(x[base:], vals, items, "direct", hidden, 0)
            block.load(w, weights, items, "direct", hidden, 0)
        if loads_barrier:  # every load issued before it (ptxas moves none past a barrier)
            cuda.syncthreads()
        kept = local.array(items, np.float32)
        squares = local.array(CHAINS, np.float32)  # independent chains of adds
        for j in range(CHAINS):  # -0.0: x + -0.0 is x, so the first add folds away
            squares[j] = np.float32(-0.0)
        for i in range(items):
            if pairs:
                v = low(x_pairs[i >> 1]) if i & 1 == 0 else high(x_pairs[i >> 1])
            else:
                v = np.float32(vals[i])
            squares[i % CHAINS] += v * v
            if convert_once:
                kept[i] = v
            elif loads_barrier:  # x * w now, so the weights' loads are needed as early
                if pairs:
                    kept[i] = v * (low(w_pairs[i >> 1]) if i & 1 == 0 else
                                   high(w_pairs[i >> 1]))
                else:
                    kept[i] = v * np.float32(weights[i])
        total = squares[0]
        for j in range(1, CHAINS):
            total += squares[j]
        if warp_rows:  # the row's sum, in every lane of its warp
            total = cuda.shfl_sync(0xFFFFFFFF, warp.sum(total), 0)
        elif shared_sums:
            warp_sums = cuda.shared.array(WARP, np.float32)
            total = warp.sum(total)  # valid in lane 0
            if cuda.threadIdx.x & 31 == 0:
                warp_sums[cuda.threadIdx.x >> 5] = total
            cuda.syncthreads()
            chains = local.array(4, np.float32)  # four independent chains of adds
            for j in range(4):  # -0.0: the adds of chains no warp fills fold away
                chains[j] = np.float32(-0.0)
            for i in range(warps):
                chains[i & 3] += warp_sums[i]
            total = (chains[0] + chains[1]) + (chains[2] + chains[3])
        elif two_stage:
            warp_sums = cuda.shared.array(WARP, np.float32)
            lane = cuda.threadIdx.x & 31
            total = warp.sum(total)  # valid in lane 0
            if lane == 0:
                warp_sums[cuda.threadIdx.x >> 5] = total
            cuda.syncthreads()
            total = warp_sums[lane] if lane < cuda.blockDim.x >> 5 else np.float32(0)
            total = cuda.shfl_sync(0xFFFFFFFF, warp.sum(total), 0)  # the row's, in every lane
            if cluster:  # the block's part's: the row's is its cluster's sum
                total = cluster_sum(total, cluster)
        else:
            row_sum = cuda.shared.array(1, np.float32)
            total = block.sum(total, algorithm=reduce)  # valid in thread 0
            if cuda.threadIdx.x == 0:
                row_sum[0] = total
            cuda.syncthreads()
            total = row_sum[0]
        r = libdevice.rsqrtf(total * inverse + eps)
        if late_weights:  # each vector's weights now (from L2), its output stored at once
            w_part = local.array(1, VECTOR_BITS)
            y_part = local.array(1, VECTOR_BITS)
            w_vals, y_vals = w_part.view(element), y_part.view(element)
            w_part_pairs, y_part_pairs = w_part.view(np.uint32), y_part.view(np.uint32)
            span = cuda.blockDim.x  # vectors of one slice
            for v in range(vectors):
                if not tail or v * span + cuda.threadIdx.x < row:
                    block.load(w[w_base + v * span:], w_part, algorithm="direct")
                    if pairs:
                        for k in range(VECTOR // 2):
                            word = x_pairs[VECTOR // 2 * v + k]
                            y_part_pairs[k] = pair(low(word) * r * low(w_part_pairs[k]),
                                                   high(word) * r * high(w_part_pairs[k]))
                    else:
                        for k in range(VECTOR):
                            y_vals[k] = np.float32(vals[VECTOR * v + k]) * r * \
                                np.float32(w_vals[k])
                    block.store(y[base + v * span:], y_part, algorithm="direct")
            if cluster:
                cluster_exit()
            return
        y_words = local.array(words, np.uint32)
        y_quads = local.array(quads, np.uint64)
        y_vecs = local.array(vector_slots, VECTOR_BITS)
        if pairs:  # two elements a word, one rounding each
            y_pairs = y_quads.view(np.uint32) if striped else y_words if blocked else \
                y_vecs.view(np.uint32)
            for k in range(words):
                if loads_barrier and not convert_once:
                    y_pairs[k] = pair(kept[2 * k] * r, kept[2 * k + 1] * r)
                else:
                    word, w_word = x_pairs[k], w_pairs[k]
                    a = kept[2 * k] if convert_once else low(word)
                    b = kept[2 * k + 1] if convert_once else high(word)
                    y_pairs[k] = pair(a * r * low(w_word), b * r * high(w_word))
        else:
            out = y_quads.view(element) if striped else y_words.view(element) if blocked \
                else y_vecs.view(element) if full else y_words.view(element)
            for i in range(items):  # one rounding
                if loads_barrier and not convert_once:
                    out[i] = kept[i] * r
                else:
                    v = kept[i] if convert_once else np.float32(vals[i])
                    out[i] = v * r * np.float32(weights[i])
        if full and striped:
            block.store(y[base:], y_quads, algorithm="striped")
        elif full and blocked:
            block.store(y[base:], y_words, algorithm="vectorize")
        elif full and warp_rows:  # CUB's WarpStore
            if tail:
                warp.store(y[base:], y_vecs, algorithm="striped", num_valid_items=row)
            else:
                warp.store(y[base:], y_vecs, algorithm="striped")
        elif full:
            if tail:
                block.store(y[base:], y_vecs, algorithm="striped", num_valid_items=row)
            else:
                block.store(y[base:], y_vecs, algorithm="striped")
        else:
            block.store(y[base:], out, items, "direct", hidden)
        if cluster:
            cluster_exit()

    if KERNEL_CACHE if cache is None else cache:
        variant = f"{dtype}_{items}_{threads}_{reduce}_{warp_rows}_{cluster}_" + "".join(
            "1" if flag else "0" for flag in (full, convert_once, striped, blocked, tail,
                                              late_weights, loads_barrier, pairs))
        rms_norm_kernel.__qualname__ += "_" + variant
        bounds["cache"] = True
    # fastmath: float32 denormals flush to zero and the division and rsqrt are the approximate
    # instructions alone, as in Triton's kernels by default; otherwise each takes a compare and
    # two scalings around it, on the path from the row's sum to the first store
    return cuda.jit(fastmath=True, **bounds)(rms_norm_kernel)


def _strided_memory_view():
    try:
        from cuda.core.utils import StridedMemoryView
    except ImportError:  # cuda.core before 0.4
        from cuda.core.experimental.utils import StridedMemoryView
    return StridedMemoryView


def _device(a, name: str):
    """A numba device array over the memory of ``a``, without a copy: numba's own arrays as
    they are; DLPack producers through DLPack (which names bfloat16); other
    ``__cuda_array_interface__`` objects as their typestr says, which cannot say bfloat16."""
    if cuda.is_cuda_array(a) and hasattr(a, "copy_to_host"):
        return a
    if hasattr(a, "__dlpack__") and not isinstance(a, np.ndarray):
        try:
            import ml_dtypes  # noqa: F401  (DLPack's bfloat16 becomes ml_dtypes.bfloat16)
        except ImportError:
            pass
        view = _strided_memory_view().from_dlpack(a, stream_ptr=-1)
        if not view.is_device_accessible:
            raise ValueError(f"rms_norm: {name} must be in GPU memory")
        dtype, shape = np.dtype(view.dtype), tuple(view.shape)
        c_strides = tuple(int(np.prod(shape[i + 1:])) for i in range(len(shape)))
        if view.strides is not None and any(n > 1 and s != c for n, s, c in
                                            zip(shape, view.strides, c_strides)):
            raise ValueError(f"rms_norm: {name} must be C-contiguous")
        bits = cuda.from_cuda_array_interface(
            {"data": (view.ptr, False), "shape": shape, "strides": None,
             "typestr": f"<u{dtype.itemsize}", "version": 3}, owner=a, sync=False)
        return bits.view(dtype)  # as bits first: numba reads bfloat16's typestr as void
    if cuda.is_cuda_array(a):
        return cuda.as_cuda_array(a)
    raise ValueError(f"rms_norm: {name} must be a device array (numba's, or one with "
                     f"__dlpack__ or __cuda_array_interface__), not {type(a).__name__}")


def _dtype_name(a) -> str:
    return np.dtype(a.dtype).name


def rms_norm(x, w, eps: float = 1e-6, out=None, stream=0, threads: int | None = None):
    """RMSNorm of each row of ``x`` (rows, hidden), float16 or bfloat16 device arrays, with
    weight ``w`` (hidden,) of the same type. Returns ``out`` (made when not given; given, it is
    written in place, whatever kind of device array it is). ``threads`` overrides ``plan``."""
    result, launch = prepare(x, w, eps, out, stream, threads)
    if launch is not None:
        kernel, rows, threads, args = launch
        kernel[rows, threads, stream](*args)
    return result


def prepare(x, w, eps: float = 1e-6, out=None, stream=0, threads: int | None = None,
            convert_once: bool = False, striped: bool = False, blocked: bool = False):
    """``rms_norm``'s checks and views: (result, (kernel, rows, threads, kernel arguments)),
    or (result, None) when there is nothing to do. ``convert_once``, ``striped``, ``blocked``:
    see ``make_kernel`` (``striped`` applies to full rows of a multiple of 4 items a
    thread)."""
    x, w = _device(x, "x"), _device(w, "w")
    if x.ndim != 2:
        raise ValueError(f"rms_norm: x must be 2-D (rows, hidden), not {x.ndim}-D")
    rows, hidden = x.shape
    if _dtype_name(x) not in DTYPES or _dtype_name(w) != _dtype_name(x):
        raise ValueError(f"rms_norm: x and w must both be float16 or bfloat16, not "
                         f"{_dtype_name(x)} and {_dtype_name(w)}")
    if w.shape != (hidden,):
        raise ValueError(f"rms_norm: w has shape {w.shape}, must be ({hidden},)")
    if out is None:
        out = cuda.device_array((rows, hidden), x.dtype, stream=stream)
    result, out = out, _device(out, "out")
    if out.shape != x.shape or out.dtype != x.dtype:
        raise ValueError(f"rms_norm: out must be {x.dtype} of shape {x.shape}")
    if not (x.is_c_contiguous() and out.is_c_contiguous()):
        raise ValueError("rms_norm: x and out must be C-contiguous")
    if rows == 0:
        return result, None
    threads, items = plan(hidden, threads)
    flat = [a.reshape(a.size) for a in (x, w, out)]
    # 16-byte items (and words) need 16-byte aligned rows; others take the guarded kernel
    full = threads * items == hidden and aligned(*flat)
    striped = striped and full and items % 4 == 0
    blocked = blocked and full
    kernel = make_kernel(_dtype_name(x), items, full, convert_once, striped, blocked, threads)
    if full:  # as 16-byte items, or words (the module docstring says why)
        flat = [a.view(np.uint64 if striped else np.uint32 if blocked else VECTOR_BITS)
                for a in flat]
    return result, (kernel, rows, threads, (*flat, np.int32(hidden), np.float32(eps)))


def aligned(*arrays) -> bool:
    """Whether every one of ``arrays`` (numba device arrays) starts on a 16-byte boundary."""
    return all(a.__cuda_array_interface__["data"][0] % 16 == 0 for a in arrays)


def reference(x, w, eps: float = 1e-6) -> np.ndarray:
    """numpy's answer in float64 from the rows' values (float32 accumulation is checked
    against it with ``tolerance``)."""
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    rstd = 1.0 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + eps)
    return x64 * rstd * w64


def unit_roundoff(dtype) -> float:
    name = np.dtype(dtype).name
    return {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24}[name]


def tolerance(dtype, hidden: int, roundings: int = 1):
    """(relative, absolute) worst-case error of the kernel against ``reference``: the float32
    sum of squares (any order: (hidden - 1) u32 relative, halved by the square root), the
    approximate division and reciprocal square root (2 ulp each) and two products (8 u32
    between them), and the final rounding to the row's type (u of the type; absolute: half
    its smallest subnormal). It holds for rows whose elements are zero or at least 2^-126 in
    magnitude: the kernels flush float32 denormals to zero (``fastmath``), so a bfloat16
    subnormal reads as zero, as in Triton's and Inductor's kernels (every float16 value is a
    normal float32).
    ``roundings``: how many times an implementation rounds to the row's type (2 where x * rstd
    is rounded before the product with w, as PyTorch's composite ``rms_norm`` does)."""
    u32 = unit_roundoff(np.float32)
    rel = roundings * unit_roundoff(dtype) + ((hidden - 1) / 2 + 8) * u32
    tiny = 2.0**-25 if np.dtype(dtype).name == "float16" else 2.0**-134
    return rel, roundings * tiny


def worst_error(got, want, dtype, hidden: int, roundings: int = 1) -> float:
    """The largest error of ``got`` against ``want`` (float64) as a fraction of
    ``tolerance``: at most 1 passes."""
    rel, tiny = tolerance(dtype, hidden, roundings)
    err = np.abs(got.astype(np.float64) - want)
    return float(np.max(err / (rel * np.abs(want) + tiny))) if err.size else 0.0


def random_inputs(rng, rows: int, hidden: int, dtype):
    dt = np.dtype(dtype)
    x = rng.normal(0, 1, (rows, hidden)).astype(dt)
    w = rng.uniform(0.5, 1.5, hidden).astype(dt)
    return x, w


def to_device(a):
    """A host array on the GPU; bfloat16 has no buffer protocol (numpy's 'E'), so its bits
    travel as uint16 and the device array is viewed as bfloat16 again."""
    if a.dtype.name == "bfloat16":
        return cuda.to_device(a.view(np.uint16)).view(a.dtype)
    return cuda.to_device(a)


def to_host(d):
    if d.dtype.name == "bfloat16":
        return d.view(np.uint16).copy_to_host().view(d.dtype)
    return d.copy_to_host()


def check(rows: int, hidden: int, dtype, eps: float = 1e-6, rng=None,
          threads: int | None = None) -> float:
    """Normalize random rows on the GPU and compare with numpy; returns the largest error
    as a fraction of the tolerance."""
    import ml_dtypes  # noqa: F401  (np.dtype("bfloat16"))

    rng = rng or np.random.default_rng()
    x, w = random_inputs(rng, rows, hidden, dtype)
    got = to_host(rms_norm(to_device(x), to_device(w), eps, threads=threads))
    worst = worst_error(got, reference(x, w, eps), dtype, hidden)
    assert worst <= 1.0, f"rms_norm {np.dtype(dtype).name} {rows}x{hidden}: error {worst:.2f}x " \
                         f"the tolerance"
    return worst


if __name__ == "__main__":
    for dtype in DTYPES:
        for rows, hidden in ((1, 32), (7, 1000), (64, 4096), (33, 8192), (5, 12288)):
            check(rows, hidden, dtype)
    print("rms_norm: float16 and bfloat16 rows (32 to 12288 wide) match numpy within the "
          "worst-case float32-accumulation tolerance")
