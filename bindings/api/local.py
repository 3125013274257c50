"""Per-thread arrays whose shape coopgen primitives can read: `local.array(16, d_in.dtype)`."""
from .namespaces import array_function

array = array_function("local")
__all__ = ["array"]
