"""Per-thread arrays whose shape coopgen primitives can read: `local.array(16, d_in.dtype)`."""
from ..lower.arrays import local_array as array

__all__ = ["array"]
