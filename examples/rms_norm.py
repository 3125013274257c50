"""Fused RMSNorm forward over rows, y = x / sqrt(mean(x^2) + eps) * w, for float16 and
bfloat16 rows with float32 accumulation: one read of x and one write of y, the rest stays in
registers.

One thread block per row. Each thread holds ``ITEMS`` (8) consecutive elements of the row,
16 bytes of halves:

1. ``block.load`` the row (``algorithm="vectorize"``: CUB loads a thread's items as whole
   vectors when the row is aligned; rows whose length is not a multiple of the block's
   ``threads * ITEMS`` load guarded, with zeros past the end);
2. square each item **in float32** and ``block.sum`` the squares. CUB adds in the item type:
   a ``block.sum`` of the halves themselves would round every partial sum to 11 (float16) or
   8 (bfloat16) bits, so the items are converted first;
3. thread 0 computes ``rstd = 1 / sqrt(sum / hidden + eps)`` and shares it;
4. ``y = x * rstd * w`` in float32, rounded once to the row's type, and ``block.store``.

    python examples/rms_norm.py        # checks float16 and bfloat16 rows against numpy

bfloat16 host arrays come from ml_dtypes (``pip install "coopgen[bf16]"``).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import cuda

from coopgen import block, local

ITEMS = 8  # items per thread: 16 bytes of a 2-byte type
MAX_THREADS = 1024
DTYPES = ("float16", "bfloat16")


def plan(hidden: int) -> tuple[int, int]:
    """(threads, items per thread) for rows of ``hidden`` elements: 8 items a thread (more
    past 8192 elements), threads rounded up to whole warps."""
    if hidden < 1:
        raise ValueError(f"rms_norm: hidden={hidden} must be positive")
    items = ITEMS * -(-hidden // (ITEMS * MAX_THREADS))
    threads = 32 * -(-(-(-hidden // items)) // 32)
    return threads, items


@functools.lru_cache(maxsize=None)
def make_kernel(items: int, full: bool):
    """The kernel for ``items`` per thread; ``full``: every row is exactly threads * items
    long (no guarded loads). The dtype comes from the arrays (one specialisation each)."""

    @cuda.jit
    def rms_norm_kernel(x, w, y, hidden, eps):
        base = cuda.blockIdx.x * hidden
        vals = local.array(items, x.dtype)
        if full:
            block.load(x[base:], vals, algorithm="vectorize")
        else:
            block.load(x[base:], vals, items, "direct", hidden, 0)
        squares = local.array(items, np.float32)
        for i in range(items):
            v = np.float32(vals[i])
            squares[i] = v * v
        total = block.sum(squares)  # float32; valid in thread 0
        rstd = cuda.shared.array(1, np.float32)
        if cuda.threadIdx.x == 0:
            rstd[0] = np.float32(1.0) / math.sqrt(total / np.float32(hidden) + eps)
        weights = local.array(items, w.dtype)
        if full:
            block.load(w, weights, algorithm="vectorize")
        else:
            block.load(w, weights, items, "direct", hidden, 0)
        cuda.syncthreads()
        r = rstd[0]
        out = local.array(items, y.dtype)
        for i in range(items):
            out[i] = np.float32(vals[i]) * r * np.float32(weights[i])  # one rounding
        if full:
            block.store(y[base:], out, algorithm="vectorize")
        else:
            block.store(y[base:], out, items, "direct", hidden)

    return rms_norm_kernel


def _device(a):
    """A numba device array of ``a``: itself, or a view of its ``__cuda_array_interface__``
    (whose typestr cannot say bfloat16: 'V2', so a numba array keeps its own dtype)."""
    return a if cuda.is_cuda_array(a) and hasattr(a, "copy_to_host") else cuda.as_cuda_array(a)


def _dtype_name(a) -> str:
    return np.dtype(a.dtype).name


def rms_norm(x, w, eps: float = 1e-6, out=None, stream=0):
    """RMSNorm of each row of ``x`` (rows, hidden), float16 or bfloat16 device arrays (numba
    device arrays or anything with ``__cuda_array_interface__``), with weight ``w`` (hidden,)
    of the same type. Returns ``out`` (made when not given)."""
    x, w = _device(x), _device(w)
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
    out = _device(out)
    if out.shape != x.shape or out.dtype != x.dtype:
        raise ValueError(f"rms_norm: out must be {x.dtype} of shape {x.shape}")
    if rows == 0:
        return out
    threads, items = plan(hidden)
    kernel = make_kernel(items, threads * items == hidden)
    kernel[rows, threads, stream](x.reshape(rows * hidden), w, out.reshape(rows * hidden),
                                  np.int32(hidden), np.float32(eps))
    return out


def reference(x, w, eps: float = 1e-6) -> np.ndarray:
    """numpy's answer in float64 from the rows' values (float32 accumulation is checked
    against it with ``tolerance``)."""
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    rstd = 1.0 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + eps)
    return x64 * rstd * w64


def unit_roundoff(dtype) -> float:
    name = np.dtype(dtype).name
    return {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": 2.0**-24}[name]


def tolerance(dtype, hidden: int):
    """(relative, absolute) worst-case error of the kernel against ``reference``: the float32
    sum of squares (any order: (hidden - 1) u32 relative, halved by the square root), the
    division, the square root, the reciprocal and two products (a few u32), and the final
    rounding to the row's type (u of the type; absolute: half its smallest subnormal)."""
    u32 = unit_roundoff(np.float32)
    rel = unit_roundoff(dtype) + ((hidden - 1) / 2 + 8) * u32
    tiny = 2.0**-25 if np.dtype(dtype).name == "float16" else 2.0**-134
    return rel, tiny


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


def check(rows: int, hidden: int, dtype, eps: float = 1e-6, rng=None) -> float:
    """Normalize random rows on the GPU and compare with numpy; returns the largest error
    as a fraction of the tolerance."""
    import ml_dtypes  # noqa: F401  (np.dtype("bfloat16"))

    rng = rng or np.random.default_rng()
    x, w = random_inputs(rng, rows, hidden, dtype)
    got = to_host(rms_norm(to_device(x), to_device(w), eps))
    want = reference(x, w, eps)
    rel, tiny = tolerance(dtype, hidden)
    err = np.abs(got.astype(np.float64) - want)
    bound = rel * np.abs(want) + tiny
    worst = float(np.max(err / bound)) if err.size else 0.0
    assert worst <= 1.0, f"rms_norm {np.dtype(dtype).name} {rows}x{hidden}: error {worst:.2f}x " \
                         f"the tolerance"
    return worst


if __name__ == "__main__":
    for dtype in DTYPES:
        for rows, hidden in ((1, 32), (7, 1000), (64, 4096), (33, 8192), (5, 12288)):
            check(rows, hidden, dtype)
    print("rms_norm: float16 and bfloat16 rows (32 to 12288 wide) match numpy within the "
          "worst-case float32-accumulation tolerance")
