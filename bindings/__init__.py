"""coopgen: CUB's block- and warp-level cooperative primitives in numba.cuda kernels.

    from coopgen import block, warp, local, shared

The bindings are generated from CUB's headers (see ``coopgen generate``). The runtime is staged
(docs/architecture.md): model -> types -> resolve -> codegen -> lower (numba-cuda) -> api.
"""
import sys as _sys

from . import versions

__version__ = versions.VERSION
versions.check()  # before numba is touched: an unsupported release fails here, in one message

from .lower import backend  # noqa: E402  (numba-cuda: typing, lowering, launch hooks)
from .api import block, coop, local, shared, warp  # noqa: E402
from .api.primitives import kernel_temp_storage  # noqa: E402
from .codegen.storage import TempStorage  # noqa: E402
from .lower.typing import block_shape  # noqa: E402

# The modules users import by name: ``import coopgen.coop``, ``from coopgen.block import ...``
for _module in (block, coop, local, shared, warp):
    _sys.modules[f"{__name__}.{_module.__name__.rsplit('.', 1)[1]}"] = _module
backend.install()

__all__ = ["block", "warp", "local", "shared", "coop", "block_shape", "TempStorage",
           "kernel_temp_storage"]
