"""Warp-level primitives (``WarpReduce``, ``sum``, ...), built from the generated specs."""
from .namespaces import build as _build

globals().update(_build("warp"))
__all__ = sorted(k for k in globals() if not k.startswith("_"))
