"""Per-block shared arrays whose shape coopgen primitives read: `shared.array(256, np.int32)`."""
from .namespaces import array_function

array = array_function("shared")
__all__ = ["array"]
