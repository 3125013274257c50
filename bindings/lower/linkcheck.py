"""Link numba-cuda kernels without a GPU: numba's ``compile_all`` runs only NVVM (and NVRTC for
the shims); coopgen.codegen.link links the pieces for an explicit arch and reads the log."""
import contextlib
from types import SimpleNamespace

from ..codegen.link import (FunctionInfo, LinkResult, _link, link_pieces,  # noqa: F401
                            parse_link_log)

__all__ = ["FunctionInfo", "LinkResult", "link_cubin", "link_ptx", "link_pieces",
           "compile_kernel_pieces", "parse_link_log", "launch_config_on_cpu", "link_as_launched"]


def compile_kernel_pieces(kernel, signature, *, arch=(9, 0)):
    """``numba.cuda.compile_all`` for a kernel (or its dispatcher): [kernel LTO-IR, *linking
    files]. numba compiles the device functions and ``@overload``s a kernel calls for the
    current device; here they are compiled for ``arch`` like the kernel, GPU or not (and a
    dispatcher's launch bounds, register limit and fastmath apply, as on its launch)."""
    jit_options = getattr(kernel, "targetoptions", {})
    from numba.cuda import compile_all, dispatcher
    saved = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=tuple(arch))
    try:
        return compile_all(getattr(kernel, "py_func", kernel), signature, device=False,
                           abi="numba", cc=tuple(arch), output="ltoir",
                           fastmath=jit_options.get("fastmath", False),
                           launch_bounds=jit_options.get("launch_bounds"))[0]
    finally:
        dispatcher.get_current_device = saved


def link_ptx(kernel, sig, *, arch=(9, 0), pieces=None) -> str:
    """The LTO-linked PTX: what LTO made of the shims (e.g. no path folded into ``trap``,
    LLVM's verdict on undefined behaviour); ``pieces`` saves compiling the kernel again."""
    pieces = compile_kernel_pieces(kernel, sig, arch=arch) if pieces is None else pieces
    return _link(pieces, arch, "ptx", ptx=True)[0].decode()


def link_cubin(kernel, signature, *, arch=(9, 0),
               optimize_unused_variables: bool = False) -> LinkResult:
    """Compile ``kernel`` and LTO-link it to a cubin. ``optimize_unused_variables`` (nvJitLink's
    flag) is off as on numba's launch path, to report what a launch gets (libcu++'s static
    constexpr members then show up as ``gmem``)."""
    return link_pieces(compile_kernel_pieces(kernel, signature, arch=arch), arch=arch,
                       optimize_unused_variables=optimize_unused_variables,
                       max_registers=getattr(kernel, "targetoptions", {}).get("max_registers"))


class _LaunchOnCpu:
    """What coopgen reads of a launch (``numba.cuda.launchconfig``) while a kernel compiles:
    its block shape, its arguments, the dispatcher to key specialisations on."""

    _launch_config_key = staticmethod(lambda cfg: (cfg.blockdim,))
    mark_launch_config_sensitive = staticmethod(lambda: None)

    def __init__(self, py_func, block, args):
        block = block if isinstance(block, tuple) else (block,)
        self.blockdim = tuple(block) + (1,) * (3 - len(block))
        self.args = tuple(args)
        self.py_func = py_func
        self.dispatcher = self


@contextlib.contextmanager
def launch_config_on_cpu(kernel, block, args=()):
    """Compile as ``kernel[grid, block](*args)`` would, without a GPU to launch on."""
    from . import bundle
    saved = bundle.current_launch_config
    cfg = _LaunchOnCpu(getattr(kernel, "py_func", kernel), block, args)
    bundle.current_launch_config = lambda: cfg
    try:
        yield cfg
    finally:
        bundle.current_launch_config = saved


def link_as_launched(kernel, block, *args, arch=(9, 0)) -> LinkResult:
    """Link ``kernel`` as ``kernel[grid, block](*args)`` would compile it: with the launch's
    block shape and argument values (which size arrays only under a launch)."""
    from numba.cuda.typing.typeof import typeof  # the kernel dispatcher's typeof
    sig = tuple(typeof(a) for a in args)
    with launch_config_on_cpu(kernel, block, args):
        return link_cubin(kernel, sig, arch=arch)
