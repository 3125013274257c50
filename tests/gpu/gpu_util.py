"""Helpers shared by the GPU tests: dtypes, shapes, random data, launch and compare.

Set COOPGEN_GPU_TESTS_LINK_ON_CPU=1 and run ``pytest tests/gpu`` on a machine without a GPU
to compile and link (sm_90) every kernel specialisation the tests would launch through
``launch`` below, with the block shape of the launch; each test then stops (skipped) before
comparing numbers.

The kernels are compiled by numba-cuda, or by numba-cuda-mlir with
COOPGEN_COMPILER=numba_cuda_mlir (as the examples read it): the modules take ``cuda`` from here.
"""
from __future__ import annotations

import importlib
import os
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the repository root: tools/
sys.path.insert(0, str(ROOT / "examples"))
from _compiler import COMPILER, cuda  # noqa: E402, F401  (COOPGEN_COMPILER)
from tools.fuzz import runner as fuzz_runner  # noqa: E402  (host<->device transfers)

MLIR = COMPILER == "numba_cuda_mlir"
#: The compiler's types as kernels name them (``numba.int32``): numba's, or numba-cuda-mlir's
#: own copy of numba-cuda.
numba = importlib.import_module("numba_cuda_mlir.numba_cuda" if MLIR else "numba")


def for_compiler(code: str) -> str:
    """User code written for numba-cuda (the README, docs/), with the compiler's ``cuda``:
    only the import differs."""
    return code.replace("from numba import cuda", f"from {COMPILER} import cuda")


LINK_ON_CPU = os.environ.get("COOPGEN_GPU_TESTS_LINK_ON_CPU") == "1"

SIGNED = (np.int8, np.int16, np.int32, np.int64)
UNSIGNED = (np.uint8, np.uint16, np.uint32, np.uint64)
FLOATS = (np.float32, np.float64)
ALL_DTYPES = SIGNED + UNSIGNED + FLOATS
#: A cheaper sweep: every width, both signednesses and both floats at least once.
SOME_DTYPES = (np.int8, np.uint16, np.int32, np.uint64, np.float32, np.float64)
BLOCKS = (32, 128, 256, 1024, (16, 8), (4, 8, 8))
SMEM_LIMIT = 48 * 1024


def dtype_id(dt) -> str:
    return np.dtype(dt).name


def block_id(block) -> str:
    return "x".join(map(str, block)) if isinstance(block, tuple) else str(block)


def nthreads(block) -> int:
    if isinstance(block, int):
        return block
    n = 1
    for d in block:
        n *= d
    return n


def rng_for(*params) -> np.random.Generator:
    """A generator seeded from the test parameters (reproducible, different per case)."""
    return np.random.default_rng(zlib.crc32(repr(params).encode()))


def random(dtype, n, rng, lo=None, hi=None) -> np.ndarray:
    """Random values of ``dtype``: the full range of integer types (negatives included for
    signed ones) unless lo/hi (inclusive) are given; floats roughly in [-100, 100)."""
    dt = np.dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lo = info.min if lo is None else lo
        hi = info.max if hi is None else hi
        out = rng.integers(lo, hi, size=n, dtype=dt, endpoint=True)
        if n > 1 and not out.any():
            out[0] = 1
        return out
    if dt.kind == "b":
        return rng.integers(0, 2, size=n).astype(np.bool_)
    lo = -100.0 if lo is None else lo
    hi = 100.0 if hi is None else hi
    return rng.uniform(lo, hi, size=n).astype(dt)


def dtype_min(dt):
    dt = np.dtype(dt)
    return np.iinfo(dt).min if dt.kind in "iu" else -np.inf


def dtype_max(dt):
    dt = np.dtype(dt)
    return np.iinfo(dt).max if dt.kind in "iu" else np.inf


def is_float(dt) -> bool:
    return np.dtype(dt).kind == "f"


