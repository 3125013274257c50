"""Link kernels for an architecture without a GPU and read the linker's report (registers,
spills, shared memory); see coopgen.lower.linkcheck."""
from .lower.linkcheck import *  # noqa: F401,F403
from .lower.linkcheck import (FunctionInfo, LinkResult, compile_kernel_pieces,  # noqa: F401
                              launch_config_on_cpu, link_as_launched, link_cubin, link_pieces,
                              link_ptx, parse_link_log)
