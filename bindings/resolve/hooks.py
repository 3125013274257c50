"""What resolving a call needs from the backend compiling it: resolving itself knows no
backend's types or launch machinery. Each backend installs its ``Hooks`` when imported and
serves them while it types or lowers a call (two backends may share one process); host-side
resolution (two-phase objects) uses the first installed."""
import contextlib
import contextvars
from typing import Callable, NamedTuple


class Hooks(NamedTuple):
    #: A Python value a call passes as a constant (a fixed operator, an injected identity) ->
    #: its description (coopgen.types.desc).
    describe_constant: Callable
    #: (first bit, bit count, keys' dtype name or None) -> a function extracting those bits of
    #: the key made order-preserving (an operator value).
    bit_field_digits: Callable
    #: needed -> the launching block shape (and mark the kernel as specialised on it), or None.
    launch_dims: Callable


installed: list[Hooks] = []
#: The block shape ``block_shape`` assumes, where no launch gives one.
assumed_block: contextvars.ContextVar = contextvars.ContextVar("coopgen_block", default=None)
_serving: contextvars.ContextVar = contextvars.ContextVar("coopgen_hooks", default=None)


@contextlib.contextmanager
def serving(hooks: Hooks):
    token = _serving.set(hooks)
    try:
        yield
    finally:
        _serving.reset(token)


def _current() -> Hooks:
    return _serving.get() or installed[0]


def describe_constant(value):
    return _current().describe_constant(value)


def bit_field_digits(first: int, count: int, dtype: str | None = None):
    return _current().bit_field_digits(first, count, dtype)


def launch_dims(needed: bool):
    return _current().launch_dims(needed)


@contextlib.contextmanager
def block_shape(threads_per_block):
    """Compile ahead of time (``cuda.compile_all``, ``cuda.jit(sig)``) as if launched with
    ``threads_per_block`` threads: there is no launch to infer the block shape from."""
    dims = (threads_per_block,) if isinstance(threads_per_block, int) else tuple(threads_per_block)
    token = assumed_block.set(tuple(dims) + (1,) * (3 - len(dims)))
    try:
        yield
    finally:
        assumed_block.reset(token)
