"""coopgen's compile-time errors. They subclass numba's TypingError so numba reports them with
the kernel's source location; each message names the primitive and the parameter."""
from numba.cuda.core.errors import TypingError


class CoopgenTypeError(TypingError):
    """A call to a coopgen primitive that cannot be compiled as written."""
