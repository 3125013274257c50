"""Every place coopgen relies on numba-cuda internals, where it has no public API (the launch
configuration, ``extending``, typing templates, ``imputils`` and ``rewrites`` are public):
:data:`EXPECTED`, which :func:`problems` checks against the installed numba-cuda
(tests/cpu/test_numba_internals.py). ``cache=True`` needs one: numba refuses to pickle
code linked from memory, so :func:`install_kernel_cache` stores coopgen's LTO-IR (and the
source of numba-cuda's bfloat16 shims) with the library and a later process loads the kernel
with no typing, lowering, NVVM or NVRTC."""
import importlib
import inspect
import sys


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
    func_ir = getattr(frame.f_locals.get("self"), "func_ir", None) if frame else None
    offset = frame.f_locals.get("offset") if frame else None
    return None if func_ir is None or offset is None else (func_ir, offset)


def compiling_for_cc() -> tuple[int, int] | None:
    """(major, minor) numba is compiling for (as its math lowering reads it), or None."""
    from numba.cuda.core import targetconfig
    stack = targetconfig.ConfigStack()
    cc = getattr(stack.top(), "compute_capability", None) if len(stack) else None
    return tuple(cc) if cc else None


def install_kernel_cache() -> bool:
    """Let ``@cuda.jit(cache=True)`` keep kernels linking coopgen's LTO-IR or numba-cuda's
    float16/bfloat16 shim source (bfloat16 kernels); False where numba's code library no longer
    has the expected shape."""
    from numba.cuda.codegen import CUDACodeLibrary
    from numba.cuda.cudadrv.linkable_code import CUSource, LTOIR
    if getattr(CUDACodeLibrary, "_coopgen_cache", False):
        return True
    if not _code_library_fits():
        return False  # leave numba's cache as it is; tests report the change
    reduce, rebuild = CUDACodeLibrary._reduce_states, CUDACodeLibrary._rebuild.__func__
    kinds = {"ltoir": LTOIR, "cu": CUSource}

    def kind_of(f):  # CUDA source with no callbacks pickles as data too
        plain = type(f) is CUSource and not (f.setup_callback or f.teardown_callback or f.nrt)
        return "ltoir" if isinstance(f, LTOIR) else "cu" if plain else None

    def reduce_states(self):
        ours = [f for f in self._linking_files if kind_of(f)]
        if not ours:
            return reduce(self)
        if self._entry_name is not None:
            # Link now (the first launch would, in this process) so the cache holds the cubin
            # and a later process skips the link-time optimisation too.
            try:
                self.get_cubin()
            except Exception:  # no device to pick the arch: the loader links instead
                pass
        saved = self._linking_files
        self._linking_files = {f for f in saved if f not in ours}
        try:
            state = reduce(self)
        finally:
            self._linking_files = saved
        state["coopgen_linking"] = tuple(
            (kind_of(f), str(f.name), bytes(f.data) if isinstance(f, LTOIR) else f.data)
            for f in sorted(ours, key=lambda f: (kind_of(f), str(f.name))))
        return state

    def rebuilt(cls, coopgen_linking=(), coopgen_ltoir=(), **state):
        instance = rebuild(cls, **state)
        for kind, name, data in (*coopgen_linking, *(("ltoir", *f) for f in coopgen_ltoir)):
            instance._linking_files.add(kinds[kind](data, name=name))
        return instance

    CUDACodeLibrary._reduce_states = reduce_states
    CUDACodeLibrary._rebuild = classmethod(rebuilt)
    CUDACodeLibrary._coopgen_cache = True
    return True


def _code_library_fits() -> bool:
    library = _at("numba.cuda.codegen:CUDACodeLibrary")
    init_names = library.__init__.__code__.co_names
    return (all(callable(getattr(library, name, None))
                for name in ("_reduce_states", "get_cubin", "add_linking_file"))
            and isinstance(inspect.getattr_static(library, "_rebuild", None), classmethod)
            and all(attr in init_names for attr in ("_linking_files", "_entry_name")))


def _at(path: str):
    """What ``"module:attribute.attribute"`` names."""
    module, _, attributes = path.partition(":")
    found = importlib.import_module(module)
    for name in attributes.split(".") if attributes else ():
        found = getattr(found, name)
    return found


_LOWER = "numba.cuda.lowering:Lower"
#: (what coopgen reads, a check that the installed numba-cuda still has it) -- run by problems().
EXPECTED = (
    ("numba.cuda.lowering.Lower.lower_function_body: a method whose frame holds `self` (the "
     "Lower, with .func_ir) and `offset` (the label of the block being lowered)",
     lambda: {"self", "offset"} <= set(getattr(_at(_LOWER), _LOWER_FRAME).__code__.co_varnames)
     and "func_ir" in inspect.getsource(_at(_LOWER).__init__)),
    ("numba.cuda.core.targetconfig.ConfigStack: top() holds the flags, with compute_capability",
     lambda: hasattr(_at("numba.cuda.core.targetconfig:ConfigStack"), "top")
     and "compute_capability" in _at("numba.cuda.compiler:CUDAFlags").options),
    ("numba.cuda.codegen.CUDACodeLibrary: _reduce_states(), classmethod _rebuild(**state), "
     "_linking_files (a set), _entry_name, get_cubin()", _code_library_fits),
    ("numba.cuda.cudadrv.linkable_code.LTOIR and CUSource(data, name=, callbacks, nrt=)",
     lambda: all({"name", "setup_callback", "teardown_callback", "nrt"} <= set(inspect.signature(
         _at(f"numba.cuda.cudadrv.linkable_code:{c}")).parameters) for c in ("LTOIR", "CUSource"))),
    ("numba.cuda.core.analysis.compute_cfg_from_blocks",
     lambda: callable(_at("numba.cuda.core.analysis:compute_cfg_from_blocks"))),
    ("numba.cuda.cudadrv.nvvm: set_launch_bounds(function, n) and NVVM().data_layout",
     lambda: callable(_at("numba.cuda.cudadrv.nvvm:set_launch_bounds"))
     and hasattr(_at("numba.cuda.cudadrv.nvvm:NVVM"), "data_layout")),
    ("numba.cuda.dispatcher._Kernel.launch(self, args, griddim, blockdim, stream, sharedmem): "
     "launch_hook adds dynamic shared memory (pre-launch callbacks run too late); "
     "CUDADispatcher._launch_config_key, a staticmethod that launch_hook keys on the user's "
     "bytes once the launch reports its total",
     lambda: _at(f"{__package__}.launch_hook:check_internals")() is None),
    ("numba.cuda.dispatcher.get_current_device (linkcheck compiles a kernel's device functions "
     "for the checked arch on a machine without a GPU)",
     lambda: callable(_at("numba.cuda.dispatcher:get_current_device"))),
    ("numba.cuda._internal.cuda_fp16/cuda_bf16.shim_obj: the CUDA sources of numba-cuda's "
     "float16/bfloat16 operator shims, which an operator compiled apart from its kernel links",
     lambda: all(isinstance(shims, _at("numba.cuda.cudadrv.linkable_code:LinkableCode"))
                 for shims in half_shims())),
)


def problems() -> list[str]:
    """Each internal of :data:`EXPECTED` the installed numba-cuda no longer provides."""
    out = []
    for what, holds in EXPECTED:
        try:
            if not holds():
                out.append(f"changed: {what}")
        except (ImportError, AttributeError, TypeError, ValueError, RuntimeError) as e:
            out.append(f"{what}: {type(e).__name__}: {e}")
    return out
