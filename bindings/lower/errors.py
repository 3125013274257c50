"""coopgen's compile-time errors as numba's: they subclass TypingError so numba reports them
with the kernel's source location; each message names the primitive and the parameter."""
import contextlib

from numba.cuda.core.errors import TypingError

from ..model.errors import CoopgenError


class CoopgenTypeError(TypingError, CoopgenError):
    """A call to a coopgen primitive that cannot be compiled as written."""


@contextlib.contextmanager
def as_typing_errors():
    """coopgen's own errors (raised by the numba-free stages) as numba typing errors."""
    try:
        yield
    except CoopgenTypeError:
        raise
    except CoopgenError as e:
        raise CoopgenTypeError(str(e)) from None
