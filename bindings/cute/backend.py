"""The CuTe DSL backend, wired up. CuTe DSL traces kernels by running their Python code, so
there is nothing to register with a compiler: the objects users call hand their in-kernel calls
to ``trace_call`` (coopgen.model.backends.call_in_trace), which imports cutlass only when cutlass
is already imported (a CuTe DSL program is running) and a kernel is being traced."""
import sys

from ..model import backends

NAME = "CuTe DSL"
PROVIDES: dict = {}


def register(kind: str, obj, **info) -> None:
    """Nothing to register: calls reach ``trace_call`` from the objects themselves."""


def trace_call(entry, args: tuple, kws: dict):
    """The call of ``entry`` emitted into the CuTe kernel being traced, or NOT_TRACING."""
    if "cutlass" not in sys.modules:
        return backends.NOT_TRACING
    from . import call
    return call.trace(entry, args, kws)


def tracing() -> bool:
    if "cutlass" not in sys.modules:
        return False
    from .bundle import current_kernel
    return current_kernel() is not None


backends.installed.append(sys.modules[__name__])


def install() -> None:
    """Nothing to install before a trace."""
