"""Link kernels for an architecture without a GPU and read the linker's report (registers,
spills, shared memory): kernels of either backend, each linked by its compiler's backend
(coopgen.lower.linkcheck, coopgen.mlir.linkcheck)."""
import importlib

from .codegen.link import FunctionInfo, LinkResult, link_pieces, parse_link_log  # noqa: F401

__all__ = ["FunctionInfo", "LinkResult", "link_cubin", "link_ptx", "link_pieces",
           "compile_kernel_pieces", "parse_link_log", "launch_config_on_cpu", "link_as_launched"]


def backend_of(kernel):
    """The linkcheck module of the backend whose compiler made ``kernel`` (a dispatcher or its
    Python function: numba-cuda's then)."""
    mlir = type(kernel).__module__.startswith("numba_cuda_mlir")
    return importlib.import_module(f"{__package__}.{'mlir' if mlir else 'lower'}.linkcheck")


def _dispatch(name: str):
    def call(kernel, *args, **kws):
        return getattr(backend_of(kernel), name)(kernel, *args, **kws)
    call.__name__ = name
    call.__doc__ = f"``{name}`` of the kernel's backend (see coopgen.lower.linkcheck.{name})."
    return call


link_cubin = _dispatch("link_cubin")
link_ptx = _dispatch("link_ptx")
compile_kernel_pieces = _dispatch("compile_kernel_pieces")
launch_config_on_cpu = _dispatch("launch_config_on_cpu")
link_as_launched = _dispatch("link_as_launched")
