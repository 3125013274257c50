"""The compiler the examples' kernels are written for: numba-cuda's ``cuda`` (the default) or
numba-cuda-mlir's, with ``COOPGEN_COMPILER=numba_cuda_mlir python examples/rms_norm.py``. The
kernels are the same code under either; coopgen compiles each with its compiler's backend."""
import importlib
import os

COMPILER = os.environ.get("COOPGEN_COMPILER", "numba")
if COMPILER not in ("numba", "numba_cuda_mlir"):
    raise ValueError(f"COOPGEN_COMPILER={COMPILER!r}: use numba or numba_cuda_mlir")
cuda = importlib.import_module(f"{COMPILER}.cuda")
libdevice = importlib.import_module(f"{COMPILER}.cuda.libdevice")
