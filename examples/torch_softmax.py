"""``examples/softmax.py`` as a PyTorch function and custom op: the block size autotuned per
(dtype, width, bucket of rows) by ``coopgen.autotune``, launched by ``coopgen.torch``.

    import torch_softmax
    p = torch_softmax.softmax(logits)                # (..., vocab) float16 / bfloat16 / float32
    p = torch.ops.coopgen.softmax(logits)            # the custom op (after ``register()``)

    python examples/torch_softmax.py    # checks it, in eager, a CUDA graph and torch.compile
"""
from __future__ import annotations

import functools

import numpy as np
import torch

import coopgen.torch as ct
import softmax as example
from coopgen.autotune import Config, autotune, pow2

CONFIGS = [Config(threads=t) for t in (64, 128, 256, 512, 1024)]
DTYPES = {torch.float16: "float16", torch.bfloat16: "bfloat16", torch.float32: "float32"}


@functools.lru_cache(maxsize=None)
def launcher_for(dtype: str, hidden: int, threads: int):
    kernel = example.make_kernel(dtype, example.items_for(hidden, threads))
    return ct.launcher(kernel, views={0: "flat", 1: "flat"},  # the rows, flat
                       scalars={2: np.int32})


def _key(x, out):
    hidden = x.shape[-1]
    return x.dtype, hidden, pow2(x.numel() // hidden)


@autotune(CONFIGS, _key, name="examples.softmax", version="1")
def _run(x, out, *, config):
    hidden = x.shape[-1]
    launch = launcher_for(DTYPES[x.dtype], hidden, config.threads)
    launch.launch((x.numel() // hidden, 1, 1), (config.threads, 1, 1),
                  (x, out, hidden))
    return out


def softmax(x: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Softmax over the last axis of ``x`` (C-contiguous, on the GPU), on PyTorch's current
    stream. Returns ``out`` (made when not given)."""
    if x.dtype not in DTYPES:
        raise ValueError(f"softmax: x must be one of {sorted(DTYPES.values())}, not {x.dtype}")
    if out is None:
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
    elif out.shape != x.shape or out.dtype != x.dtype:
        raise ValueError(f"softmax: out must be {x.dtype} of shape {tuple(x.shape)}")
    if x.numel():
        _run(x, out)
    return out


def _op(x: torch.Tensor) -> torch.Tensor:
    return softmax(x.contiguous())


def register():
    """``torch.ops.coopgen.softmax(x)``, with a fake implementation for torch.compile."""
    return ct.custom_op("coopgen::softmax", _op, outputs=ct.like("x"))


def worst_error(got: torch.Tensor, x: torch.Tensor) -> float:
    """``got``'s largest error against float64 as a fraction of ``example.tolerance``."""
    want = torch.softmax(x.double(), -1)
    rel, tiny = example.tolerance(DTYPES[x.dtype], x.shape[-1])
    return float(((got.double() - want).abs() / (rel * want + tiny)).max())


def check(shape=(4, 33, 32000), dtype=torch.bfloat16) -> None:
    """Eager calls, a replayed CUDA graph and a compiled model against float64."""
    gen = torch.Generator(device="cuda").manual_seed(sum(shape))
    x = (4 * torch.randn(shape, device="cuda", generator=gen)).to(dtype)
    for _ in range(2):
        assert worst_error(softmax(x), x) <= 1
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        y = softmax(x)
    x.copy_(4 * torch.randn(shape, device="cuda", generator=gen))
    graph.replay()
    torch.cuda.synchronize()
    assert worst_error(y, x) <= 1
    op = register()
    model = torch.compile(lambda x: op(x * 0.5), fullgraph=True)
    assert worst_error(model(x), x * 0.5) <= 1


if __name__ == "__main__":
    for dtype in DTYPES:
        check(dtype=dtype)
    print("torch_softmax: eager, CUDA graph and torch.compile(fullgraph=True) match float64")
