"""A Python operator's C symbol names what it compiles to: two closures of one factory that
captured different functions or values get different symbols (one kernel may use both, and
each must keep its own code), while the same closure gets the same symbol every time (so the
NVRTC cache still hits)."""
import numpy as np
from numba import cuda

from coopgen.resolve.operators import Operator, describe_function
from coopgen.types.desc import INT32


@cuda.jit(device=True)
def add(a, b):
    return a + b


@cuda.jit(device=True)
def larger(a, b):
    return max(a, b)


def combining(op, scale):
    @cuda.jit(device=True)
    def combine(a, b):
        return op(a, b) * scale
    return combine


def _symbol(disp):
    return Operator("ScanOp", "scan_op", None, describe_function(disp), None, 2).symbol((INT32, INT32))


def test_closures_of_one_factory_get_their_own_symbols():
    symbols = {_symbol(combining(op, k)) for op in (add, larger) for k in (1, 2)}
    assert len(symbols) == 4


def test_a_closure_symbol_is_stable():
    assert _symbol(combining(add, np.int32(3))) == _symbol(combining(add, np.int32(3)))
    assert _symbol(add) == _symbol(add)


def test_functions_of_one_bytecode_calling_different_functions_get_their_own_symbols():
    """``lambda a, b: min(a, b)`` and ``max``: the same bytecode, the same qualified name, the
    names they read differ (one symbol would give both one body)."""
    low, high = (cuda.jit(device=True)(f) for f in (lambda a, b: min(a, b),
                                                     lambda a, b: max(a, b)))
    assert low.py_func.__code__.co_code == high.py_func.__code__.co_code
    assert _symbol(low) != _symbol(high)



def test_inner_code_is_identified_by_content_not_address():
    """An operator holding a comprehension: its identity names no address, so its symbol (and
    the shim cache keyed on it) is the same in every process."""
    from coopgen.resolve.operators import function_identity

    def total_of_squares(a, b):
        return sum([v * v for v in (a, b)])
    assert " at 0x" not in repr(function_identity(total_of_squares))
