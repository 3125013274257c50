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
from coopgen.autotune import Config, autotune, pow2

#: candidates: 16-byte vectors a thread holds (the block size follows from hidden), and the
#: kernel's variant: vectors in slices of the row ("sliced"; rows of whole vectors narrower
#: than the block's vectors skip those past the end), striped 8-byte words or each thread's
#: vectors side by side ("striped", "blocked": rows exactly the block's vectors), or elements
#: one at a time, guarded ("elements": any width); convert_once keeps each float32 value
CONFIGS = [Config(vectors=v, variant=variant, convert_once=False)
           for v in (1, 2, 3, 4) for variant in ("sliced", "striped")] + \
    [Config(vectors=2, variant="blocked", convert_once=False),
     Config(vectors=2, variant="sliced", convert_once=True),
     Config(vectors=1, variant="elements", convert_once=False),
     Config(vectors=2, variant="elements", convert_once=False)]
DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16"}


def threads_for(hidden: int, vectors: int) -> int:
    """The block size where each thread holds ``vectors`` 16-byte vectors of the row."""
    threads = 32 * -(-hidden // (example.VECTOR * vectors * 32))
    if threads > example.MAX_THREADS:
        raise ValueError(f"rms_norm: {vectors} vectors a thread need {threads} threads for "
                         f"rows of {hidden}, more than {example.MAX_THREADS}")
    return threads


def kernel_plan(dtype: str, hidden: int, config: Config) -> tuple[int, tuple, object]:
    """(threads, ``example.make_kernel``'s arguments, the view of x, w and y) of the example's
    kernel for rows of ``hidden`` under ``config``; ValueError where ``config`` is no candidate
    for that width (its variant cannot hold the row, or the width leaves it fewer vectors a
    thread than it names: the kernel of another candidate)."""
    threads, items = example.plan(hidden, threads_for(hidden, config.vectors))
    if items != example.VECTOR * config.vectors:
        raise ValueError(f"rms_norm: {config.vectors} vectors a thread are {threads} x {items} "
                         f"for rows of {hidden}: the kernel of {items // example.VECTOR}")
    full = threads * items == hidden  # items are whole vectors: striped fits them
    whole = hidden % example.VECTOR == 0  # rows of whole 16-byte vectors
    words = {"sliced": whole, "elements": False}.get(config.variant, full)
    elements = config.variant == "elements"
    if elements and full or not elements and not words:
        raise ValueError(f"rms_norm: the {config.variant} variant is not one for rows of "
                         f"{hidden} at {threads} x {items}")
    striped = config.variant == "striped"
    # x, w and y as words (16-byte accesses) or flat rows of elements: views the kernel asks
    # for
    view = (np.uint64 if striped else np.uint32) if words else "flat"
    return threads, (dtype, items, words, config.convert_once, striped,
                     config.variant == "blocked", threads, words and not full), view


@functools.lru_cache(maxsize=None)
def launcher_for(dtype: str, hidden: int, config: Config):
    """(launcher, threads) of the example's kernel for rows of ``hidden`` under ``config``."""
    threads, arguments, view = kernel_plan(dtype, hidden, config)
    # hidden and eps: Python numbers passed as the kernel's int32 and float32
    return ct.launcher(example.make_kernel(*arguments), views={0: view, 1: view, 2: view},
                       scalars={3: np.int32, 4: np.float32}), threads


def _key(x, w, eps, out):
    hidden = x.shape[-1]
    return x.dtype, hidden, pow2(x.numel() // hidden)


# version 2: candidates that repeat another's kernel for a width are no candidates for it
@autotune(CONFIGS, _key, name="examples.rms_norm", version="2")
def _run(x, w, eps, out, *, config):
    hidden = x.shape[-1]
    launch, threads = launcher_for(DTYPES[x.dtype], hidden, config)
    launch.launch((x.numel() // hidden, 1, 1), (threads, 1, 1),
                  (x, w, out, hidden, eps))
    return out


#: (x's dtype, x's shape, w's dtype, w's shape) -> (launch, grid, block, hidden) of the tuned
#: kernel: a later call of a shape seen reads four fields and launches (the launcher still
#: checks every tensor's dtype, rank, contiguity and device)
_ready: dict = {}


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6,
             out: torch.Tensor | None = None, config: Config | None = None) -> torch.Tensor:
    """RMSNorm over the last axis of ``x`` (C-contiguous, float16 or bfloat16 on the GPU) with
    weight ``w`` (hidden,) of the same type, on PyTorch's current stream. Returns ``out`` (made
    when not given). ``config``: one of ``CONFIGS`` instead of the autotuned choice."""
    shape = x.shape
    ready = None if config is not None else _ready.get((x.dtype, shape, w.dtype, w.shape))
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    elif out.shape != shape or out.dtype != x.dtype:
        raise ValueError(f"rms_norm: out must be {x.dtype} of shape {tuple(x.shape)}, not "
                         f"{out.dtype} of shape {tuple(out.shape)}")
    if ready is not None:
        launch, grid, block, hidden = ready
        launch(grid, block, (x, w, out, hidden, eps))
        return out
    hidden = x.shape[-1]
    if x.dtype not in DTYPES or w.dtype != x.dtype or w.shape != (hidden,):
        raise ValueError(f"rms_norm: x must be float16 or bfloat16 and w ({hidden},) of its "
                         f"type, not {x.dtype} and {w.dtype} {tuple(w.shape)}")
    if x.numel():
        if config is None:
            _run(x, w, eps, out)
            launch, threads = launcher_for(DTYPES[x.dtype], hidden,
                                           _run.config_for(x, w, eps, out))
            _ready[x.dtype, x.shape, w.dtype, w.shape] = (
                launch.launch, (x.numel() // hidden, 1, 1), (threads, 1, 1), hidden)
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
