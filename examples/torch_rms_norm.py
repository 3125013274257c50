"""``examples/rms_norm.py`` as a PyTorch layer: a few µs of host time per call, PyTorch's current
stream (so ``torch.cuda.graph`` captures it), and a ``torch.library`` custom op with a fake
implementation, so ``torch.compile(fullgraph=True)`` compiles a model that calls it without a
graph break.

    import torch_rms_norm
    y = torch_rms_norm.rms_norm(x, w, 1e-6)          # x (..., hidden) float16 / bfloat16
    y = torch.ops.coopgen.rms_norm(x, w, 1e-6)       # the custom op (after ``register()``)

The first call of each (dtype, hidden, block size) goes through the example's own checks and
numba's launch; ``fast_launch.Launcher`` keeps what numba chose, and later calls pass raw
pointers to the driver (``fast_launch`` says how).

    python examples/torch_rms_norm.py    # checks it, in eager, a CUDA graph and torch.compile
"""
from __future__ import annotations

import functools

import torch
from numba import cuda

import rms_norm as example
from fast_launch import Launcher, torch_stream

#: (x dtype, w dtype, hidden, threads, convert_once, striped, blocked) -> its Launcher.
_launchers: dict = {}


def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6,
             out: torch.Tensor | None = None, threads: int | None = None,
             convert_once: bool = False, striped: bool = False,
             blocked: bool = False) -> torch.Tensor:
    """RMSNorm over the last axis of ``x`` (C-contiguous, float16 or bfloat16 on the GPU) with
    weight ``w`` (hidden,) of the same type, on PyTorch's current stream. Returns ``out``
    (made when not given). ``threads``, ``convert_once``, ``striped``, ``blocked``: the example's
    variants (``rms_norm.make_kernel``)."""
    hidden = x.shape[-1]
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    elif out.shape != x.shape or out.dtype != x.dtype:
        raise ValueError(f"rms_norm: out must be {x.dtype} of shape {tuple(x.shape)}, not "
                         f"{out.dtype} of shape {tuple(out.shape)}")
    rows = x.numel() // hidden if hidden else 0
    if rows == 0:
        return out
    variant = (threads, convert_once, striped, blocked)
    launcher = _launchers.get((x.dtype, w.dtype, hidden, *variant))
    if launcher is None:
        _first(x, w, eps, out, variant)
    elif w.shape != (hidden,):
        raise ValueError(f"rms_norm: w has shape {tuple(w.shape)}, must be ({hidden},)")
    else:
        launcher(rows, x, w, out, hidden, eps)
    return out


def _first(x, w, eps, out, variant) -> None:
    """The example's checks and numba's launch; keeps the Launcher for the next calls."""
    if not (x.is_contiguous() and out.is_contiguous()):
        raise ValueError("rms_norm: x and out must be C-contiguous")
    hidden = x.shape[-1]
    stream = torch_stream(x)
    numba_stream = cuda.external_stream(stream) if stream else 0
    _, (kernel, rows, block, args) = example.prepare(
        x.view(-1, hidden), w, eps, out.view(-1, hidden), numba_stream, *variant)
    launcher = Launcher(kernel, block)
    launcher.first(rows, numba_stream, args)
    _launchers[(x.dtype, w.dtype, hidden, *variant)] = launcher


@functools.cache
def register():
    """``torch.ops.coopgen.rms_norm(x, w, eps)``: a custom op for CUDA tensors whose fake
    implementation gives torch.compile the output's shape and type."""

    @torch.library.custom_op("coopgen::rms_norm", mutates_args=(), device_types="cuda")
    def rms_norm_op(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
        return rms_norm(x.contiguous(), w.contiguous(), eps)

    @rms_norm_op.register_fake
    def _(x, w, eps):
        torch._check(w.shape == (x.shape[-1],), lambda: "rms_norm: w must be (hidden,)")
        torch._check(x.dtype == w.dtype, lambda: "rms_norm: x and w must be of one type")
        return torch.empty(x.shape, dtype=x.dtype, device=x.device)

    return rms_norm_op


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
    for _ in range(2):  # numba's launch, then the Launcher's
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