# In kernels, CUB's linear thread rank is written out (a device function cannot be compiled
# without a GPU, which the CPU link check needs):
#     t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
#     nt = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z


# --- launching ----------------------------------------------------------------------------

def to_device(a):
    return a if LINK_ON_CPU else fuzz_runner.to_device(a)  # bfloat16 too, as its bits


def to_host(d):
    return d if LINK_ON_CPU else fuzz_runner.to_host(d)


def launch(kernel, grid, block, *args):
    """``kernel[grid, block](*args)`` and wait for it. With LINK_ON_CPU, compile and link the
    specialisation for this block shape on the CPU instead, then skip the test."""
    if LINK_ON_CPU:
        from coopgen.linkcheck import link_as_launched  # the kernel's compiler's backend
        link_as_launched(kernel, block, *args)
        pytest.skip("linked on the CPU")
    kernel[grid, block](*args)
    try:
        cuda.synchronize()
    except Exception as e:  # a fault in the kernel: the CUDA context stays broken
        _leave_broken_worker(kernel, block, e)
        raise


def _leave_broken_worker(kernel, block, error):
    """Under pytest-xdist, end this worker after a kernel fault (sticky CUDA error): otherwise
    every later test on it fails too. xdist reports the test as crashed and starts a new
    worker. The error goes to stderr and to $COOPGEN_GPU_TESTS_CRASH_DIR when that is set."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if not worker:
        return
    import sys
    msg = (f"{os.environ.get('PYTEST_CURRENT_TEST', '?')}: kernel "
           f"{getattr(kernel, '__name__', kernel)} block={block}: {error!r}\n")
    sys.stderr.write(msg)
    crash_dir = os.environ.get("COOPGEN_GPU_TESTS_CRASH_DIR")
    if crash_dir:
        with open(os.path.join(crash_dir, f"crash-{worker}-{os.getpid()}.txt"), "w") as f:
            f.write(msg)
    os._exit(70)


# --- comparing ----------------------------------------------------------------------------

def float_atol(dtype, x, n_terms) -> float:
    """Absolute tolerance for sums of ``n_terms`` values like ``x`` in ``dtype``."""
    scale = float(np.max(np.abs(x))) if np.size(x) else 1.0
    return 4.0 * n_terms * float(np.finfo(dtype).eps) * max(scale, 1.0)


def assert_sums_equal(got, want, dtype, x, n_terms):
    """Integers: exactly (wraparound included); floats: within a rounding tolerance."""
    if is_float(dtype):
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64),
                                   rtol=1e-5, atol=float_atol(dtype, x, n_terms))
    else:
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want).astype(dtype))


def wrap_sum(x, dtype, axis=None):
    """The sum as the device computes it: in ``dtype`` (wrapping integers), floats in float64."""
    if is_float(dtype):
        return np.sum(x.astype(np.float64), axis=axis)
    return np.sum(x, axis=axis, dtype=dtype)


def wrap_cumsum(x, dtype, axis=None):
    if is_float(dtype):
        return np.cumsum(x.astype(np.float64), axis=axis)
    return np.cumsum(x, axis=axis, dtype=dtype)


def exclusive(incl, identity, axis=-1):
    """Exclusive scan from an inclusive one: shift right along ``axis``, ``identity`` first."""
    incl = np.asarray(incl)
    out = np.empty_like(incl)
    idx = [slice(None)] * incl.ndim
    src = list(idx)
    idx[axis] = slice(1, None)
    src[axis] = slice(None, -1)
    out[tuple(idx)] = incl[tuple(src)]
    idx[axis] = 0
    out[tuple(idx)] = identity
    return out


def stable_order(keys, descending=False):
    """Indices of a stable sort of ``keys`` (descending keeps equal keys in input order)."""
    keys = np.asarray(keys)
    if not descending:
        return np.argsort(keys, kind="stable")
    return np.array(sorted(range(len(keys)), key=lambda i: keys[i], reverse=True), dtype=np.int64)
