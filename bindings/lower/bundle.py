"""A kernel's shim bundle as numba-cuda links it: an ``LTOIR`` linking file of the code library,
compiled on first read (coopgen.codegen.bundle), that knows the kernel's shared memory and the
order of its calls (numba's IR)."""
import threading
import weakref

from numba.cuda.cudadrv.linkable_code import LTOIR

from ..codegen import nvrtc
from ..codegen.bundle import ShimBundle
from .errors import CoopgenTypeError
from .launch_hook import report_on
from .lowering_context import launch_config, may_precede, runs_once
from .numba_internals import compiling_for_cc
from .shared_memory import is_kernel_module, static_shared_bytes, uses_dynamic_shared


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
