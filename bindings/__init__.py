"""coopgen: CUB's block- and warp-level cooperative primitives in numba.cuda kernels.

    from coopgen import block, warp, local, shared

The bindings are generated from CUB's headers (see ``coopgen generate``). The runtime is staged
(docs/architecture.md): model -> types -> resolve -> codegen -> a backend per compiler
installed (lower: numba-cuda; mlir: numba-cuda-mlir) -> api.
"""
import importlib as _importlib
import sys as _sys

from . import versions

__version__ = versions.VERSION
versions.check()  # before numba is touched: an unsupported release fails here, in one message

# The backend of each compiler installed registers itself (coopgen.model.backends); a kernel
# is compiled by its compiler's.
_backends = [_importlib.import_module(f"{__name__}.{package}.backend")
             for package in versions.installed_backends()]
from .api import block, coop, local, shared, thread, warp  # noqa: E402
from .api.primitives import kernel_temp_storage  # noqa: E402
from .codegen.storage import TempStorage  # noqa: E402
from .resolve.hooks import block_shape  # noqa: E402

# The modules users import by name: ``import coopgen.coop``, ``from coopgen.block import ...``
for _module in (block, coop, local, shared, thread, warp):
    _sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[1]}"] = _module
for _backend in _backends:
    _backend.install()

__all__ = ["block", "warp", "thread", "local", "shared", "coop", "block_shape", "TempStorage",
           "kernel_temp_storage"]
