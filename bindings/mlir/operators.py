"""Python operators compiled for the shims by numba-cuda-mlir: a device function compiled to
LTO-IR with a C ABI under the symbol coopgen.resolve.operators.Operator.symbol gives, linked
into the function being lowered."""
import functools

from numba_cuda_mlir import cuda
from numba_cuda_mlir.numba_cuda.core.errors import TypingError
from numba_cuda_mlir.numba_cuda.cudadrv.linkable_code import LTOIR

from ..model.errors import CoopgenError
from ..types import desc
from ..types.cpp import by_pointer
from .describe import to_numba


@functools.cache
def device_function(fn):
    """A plain Python function used as an operator, compiled as a device function (once)."""
    return cuda.jit(device=True)(fn)


@functools.cache
def bit_field_digits(begin: int, bits: int):
    """A digit extractor of the key bits [begin, begin + bits), as a device function."""
    import numpy as np  # a closure cell of key_bits, part of its identity (its symbol)
    mask = (1 << bits) - 1

    @cuda.jit(device=True)
    def key_bits(key):
        return np.uint32((key >> np.uint32(begin)) & np.uint32(mask))

    return key_bits


@functools.cache
def _compiled(py_func, sym: str, signature, cc: tuple) -> bytes:
    code, _ = cuda.compile(py_func, signature, device=True, abi="c",
                           abi_info={"abi_name": sym}, output="ltoir", cc=cc)
    return code


def compile_operator(builder, sym: str, op, argtypes, restype, prim: str = "") -> None:
    """Compile a Python operator to LTO-IR with a C ABI and link it into this function."""
    if any(isinstance(t, desc.Scalar) and by_pointer(t) for t in (*argtypes, restype)):
        raise CoopgenError(f"{prim}: operators on half, complex or vector types are not "
                           f"supported by the numba-cuda-mlir backend yet")
    argtypes, restype = tuple(to_numba(a) for a in argtypes), to_numba(restype)
    py_func = op.function.ref.py_func
    try:
        code = _compiled(py_func, sym, restype(*argtypes), builder.metadata["gpu_target"]["cc"])
    except TypingError as e:  # its body does not fit CUB's call
        wants = f"({', '.join(map(str, argtypes))}) -> {restype}"
        raise CoopgenError(f"{prim}: {op.param}={py_func.__name__} must work as a {op.kind} "
                           f"{wants}; compiling it so failed:\n{e}") from None
    builder.link_external_item(_Operator(code, sym))


class _Operator(LTOIR):
    """An operator's LTO-IR, one link item per symbol."""

    def __init__(self, code: bytes, sym: str):
        super().__init__(code, name=sym)
        self.sym = sym

    def __hash__(self):
        return hash(self.sym)

    def __eq__(self, other):
        return isinstance(other, _Operator) and other.sym == self.sym
