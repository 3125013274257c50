"""Python operators compiled for the shims: a ``@cuda.jit(device=True)`` function is compiled
to LTO-IR with a C ABI under the name coopgen.resolve.operators.Operator.symbol gives, with
the signature the functor needs (coopgen.resolve.operators.operator_signatures)."""
import functools

from numba import cuda
from numba.cuda.cudadrv.linkable_code import LTOIR

from ..resolve.operators import bit_field_digits as _digits
from ..resolve.operators import operator_forms
from .bundle import current_arch
from .describe import device_function, to_numba
from .errors import CoopgenTypeError
from .numba_internals import half_shims

bit_field_digits = functools.partial(_digits, device_function, cuda.libdevice)


def compile_operator(context, sym: str, op, argtypes, restype, prim: str = "") -> None:
    """Compile a Python operator to LTO-IR with a C ABI and link it into this library."""
    from numba.core.errors import TypingError
    from numba.cuda.core.errors import TypingError as CudaTypingError
    library = context.active_code_library
    done = library.__dict__.setdefault("_coopgen_ops", set())
    if sym in done:
        return
    arch = current_arch()
    cc = (int(arch.split("_")[1][:-1]), int(arch.split("_")[1][-1]))
    errors = []
    for fn, args, res in operator_forms(op, argtypes, restype):
        args, res = tuple(to_numba(a) for a in args), to_numba(res)
        try:
            code, _ = cuda.compile(fn, res(*args), device=True, abi="c",
                                   abi_info={"abi_name": sym}, output="ltoir", cc=cc)
            break
        except (TypingError, CudaTypingError) as e:  # its body does not fit CUB's call
            errors.append(e)
    else:
        wants = f"({', '.join(map(str, args))}) -> {res}"
        raise CoopgenTypeError(f"{prim}: {op.param}={op.function.ref.py_func.__name__} must "
                               f"work as a {op.kind} {wants}; compiling it so failed:\n"
                               f"{errors[0]}")
    library.add_linking_file(LTOIR(code, name=sym))
    if "float16" in repr((args, res)):  # their operators are C++ shims numba links
        for shims in half_shims():
            library.add_linking_file(shims)
    done.add(sym)
