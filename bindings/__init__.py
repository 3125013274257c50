"""coopgen: CUB's block- and warp-level cooperative primitives in numba.cuda kernels.

    from coopgen import block, warp, local, shared

The bindings are generated from CUB's headers (see ``coopgen generate``). The runtime is staged
(docs/architecture.md): model -> types -> resolve -> codegen -> a backend per compiler
installed (lower: numba-cuda; mlir: numba-cuda-mlir) -> api.
"""
import importlib as _importlib
import os as _os
import sys as _sys

from . import versions

__version__ = versions.VERSION
versions.check()  # before numba is touched: an unsupported release fails here, in one message
__all__ = ["block", "warp", "thread", "local", "shared", "coop", "block_shape", "TempStorage",
           "kernel_temp_storage"]


def _load_runtime() -> None:
    # The backend of each compiler installed registers itself (coopgen.model.backends); a kernel
    # is compiled by its compiler's.
    backends = [_importlib.import_module(f"{__name__}.{package}.backend")
                for package in versions.installed_backends()]
    from .api import block, coop, local, primitives, shared, thread, warp
    from .codegen.storage import TempStorage
    from .resolve.hooks import block_shape

    globals().update(block=block, coop=coop, local=local, shared=shared, thread=thread, warp=warp,
                     kernel_temp_storage=primitives.kernel_temp_storage, TempStorage=TempStorage,
                     block_shape=block_shape)
    # The modules users import by name: ``import coopgen.coop``, ``from coopgen.block import ...``
    for module in (block, coop, local, shared, thread, warp):
        _sys.modules[f"{__name__}.{module.__name__.rsplit('.', 1)[1]}"] = module
    for backend in backends:
        backend.install()


def __getattr__(name: str):  # the coopgen command's: the runtime on its first use
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    _load_runtime()
    return globals()[name]


# The coopgen command (generate, coverage, doctor, ...) starts without numba and the backends
# (seconds to import): it loads them where a command uses them.
if _os.path.basename(_sys.argv[0] if _sys.argv else "") not in ("coopgen", "coopgen.exe"):
    _load_runtime()
