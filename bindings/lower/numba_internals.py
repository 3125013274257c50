"""Every place coopgen relies on numba-cuda internals, where it has no public API (the launch
configuration, ``extending``, typing templates, ``imputils`` and ``rewrites`` are public):
:data:`EXPECTED`, which :func:`problems` checks against the installed numba-cuda
(tests/cpu/test_numba_internals.py). ``cache=True`` needs one: numba refuses to pickle
in-memory LTO-IR, so :func:`install_kernel_cache` stores coopgen's with the library and a later
process loads the kernel with no typing, lowering, NVVM or NVRTC."""
from __future__ import annotations

import sys

#: (what coopgen reads, how to find it) -- checked by problems().
EXPECTED = (
    "numba.cuda.lowering.Lower.lower_function_body: a method whose frame holds `self` (the "
    "Lower, with .func_ir) and `offset` (the label of the block being lowered)",
    "numba.cuda.core.targetconfig.ConfigStack: top() holds the flags, with compute_capability",
    "numba.cuda.codegen.CUDACodeLibrary: _reduce_states(), classmethod _rebuild(**state), "
    "_linking_files (a set), _entry_name, get_cubin()",
    "numba.cuda.cudadrv.linkable_code.LTOIR(data, name=)",
    "numba.cuda.core.analysis.compute_cfg_from_blocks",
    "numba.cuda.cudadrv.nvvm: set_launch_bounds(function, n) and NVVM().data_layout",
    "numba.cuda.dispatcher._Kernel.launch(self, args, griddim, blockdim, stream, sharedmem): "
    "launch_hook adds dynamic shared memory (pre-launch callbacks run too late)",
    "numba.cuda.dispatcher.CUDADispatcher._launch_config_key, a staticmethod of the launch "
    "configuration: launch_hook keys it on the user's bytes once the launch reports its total",
    "numba.cuda.dispatcher.get_current_device (linkcheck compiles a kernel's device functions "
    "for the checked arch on a machine without a GPU)",
    "numba.cuda._internal.cuda_fp16/cuda_bf16.shim_obj: the CUDA sources of numba-cuda's "
    "float16/bfloat16 operator shims, which an operator compiled apart from its kernel links",
)


def half_shims() -> tuple:
    """The CUDA sources numba-cuda's float16 and bfloat16 operators call into."""
    from numba.cuda._internal import cuda_bf16, cuda_fp16
    return cuda_fp16.shim_obj, cuda_bf16.shim_obj


_LOWER_FRAME = "lower_function_body"


