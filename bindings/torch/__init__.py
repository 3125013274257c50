"""coopgen from PyTorch: launch coopgen's (or any numba-cuda / numba-cuda-mlir) kernels on
tensors with a few µs of host time, and register them as custom ops.

    import coopgen.torch as ct
    launch = ct.launcher(kernel)                 # one specialization per signature
    launch[blocks, threads](x, out, n, 0.5)      # PyTorch's current stream
    op = ct.custom_op("mylib::scale", scale, outputs=ct.like("x"))

``import coopgen`` never imports this module, and this module imports torch only where it
needs it (streams, custom ops): it also launches on CuPy or numba arrays without PyTorch.
docs/pytorch.md is the guide."""
from .arrays import MisalignedView
from .launch import current_stream
from .launcher import Launcher
from .ops import Like, custom_op, like


def launcher(kernel, views: dict | None = None, scalars: dict | None = None,
             cluster=None) -> Launcher:
    """A :class:`Launcher` of ``kernel`` (a ``@cuda.jit`` function of either compiler); its
    docstring says what ``views``, ``scalars`` and ``cluster`` declare."""
    return Launcher(kernel, views, scalars, cluster)


__all__ = ["Launcher", "launcher", "MisalignedView", "custom_op", "like", "Like",
           "current_stream"]
