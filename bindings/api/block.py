"""Block-level primitives: CUB's classes (``BlockScan``, ...) and snake_case functions (``sum``, ...).

Everything here is built from the generated specs (coopgen._generated); see coopgen.api.namespaces.
"""
from .namespaces import build as _build

globals().update(_build("block"))
__all__ = sorted(k for k in globals() if not k.startswith("_"))
