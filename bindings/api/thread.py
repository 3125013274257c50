"""Thread-level primitives (``ThreadLoad``, ``load``, ``reduce``, ...) and util_ptx's thread
helpers, built from the generated specs: CUB's namespace-scope functions."""
from .namespaces import build as _build

globals().update(_build("thread"))
__all__ = sorted(k for k in globals() if not k.startswith("_"))
