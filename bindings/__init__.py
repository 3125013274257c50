"""coopgen: CUB's block- and warp-level cooperative primitives in numba.cuda kernels.

    from coopgen import block, warp, local, shared

The bindings are generated from CUB's headers (see ``coopgen generate``).
"""
from . import kernel_cache, launch_hook, local, rewrite, shared  # noqa: F401
from . import block, warp  # noqa: F401
from .calls import block_shape  # noqa: F401
from .storage import TempStorage, kernel_temp_storage  # noqa: F401
from . import coop  # noqa: F401  (after block/warp: it re-exports them)

kernel_cache.install()
launch_hook.install()

__all__ = ["block", "warp", "local", "shared", "coop", "block_shape", "TempStorage",
           "kernel_temp_storage"]
