"""Per-block shared arrays whose shape coopgen primitives read: `shared.array(256, np.int32)`."""
from ..lower.arrays import shared_array as array

__all__ = ["array"]
