"""Python operators compiled for the shims by numba-cuda-mlir: a device function compiled to
LTO-IR with a C ABI under the symbol coopgen.resolve.operators.Operator.symbol gives, linked
into the function being lowered."""
import functools

from numba_cuda_mlir import cuda
from numba_cuda_mlir.numba_cuda.core.errors import TypingError
from numba_cuda_mlir.numba_cuda.cudadrv.linkable_code import LTOIR

from ..model.errors import CoopgenError
from ..resolve.operators import bit_field_digits as _digits
from ..resolve.operators import operator_forms
from .describe import device_function, to_numba

bit_field_digits = functools.partial(_digits, device_function, cuda.libdevice)


@functools.cache
def _compiled(op, sym: str, argtypes: tuple, restype, cc: tuple, prim: str) -> bytes:
    errors = []
    for fn, args, res in operator_forms(op, argtypes, restype):
        args, res = tuple(to_numba(a) for a in args), to_numba(res)
        try:
            return cuda.compile(fn, res(*args), device=True, abi="c",
                                abi_info={"abi_name": sym}, output="ltoir", cc=cc)[0]
        except TypingError as e:  # its body does not fit CUB's call
            errors.append(e)
    wants = f"({', '.join(map(str, args))}) -> {res}"
    raise CoopgenError(f"{prim}: {op.param}={op.function.ref.py_func.__name__} must work as a "
                       f"{op.kind} {wants}; compiling it so failed:\n{errors[0]}")


def compile_operator(builder, sym: str, op, argtypes, restype, prim: str = "") -> None:
    """Compile a Python operator to LTO-IR with a C ABI and link it into this function."""
    code = _compiled(op, sym, tuple(argtypes), restype,
                     tuple(builder.metadata["gpu_target"]["cc"]), prim)
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
