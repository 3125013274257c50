"""coopgen: CUB's block- and warp-level cooperative primitives in numba.cuda kernels.

    from coopgen import block, warp, local, shared

The bindings are generated from CUB's headers (see ``coopgen generate``).
"""
from . import versions

__version__ = versions.VERSION
versions.check()  # before numba is touched: an unsupported release fails here, in one message

from . import launch_hook, local, numba_internals, rewrite, shared  # noqa: E402, F401
from . import block, warp  # noqa: E402, F401
from .calls import block_shape  # noqa: E402, F401
from .storage import TempStorage, kernel_temp_storage  # noqa: E402, F401
from . import coop  # noqa: E402, F401  (after block/warp: it re-exports them)

numba_internals.install_kernel_cache()
launch_hook.install()

__all__ = ["block", "warp", "local", "shared", "coop", "block_shape", "TempStorage",
           "kernel_temp_storage"]
