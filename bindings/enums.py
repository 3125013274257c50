"""cuda.coop's enums (``BlockLoadAlgorithm``, ``block.BlockExchangeType``, ...), built from the
generated bindings; see coopgen.types.enums (each backend types their members in kernels)."""
from .types.enums import *  # noqa: F401,F403
from .types.enums import ALGORITHMS, SELECTORS, AlgorithmEnum, CoopEnum  # noqa: F401
