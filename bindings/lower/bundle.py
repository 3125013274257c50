"""A kernel's shim bundle as numba-cuda links it: an ``LTOIR`` linking file of the code library,
compiled on first read (coopgen.codegen.bundle), that knows the kernel's shared memory and the
order of its calls; and where the call being lowered sits, which numba does not tell a lowering
function (read off its internals by numba_internals.lowering_site; None when unknown)."""
import math
import threading
import weakref

from numba.cuda import launchconfig
from numba.cuda.cudadrv import nvvm
from numba.cuda.cudadrv.linkable_code import LTOIR

from ..codegen import nvrtc
from ..codegen.bundle import ShimBundle
from .errors import CoopgenTypeError
from .launch_hook import report_on
from .numba_internals import compiling_for_cc, lowering_site
from .shared_memory import is_kernel_module, static_shared_bytes, uses_dynamic_shared

#: The launch whose compile is running, as primitives' typing reads it; the CPU link harness
#: (coopgen.lower.linkcheck) stands in a launch here. The lowering sites below read numba's.
current_launch_config = launchconfig.current_launch_config


def launch_config():
    return current_launch_config()


def kernel_lowering_site(p, r, tkws_given: bool):
    """(func_ir, block label) when the call being lowered sits in the body of the kernel being
    launched, else None. A device function is compiled once and reused by every launch,
    whatever its block shape: its calls must say threads_per_block= (or be inlined)."""
    cfg, site = launchconfig.current_launch_config(), lowering_site()
    if cfg is None or site is None:
        return None
    if site[0].func_id.func is getattr(cfg.dispatcher, "py_func", None):
        return site
    if not tkws_given and r.block_dims is not None:
        raise CoopgenTypeError(
            f"{p.name}: called in the device function {site[0].func_id.func.__name__!r} without "
            f"threads_per_block=: a device function is compiled once and not re-specialised "
            f"for each launch's block shape. Pass threads_per_block=, or declare it "
            f"@cuda.jit(device=True, inline='always')")
    return None


def _cfg(func_ir):
    from numba.cuda.core.analysis import compute_cfg_from_blocks
    if getattr(func_ir, "_coopgen_cfg", None) is None:
        func_ir._coopgen_cfg = compute_cfg_from_blocks(func_ir.blocks)
    return func_ir._coopgen_cfg


def runs_once(site) -> bool:
    """Whether the call runs once per kernel execution: in the kernel, outside every loop."""
    return site is not None and not any(
        site[1] in loop.body for loop in _cfg(site[0]).loops().values())


def may_precede(a, b) -> bool:
    """Whether the call at site ``a`` (func_ir, block label, lowering sequence number) may run
    before the one at ``b``; numba lowers a block in order. Unknown sites may."""
    if a is None or b is None or a[0] is not b[0]:
        return True
    if a[1] == b[1]:  # one block: in order, or in any order on the next trip through a loop
        return a[2] < b[2] or not runs_once(a[:2])
    return b[1] in _cfg(a[0]).descendents(a[1])


def bound_kernel_threads(builder, site) -> None:
    """Tell ptxas the block shape the kernel (where the call at ``site`` sits) is specialised on
    (``maxntid``, C++'s ``__launch_bounds__``): a 1024-thread block of a heavy primitive then
    gets its registers."""
    fn, cfg = builder.function, launch_config()
    if site is None or cfg is None or getattr(fn, "_coopgen_bounded", False):
        return
    nvvm.set_launch_bounds(fn, math.prod(cfg.blockdim))
    fn._coopgen_bounded = True


def use_short_shared_pointers(module) -> None:
    """nvcc's data layout, with 32-bit shared-memory pointers (``p3:32:32:32``): numba's 64-bit
    ones cost CUB's radix sort ~20 registers and ~10%. libnvvm and nvJitLink keep the first
    module's layout, the kernel's, so the shims' pointers narrow too; numba's ABI sizes come
    from its separate target data."""
    default = nvvm.NVVM().data_layout
    if module.data_layout == default and default.startswith("e-p:64:64:64-"):
        module.data_layout = default.replace("e-p:64:64:64-", "e-p:64:64:64-p3:32:32:32-", 1)


class LinkedShimBundle(ShimBundle, LTOIR):
    def __init__(self, arch: str, name: str = "coopgen-shims"):
        ShimBundle.__init__(self, arch, name)
        LTOIR.__init__(self, data=None, name=name)
        # The library (weakly: it owns the bundle) and the LLVM modules lowered into it: whether
        # it is a kernel's, and the shared memory it uses itself, are read from them once it is
        # complete (the modules alone when compile_all has already dropped the library).
        self.library = None
        self.modules: list = []

    @property
    def data(self) -> bytes:  # read by numba's linker and by compile_all's consumer
        return self.ltoir()

    runs_once = staticmethod(runs_once)
    may_precede = staticmethod(may_precede)

    def _kernel_shared_memory(self) -> dict:
        if not any(is_kernel_module(m) for m in self.modules):
            return {"may_be_dynamic": False}
        library = self.library() if self.library is not None else None
        modules = library.modules if library is not None else self.modules
        foreign = library is None or any(
            not (isinstance(f, LTOIR) and str(f.name).startswith("coopgen"))
            for f in library._linking_files)  # C++ the user links may use it too
        return {"may_be_dynamic": True,
                "other_static_bytes": sum(static_shared_bytes(m) for m in modules),
                "after_user_bytes": foreign or any(uses_dynamic_shared(m) for m in modules)}


# library -> its bundle. Weak keys: the bundle must not keep the library alive.
_bundles: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_bundles_lock = threading.Lock()


def current_arch() -> str:
    """compute_XY of the compilation in progress: numba's target CC (``cc=``, or for a launch
    the current device's), else :func:`coopgen.codegen.nvrtc.default_arch`."""
    cc = compiling_for_cc()
    return nvrtc._normalize_arch(f"sm_{cc[0]}{cc[1]}" if cc else nvrtc.default_arch())


def bundle_for(library, what: str = "coopgen", module=None) -> LinkedShimBundle:
    """The bundle of ``library`` (made and linked on first use, for the arch compiled for), to
    which ``module`` (LLVM) is lowered; ``what``, the primitive, names an arch NVRTC refuses."""
    with _bundles_lock:
        if (bundle := _bundles.get(library)) is None:
            arch = current_arch()
            if refused := nvrtc.unsupported_arch(arch):
                raise CoopgenTypeError(f"{what}: {refused}")
            bundle = LinkedShimBundle(arch, name=f"coopgen-shims-{library.name}")
            bundle.library = weakref.ref(library)
            _bundles[library] = bundle
            library.add_linking_file(bundle)
            report_on(launch_config())  # its storage may make the launch's dynamic memory
        if module is not None and not any(m is module for m in bundle.modules):
            bundle.modules.append(module)
        return bundle
