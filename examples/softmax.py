"""Row softmax, y = exp(x - max(x)) / sum(exp(x - max(x))), for float16, bfloat16 and float32
rows with float32 arithmetic: one read of x and one write of y, the row in registers between.

One thread block per row, ``items`` elements a thread: ``block.load`` (striped: a warp reads
consecutive elements, guarded past the row's end), the row's maximum by ``warp.reduce`` with
``"max"`` in each warp and again over the warps' maxima after one barrier, the exponentials and
their sum by ``warp.sum`` the same way, then ``block.store`` of each exponential times the
reciprocal of the sum. Which block size (and so how many items a thread holds) is fastest
depends on the row's width and the number of rows: ``examples/torch_softmax.py`` leaves that
choice to ``coopgen.autotune``.

    python examples/torch_softmax.py    # against float64, in eager, a graph and torch.compile
"""
from __future__ import annotations

import functools
import math

import numpy as np
from _compiler import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local, warp

MAX_THREADS = 1024
MAX_ITEMS = 32  # elements a thread holds (more would leave registers for local memory)
DTYPES = ("float16", "bfloat16", "float32")


def items_for(hidden: int, threads: int) -> int:
    """Elements a thread holds for rows of ``hidden`` at ``threads`` a block."""
    if threads % 32 or not 32 <= threads <= MAX_THREADS:
        raise ValueError(f"softmax: threads={threads} must be a multiple of 32 from 32 to "
                         f"{MAX_THREADS}")
    items = -(-hidden // threads)
    if not 1 <= items <= MAX_ITEMS:
        raise ValueError(f"softmax: rows of {hidden} at {threads} threads need {items} "
                         f"elements a thread; from 1 to {MAX_ITEMS} are kept in registers")
    return items


@functools.lru_cache(maxsize=None)
def make_kernel(dtype: str, items: int):
    """The kernel for rows of ``dtype`` with at most ``items`` elements a thread; it takes the
    rows flat (x, y) and their width."""
    element = np.dtype(dtype)
    lowest = np.float32(-math.inf)

    @cuda.jit
    def softmax_kernel(x, y, hidden):
        base = cuda.blockIdx.x * hidden
        t = cuda.threadIdx.x
        lane = t & 31
        vals = local.array(items, element)
        block.load(x[base:], vals, items, "striped", hidden, 0)
        kept = local.array(items, np.float32)
        biggest = lowest
        for i in range(items):
            v = np.float32(vals[i]) if i * cuda.blockDim.x + t < hidden else lowest
            kept[i] = v
            biggest = max(biggest, v)
        maxima = cuda.shared.array(32, np.float32)
        sums = cuda.shared.array(32, np.float32)
        biggest = warp.reduce(biggest, binary_op="max")  # valid in lane 0
        if lane == 0:
            maxima[t >> 5] = biggest
        cuda.syncthreads()
        biggest = maxima[lane] if lane < cuda.blockDim.x >> 5 else lowest
        biggest = cuda.shfl_sync(0xFFFFFFFF, warp.reduce(biggest, binary_op="max"), 0)
        total = np.float32(0)
        for i in range(items):
            e = math.exp(kept[i] - biggest)  # 0 past the row's end
            kept[i] = e
            total += e
        total = warp.sum(total)
        if lane == 0:
            sums[t >> 5] = total
        cuda.syncthreads()
        total = sums[lane] if lane < cuda.blockDim.x >> 5 else np.float32(0)
        r = np.float32(1) / cuda.shfl_sync(0xFFFFFFFF, warp.sum(total), 0)
        out = local.array(items, element)
        for i in range(items):
            out[i] = kept[i] * r
        block.store(y[base:], out, items, "striped", hidden)

    return softmax_kernel


def reference(x) -> np.ndarray:
    """numpy's answer in float64."""
    x64 = np.asarray(x, np.float64)
    e = np.exp(x64 - x64.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def tolerance(dtype: str, hidden: int, span: float = 128.0) -> tuple[float, float]:
    """(relative, absolute) error bound against ``reference`` for rows whose values span less
    than ``span``: each exponential's argument x - max rounded (span u32 relative in the
    exponential) and the exponential itself (2 ulp), their sum in any order ((hidden - 1) u32),
    the division and the product (2 u32), and the rounding to the row's type (its unit
    roundoff; absolute: its smallest subnormal)."""
    u32 = 2.0**-24
    unit = {"float16": 2.0**-11, "bfloat16": 2.0**-8, "float32": u32}[dtype]
    tiny = {"float16": 2.0**-24, "bfloat16": 2.0**-133, "float32": 2.0**-149}[dtype]
    return unit + (hidden + 4 + span) * u32, tiny
