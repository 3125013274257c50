"""Link kernels for an architecture without a GPU and read the linker's report (registers,
spills, shared memory); see coopgen.lower.linkcheck."""
from .lower.linkcheck import *  # noqa: F401,F403  (its __all__)
