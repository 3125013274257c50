"""``examples/rms_norm.py`` as a PyTorch layer, through ``coopgen.torch`` and ``coopgen.autotune``:
a few µs of host time per call, PyTorch's current stream (``torch.cuda.graph`` captures it), and
a ``torch.library`` custom op, so ``torch.compile(fullgraph=True)`` compiles a model that calls
it without a graph break.

    import torch_rms_norm
    y = torch_rms_norm.rms_norm(x, w, 1e-6)          # x (..., hidden) float16 / bfloat16
    y = torch.ops.coopgen.rms_norm(x, w, 1e-6)       # the custom op (after ``register()``)

The block size, the 16-byte vectors a thread holds and the kernel's variant are not chosen by a
rule: the first call of each (dtype, hidden, bucket of rows) times the candidates ``CONFIGS``
on the GPU and keeps the fastest (``coopgen.autotune``; cached on disk for later processes).

    python examples/torch_rms_norm.py    # checks it, in eager, a CUDA graph and torch.compile
"""
from __future__ import annotations

import functools

import numpy as np
import torch

import coopgen.torch as ct
import rms_norm as example
from _compiler import COMPILER
from coopgen.autotune import Config, autotune, pow2

#: candidates: 16-byte vectors a thread holds (the block size follows from hidden), and the
#: kernel's variant: vectors in slices of the row ("sliced"; rows of whole vectors narrower
#: than the block's vectors skip those past the end), striped 8-byte words or each thread's
#: vectors side by side ("striped", "blocked": rows exactly the block's vectors), or elements
#: one at a time, guarded ("elements": any width); convert_once keeps each float32 value;
#: reduce: the block's reduction (``example.REDUCTIONS``; "warps_shared": the warps' sums
#: added by every thread from shared memory, for any rows); late: the weights loaded after the
#: reduction, a vector at a time ("sliced" rows of 1 to 8 vectors a thread: a thread holds
#: only x through the reduction, as Triton's row kernels do).
#: "warp": a warp per row, ``warp_rows`` rows a block, ``vectors`` 16-byte vectors a lane
#: (rows of whole vectors up to 256 * 8 = 2,048 elements: the narrow rows, where a block's
#: barrier and second reduction are most of the time after the loads).
#: Decode candidates (``decode_only``: for at most ``DECODE_ROWS`` rows, where one block an SM
#: runs and its latency is the time): CUB's block reductions (BlockReduce's raking or warp
#: reductions), half a
#: vector a thread (``vectors=0.5``, striped 8-byte words: 1,024 threads at 4,096 wide), a
#: warp per row in blocks of one warp (each row on an SM of its own), and a row split over a
#: cluster of ``cluster`` blocks (``CLUSTERS``: each part on an SM of its own).
#: Bulk candidates (``bulk_only``: for more than ``DECODE_ROWS`` rows, where the memory's
#: bandwidth is the time): a barrier right after the loads (``barrier``), so that all of x's and
#: w's loads are in flight at once (``example.make_kernel``'s ``loads_barrier``), with and
#: without ``pairs``.
#: pairs: elements read and written two a 32-bit word through ``example.PAIR_SOURCE`` (every
#: candidate of up to four vectors a thread; ``pairs=False``, numba's element views of the
#: 16-byte items, is kept for the barrier candidates, where a probe timed it 1% faster at
#: 4,096 x 8,192 bfloat16 and 16,384 x 4,096 float16, and 3% slower at 1,024 x 4,096).


def _config(vectors, variant, convert_once=False, reduce="warps", warp_rows=0,
            late=False, cluster=0, barrier=False, pairs=True) -> Config:
    return Config(vectors=vectors, variant=variant, convert_once=convert_once, reduce=reduce,
                  warp_rows=warp_rows, late=late, cluster=cluster, barrier=barrier, pairs=pairs)