def lowering_site():
    """(func_ir, block label) being lowered, read off the stack; None outside lowering."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != _LOWER_FRAME:
        frame = frame.f_back
    if frame is None:
        return None
    lower, offset = frame.f_locals.get("self"), frame.f_locals.get("offset")
    func_ir = getattr(lower, "func_ir", None)
    if func_ir is None or offset is None:
        return None
    return func_ir, offset


def compiling_for_cc() -> tuple[int, int] | None:
    """(major, minor) numba is compiling for (as its math lowering reads it), or None."""
    from numba.cuda.core import targetconfig

    stack = targetconfig.ConfigStack()
    if not len(stack):
        return None
    cc = getattr(stack.top(), "compute_capability", None)
    return tuple(cc) if cc else None


def _coopgen_files(library) -> list:
    from numba.cuda.cudadrv.linkable_code import LTOIR

    return [f for f in library._linking_files if isinstance(f, LTOIR)]


def _reduce_states(self):
    ours = _coopgen_files(self)
    if not ours:
        return _ORIGINAL["reduce"](self)
    if self._entry_name is not None:
        # Link now (the first launch would, in this process) so the cache holds the cubin and
        # a later process skips the link-time optimisation too.
        try:
            self.get_cubin()
        except Exception:  # no device to pick the arch: the loader links instead
            pass
    saved = self._linking_files
    self._linking_files = {f for f in saved if f not in ours}
    try:
        state = _ORIGINAL["reduce"](self)
    finally:
        self._linking_files = saved
    state["coopgen_ltoir"] = tuple((f.name, bytes(f.data)) for f in
                                   sorted(ours, key=lambda f: str(f.name)))
    return state


def _rebuild(cls, coopgen_ltoir=(), **state):
    from numba.cuda.cudadrv.linkable_code import LTOIR

    instance = _ORIGINAL["rebuild"](cls, **state)
    for name, data in coopgen_ltoir:
        instance._linking_files.add(LTOIR(data, name=name))
    return instance


_ORIGINAL: dict = {}


def install_kernel_cache() -> bool:
    """Let ``@cuda.jit(cache=True)`` keep kernels linking coopgen's LTO-IR; False where numba's
    code library no longer has the expected shape."""
    from numba.cuda.codegen import CUDACodeLibrary

    if getattr(CUDACodeLibrary, "_coopgen_cache", False):
        return True
    if _code_library_problems():
        return False  # leave numba's cache as it is; tests report the change
    _ORIGINAL["reduce"] = CUDACodeLibrary._reduce_states
    _ORIGINAL["rebuild"] = CUDACodeLibrary._rebuild.__func__
    CUDACodeLibrary._reduce_states = _reduce_states
    CUDACodeLibrary._rebuild = classmethod(_rebuild)
    CUDACodeLibrary._coopgen_cache = True
    return True


def _code_library_problems() -> list[str]:
    import inspect

    from numba.cuda.codegen import CUDACodeLibrary

    out = []
    for name in ("_reduce_states", "get_cubin", "add_linking_file"):
        if not callable(getattr(CUDACodeLibrary, name, None)):
            out.append(f"CUDACodeLibrary.{name} is gone")
    rebuild = inspect.getattr_static(CUDACodeLibrary, "_rebuild", None)
    if not isinstance(rebuild, classmethod):
        out.append("CUDACodeLibrary._rebuild is no longer a classmethod")
    init_names = CUDACodeLibrary.__init__.__code__.co_names
    for attr in ("_linking_files", "_entry_name"):
        if attr not in init_names:
            out.append(f"CUDACodeLibrary.__init__ no longer sets {attr}")
    return out


def problems() -> list[str]:
    """Each internal of :data:`EXPECTED` the installed numba-cuda no longer provides."""
    import inspect

    out = []
    try:
        from numba.cuda.lowering import Lower
        fn = getattr(Lower, _LOWER_FRAME)
        missing = {"self", "offset"} - set(fn.__code__.co_varnames)
        if missing:
            out.append(f"Lower.{_LOWER_FRAME} has no local(s) {sorted(missing)}")
        if "func_ir" not in inspect.getsource(Lower.__init__):
            out.append("Lower no longer keeps func_ir")
    except (ImportError, AttributeError) as e:
        out.append(f"Lower.{_LOWER_FRAME}: {e}")
    try:
        from numba.cuda.core import targetconfig
        if not hasattr(targetconfig.ConfigStack, "top"):
            out.append("ConfigStack.top is gone")
    except ImportError as e:
        out.append(f"ConfigStack: {e}")
    try:
        from numba.cuda.compiler import CUDAFlags
        if "compute_capability" not in CUDAFlags.options:
            out.append("CUDAFlags has no compute_capability option")
    except (ImportError, AttributeError) as e:
        out.append(f"CUDAFlags.compute_capability: {e}")
    try:
        out += _code_library_problems()
    except ImportError as e:
        out.append(f"CUDACodeLibrary: {e}")
    try:
        from numba.cuda.cudadrv.linkable_code import LTOIR
        if "name" not in inspect.signature(LTOIR).parameters:
            out.append("LTOIR(data, name=) lost its name parameter")
    except (ImportError, ValueError) as e:
        out.append(f"LTOIR: {e}")
    try:
        from numba.cuda.core.analysis import compute_cfg_from_blocks  # noqa: F401
        from numba.cuda.cudadrv import nvvm
        if not callable(getattr(nvvm, "set_launch_bounds", None)):
            out.append("nvvm.set_launch_bounds is gone")
        if not hasattr(nvvm.NVVM, "data_layout"):
            out.append("NVVM().data_layout is gone")
    except ImportError as e:
        out.append(f"analysis/nvvm: {e}")
    try:
        from .launch_hook import check_internals
        check_internals()
    except (ImportError, RuntimeError) as e:
        out.append(f"_Kernel.launch: {e}")
    try:
        from numba.cuda.cudadrv.linkable_code import LinkableCode
        if not all(isinstance(s, LinkableCode) for s in half_shims()):
            out.append("cuda_fp16/cuda_bf16.shim_obj is no linkable code")
    except (ImportError, AttributeError) as e:
        out.append(f"cuda_fp16/cuda_bf16.shim_obj: {e}")
    from numba.cuda import dispatcher
    if not callable(getattr(dispatcher, "get_current_device", None)):
        out.append("numba.cuda.dispatcher.get_current_device is gone")
    return out