#: blocks a row of the "sliced" variant's cluster candidates (sm_90 and later; decode batches
#: of rows of at least ``CLUSTER_PART`` elements a block): a few wide rows load on that many SMs
#: each, their blocks' sums added through distributed shared memory
CLUSTERS = (2, 4, 8)
CLUSTER_PART = 1024
WARP_ROWS = (4, 1)  # rows a block of the "warp" variant: 128 threads, or 32 for decode batches
CONFIGS = [_config(v, variant) for v in (1, 2, 3, 4) for variant in ("sliced", "striped")] + \
    [_config(2, "blocked"), _config(2, "sliced", convert_once=True), _config(1, "elements"),
     _config(2, "elements")] + \
    [_config(v, "warp", warp_rows=r) for r in WARP_ROWS for v in range(1, 9)] + \
    [_config(0.5, "striped")] + \
    [_config(v, "sliced", reduce=r) for r in example.REDUCTIONS[1:] for v in (1, 2)] + \
    [_config(v, "sliced", late=True) for v in (4, 5, 6, 8)] + \
    [_config(v, "sliced", cluster=c) for c in CLUSTERS for v in (1, 2)] + \
    [_config(v, "sliced", barrier=True) for v in (1, 2)] + \
    [_config(v, "sliced", late=True) for v in (1, 2, 3)] + \
    [_config(v, "sliced", barrier=True, pairs=False) for v in (1, 2)]
DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16"}
DECODE_ROWS = 64  # the most rows (their bucket, ``pow2``) a decode candidate is timed for


def decode_only(config: Config) -> bool:
    """Whether ``config`` is a candidate only for buckets of at most ``DECODE_ROWS`` rows."""
    return config.reduce not in ("warps", "warps_shared") or config.vectors < 1 or \
        config.warp_rows == 1 or config.cluster > 0


def bulk_only(config: Config) -> bool:
    """Whether ``config`` is a candidate only for buckets of more than ``DECODE_ROWS`` rows."""
    return config.barrier


def for_rows(config: Config, rows: int) -> bool:
    """Whether the autotuner times ``config`` for ``rows`` rows (their bucket): decode
    candidates only for a few rows, bulk candidates only for more."""
    few = pow2(rows) <= DECODE_ROWS
    return few if decode_only(config) else not few if bulk_only(config) else True


def threads_for(hidden: int, vectors) -> int:
    """The block size where each thread holds ``vectors`` 16-byte vectors of the row."""
    threads = 32 * -(-hidden // int(example.VECTOR * vectors * 32))
    if threads > example.MAX_THREADS:
        raise ValueError(f"rms_norm: {vectors} vectors a thread need {threads} threads for "
                         f"rows of {hidden}, more than {example.MAX_THREADS}")
    return threads


def kernel_plan(dtype: str, hidden: int, config: Config) -> tuple[int, tuple, object, int]:
    """(threads, ``example.make_kernel``'s arguments, the view of x, w and y, rows a block) of
    the example's kernel for rows of ``hidden`` under ``config``; ValueError where ``config``
    is no candidate for that width (its variant cannot hold the row, or the width leaves it
    fewer vectors a thread than it names: the kernel of another candidate)."""
    whole = hidden % example.VECTOR == 0  # rows of whole 16-byte vectors
    if config.variant == "warp":
        items = example.VECTOR * config.vectors  # a lane's
        if not whole or -(-hidden // (example.VECTOR * 32)) != config.vectors:
            raise ValueError(f"rms_norm: rows of {hidden} are no rows of {config.vectors} "
                             f"16-byte vectors a lane for a warp")
        threads = 32 * config.warp_rows
        return threads, (dtype, items, True, config.convert_once, False, False, threads,
                         32 * items != hidden, config.reduce, config.warp_rows, False, 0,
                         False, config.pairs), example.VECTOR_BITS, config.warp_rows
    if config.vectors < 1:  # part of a vector a thread: striped words of the whole row
        items = int(example.VECTOR * config.vectors)
        threads = hidden // items
        if config.variant != "striped" or hidden % (32 * items) or \
                not 32 <= threads <= example.MAX_THREADS:
            raise ValueError(f"rms_norm: rows of {hidden} are no {config.variant} rows of "
                             f"{items} elements for each of at most {example.MAX_THREADS} "
                             f"threads")
        return threads, (dtype, items, True, config.convert_once, True, False, threads, False,
                         config.reduce, 0, False, 0, False, config.pairs), np.uint64, 1
    width = hidden // (config.cluster or 1)  # a block's: the row, or its part of the row
    if config.cluster and (config.variant != "sliced" or config.reduce != "warps" or
                           config.late or hidden % (example.VECTOR * config.cluster) or
                           width < CLUSTER_PART):
        raise ValueError(f"rms_norm: rows of {hidden} are no sliced rows of {config.cluster} "
                         f"parts of at least {CLUSTER_PART} elements of whole 16-byte vectors")
    threads, items = example.plan(width, threads_for(width, config.vectors))
    if items != example.VECTOR * config.vectors:
        raise ValueError(f"rms_norm: {config.vectors} vectors a thread are {threads} x {items} "
                         f"for rows of {width}: the kernel of {items // example.VECTOR}")
    full = threads * items == width  # items are whole vectors: striped fits them
    words = {"sliced": whole, "elements": False}.get(config.variant, full)
    elements = config.variant == "elements"
    if elements and full or not elements and not words or \
            config.late and (config.variant != "sliced" or not words) or \
            config.barrier and (elements or config.late or config.cluster):
        raise ValueError(f"rms_norm: the {config.variant} variant{' with late weights' * config.late}"
                         f" is not one for rows of {hidden} at {threads} x {items}")
    striped, blocked = config.variant == "striped", config.variant == "blocked"
    # x, w and y as 16-byte items, words or flat rows of elements: views the kernel asks for
    view = (np.uint64 if striped else np.uint32 if blocked else example.VECTOR_BITS) \
        if words else "flat"
    return threads, (dtype, items, words, config.convert_once, striped, blocked, threads,
                     words and not full, config.reduce, 0, config.late, config.cluster,
                     config.barrier, config.pairs), view, 1


@functools.lru_cache(maxsize=None)
def unaligned_launcher(dtype: str, hidden: int):
    """(launcher, threads) of the kernel for rows that do not start on a 16-byte boundary (a
    view of a buffer at an odd offset): every candidate but the "elements" variant sees the
    rows as 16-byte items or words, so this one kernel loads elements one at a time, guarded,
    at ``example.plan``'s block size. It is not tuned: such rows are rare, and slower."""
    threads, items = example.plan(hidden)
    kernel = example.make_kernel(dtype, items, False, threads=threads)
    return ct.launcher(kernel, views={0: "flat", 1: "flat", 2: "flat"},
                       scalars={3: np.int32, 4: np.float32}), threads


def _unaligned(x, w, eps, out):
    launch, threads = unaligned_launcher(DTYPES[x.dtype], x.shape[-1])
    launch.launch((x.numel() // x.shape[-1], 1, 1), (threads, 1, 1),
                  (x, w, out, x.shape[-1], eps))
    return out


@functools.lru_cache(maxsize=None)
def launcher_for(dtype: str, hidden: int, config: Config):
    """(launcher, threads, rows a block) of the example's kernel for rows of ``hidden`` under
    ``config``."""
    threads, arguments, view, per_block = kernel_plan(dtype, hidden, config)
    # hidden and eps: Python numbers passed as the kernel's int32 and float32
    return ct.launcher(example.make_kernel(*arguments), views={0: view, 1: view, 2: view},
                       scalars={3: np.int32, 4: np.float32},
                       cluster=config.cluster or None), threads, per_block


def _key(x, w, eps, out):
    hidden = x.shape[-1]
    return x.dtype, hidden, pow2(x.numel() // hidden)


def clusters_on(device: torch.device) -> bool:
    """Whether ``device`` launches thread-block clusters (compute capability 9.0 and later; a
    tensor on the meta device, which the candidates' tests use, is taken to) and the kernels'
    compiler has them (numba-cuda; numba-cuda-mlir's launch has no cluster shape)."""
    return COMPILER == "numba" and (
        device.type != "cuda" or torch.cuda.get_device_capability(device) >= (9, 0))


def _prune(configs, x, w, eps, out):
    clusters = clusters_on(x.device)
    return [c for c in configs if for_rows(c, x.numel() // x.shape[-1]) and
            (clusters or not c.cluster)]


def grid_for(rows: int, per_block: int, config: Config) -> tuple:
    """The grid of ``rows`` rows: a block per ``per_block`` rows, or ``config.cluster``
    blocks a row."""
    return (-(-rows // per_block) * (config.cluster or 1), 1, 1)


#: the copies of x and out the autotuner's timing cycles through hold this many L2 caches ...
COLD_L2 = 4  # as tools/bench/rmsnorm.py's L2_MULTIPLE
#: ... in at most this many copies. The benchmark cycles through at most 150 copies of x, but
#: each of its five peers writes copies of y of its own, so that a copy of x comes back to a
#: peer after about six times its bytes: at 64 x 1,024 float16, 150 copies of x and out (38 MB)
#: stay in an H200's L2, and the kernel they ranked first ran 9% slower in the benchmark. Rows
#: of a few KB stay in the L2 in both (1,024 copies of one row of 1,024 are 4 MB).
MAX_COPIES = 1024


def _copies(x, w, eps, out):
    """Arguments for the timing to cycle through (``coopgen.autotune``'s ``copies``): x and
    out, and copies of them holding ``COLD_L2`` L2 caches between them (at most
    ``MAX_COPIES``), so that a candidate is timed on x read from memory, not on the L2 an
    earlier call filled (a row or two fit the L2 whatever the copies: there the time is the
    latency of L2 hits, as in a decode loop). Only x and out where they are that large
    already; none where the GPU has no room for the copies."""
    l2 = torch.cuda.get_device_properties(x.device).L2_cache_size
    n = min(MAX_COPIES, -(-COLD_L2 * l2 // max(2 * x.numel() * x.element_size(), 1)))
    out = torch.empty_like(x) if out is None else out
    try:
        return [((x, w, eps, out), {})] + [
            ((x.clone(), w, eps, torch.empty_like(out)), {}) for _ in range(n - 1)]
    except torch.cuda.OutOfMemoryError:
        return []


# version 3: a warp per row, other block reductions and half vectors for decode batches; timed
# on copies of x. Version 4: four vectors a thread bounded to the blocks 56 registers allow.
# Version 5: late weights (each vector's weights loaded after the reduction) at 4-8 vectors.
# Version 6: a row split over a cluster of 2, 4 or 8 blocks, for decode batches. Version 7:
# rows of 16-byte items, and a barrier after the loads for more than DECODE_ROWS rows.
# Version 8: late weights at 1 to 3 vectors too, the warps' sums from shared memory for any rows,
# and the timing in the benchmark's batches, cycling through the copies across candidates.
@autotune(CONFIGS, _key, name="examples.rms_norm", version="9", prune=_prune, copies=_copies)
def _run(x, w, eps, out, *, config):
    hidden = x.shape[-1]
    rows = x.numel() // hidden
    launch, threads, per_block = launcher_for(DTYPES[x.dtype], hidden, config)
    launch.launch(grid_for(rows, per_block, config), (threads, 1, 1), (x, w, out, hidden, eps))
    return out


#: (x's dtype, x's shape) -> (w's shape, the tuned kernel's guarded launch, grid, block,
#: hidden): a later call of a shape seen compares two shapes and launches, the launch checking
#: every tensor's dtype, contiguity and device (``coopgen.torch.Launcher.guarded``)
_ready: dict = {}


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6,
             out: torch.Tensor | None = None, config: Config | None = None) -> torch.Tensor:
    """RMSNorm over the last axis of ``x`` (C-contiguous, float16 or bfloat16 on the GPU) with
    weight ``w`` (hidden,) of the same type, on PyTorch's current stream. Returns ``out`` (made
    when not given). ``config``: one of ``CONFIGS`` instead of the autotuned choice."""
    shape = x.shape
    ready = None if config is not None else _ready.get((x.dtype, shape))
    if ready is not None:
        w_shape, run, grid, block, hidden = ready
        if out is None:
            out = torch.empty_like(x, memory_format=torch.contiguous_format)
        if w.shape == w_shape and out.shape == shape:
            try:
                if run(grid, block, None, 0, (x, w, out, hidden, eps)):
                    return out
            except ct.MisalignedView:  # (the launch checks before it launches)
                return _unaligned(x, w, eps, out)
    return _checked(x, w, eps, out, config)


def _checked(x, w, eps, out, config):
    """``rms_norm`` after the checks: the first call of a shape, or arguments that are not
    those of its tuned launch."""
    hidden = x.shape[-1]
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    elif out.shape != x.shape or out.dtype != x.dtype:
        raise ValueError(f"rms_norm: out must be {x.dtype} of shape {tuple(x.shape)}, not "
                         f"{out.dtype} of shape {tuple(out.shape)}")
    if x.dtype not in DTYPES or w.dtype != x.dtype or w.shape != (hidden,):
        raise ValueError(f"rms_norm: x must be float16 or bfloat16 and w ({hidden},) of its "
                         f"type, not {x.dtype} and {w.dtype} {tuple(w.shape)}")
    if x.numel():
        if (x.data_ptr() | w.data_ptr() | out.data_ptr()) % 16:
            _unaligned(x, w, eps, out)
        elif config is None:
            _run(x, w, eps, out)
            config = _run.config_for(x, w, eps, out)
            launch, threads, per_block = launcher_for(DTYPES[x.dtype], hidden, config)
            # the launch _run made, this signature's, for tensors of these shapes (checked)
            run = launch.guarded(sized=(x, w, out, hidden, eps))
            if run is not None:
                _ready[x.dtype, x.shape] = (w.shape, run, grid_for(x.numel() // hidden,
                                                                   per_block, config),
                                            (threads, 1, 1), hidden)
        else:
            _run.fn(x, w, eps, out, config=config)
    return out


def _op(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    return rms_norm(x.contiguous(), w.contiguous(), eps)


def _checks(x, w, eps):
    torch._check(w.shape == (x.shape[-1],), lambda: "rms_norm: w must be (hidden,)")
    torch._check(x.dtype == w.dtype, lambda: "rms_norm: x and w must be of one type")


def register():
    """``torch.ops.coopgen.rms_norm(x, w, eps)``: a custom op for CUDA tensors whose fake
    implementation gives torch.compile the output's shape and type."""
    return ct.custom_op("coopgen::rms_norm", _op, outputs=ct.like("x"), checks=_checks)


def reference(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """The answer in float64."""
    x64 = x.double()
    return x64 * torch.rsqrt((x64 * x64).mean(-1, keepdim=True) + eps) * w.double()


def worst_error(got: torch.Tensor, want: torch.Tensor, hidden: int) -> float:
    """``got``'s largest error against the float64 ``want``, as a fraction of the example's
    worst-case tolerance (at most 1 passes)."""
    rel, tiny = example.tolerance(str(got.dtype).removeprefix("torch."), hidden)
    return float(((got.double() - want).abs() / (rel * want.abs() + tiny)).max())


def check(shape=(3, 77, 4096), dtype=torch.bfloat16, eps: float = 1e-6) -> None:
    """Eager calls, a captured CUDA graph replayed on new inputs, and a compiled model."""
    gen = torch.Generator(device="cuda").manual_seed(sum(shape))
    x = torch.randn(shape, device="cuda", generator=gen).to(dtype)
    w = (torch.rand(shape[-1], device="cuda", generator=gen) + 0.5).to(dtype)
    for _ in range(2):  # tuned and compiled, then the launcher's raw launch
        assert worst_error(rms_norm(x, w, eps), reference(x, w, eps), shape[-1]) <= 1
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        y = rms_norm(x, w, eps)
    x.copy_(torch.randn(shape, device="cuda", generator=gen))
    graph.replay()
    torch.cuda.synchronize()
    assert worst_error(y, reference(x, w, eps), shape[-1]) <= 1
    op = register()
    model = torch.compile(lambda x, w: op(x, w, eps), fullgraph=True)
    assert worst_error(model(x, w), reference(x, w, eps), shape[-1]) <= 1


if __name__ == "__main__":
    for dtype in (torch.float16, torch.bfloat16):
        check(dtype=dtype)
    print("torch_rms_norm: eager, CUDA graph and torch.compile(fullgraph=True) match float64")
