"""A traced kernel's shim bundle as CuTe DSL links it, and the launch's block shape.

Calls made while CuTe DSL traces a module add their shims to that trace's bundle (one per
trace: every kernel of the module links the one translation unit). When the trace ends, a
trace-finalize hook (CuTe DSL's own, run before the module is hashed for its cache) compiles the
bundle once with clang (coopgen.cute.clang) and names the bitcode in the GPU module's
``link-libraries``, which CuTe DSL links before libNVVM compiles the kernels."""
import os
import threading
import weakref

from cutlass._mlir import ir
from cutlass.base_dsl.compiler import GPUArch, LinkLibraries
from cutlass.cute.launch_facts import _current_kernel, _get_launch_facts
from cutlass.cutlass_dsl import CuTeDSL

from ..codegen.bundle import ShimBundle
from ..resolve.hooks import assumed_block
from . import clang

_lock = threading.Lock()
#: (a weak reference to the trace's MLIR context, its bundle), in the order the traces began
#: (nested compiles); a trace that failed leaves a dead reference, pruned by the next.
_bundles: list = []
_hooked = False


def current_kernel():
    """The kernel op being traced, or None outside a CuTe kernel trace."""
    try:
        return _current_kernel(None)
    except Exception:  # noqa: BLE001 (CuTe DSL's DSLRuntimeError: not tracing a kernel)
        return None


def bundle_for(what: str) -> ShimBundle:
    """The bundle of the module being traced (made on its first call)."""
    _install_hook()
    ctx = ir.Context.current
    with _lock:
        _bundles[:] = [(c, b) for c, b in _bundles if c() is not None]
        for c, bundle in _bundles:
            if c() is ctx:
                return bundle
        bundle = ShimBundle("compute_90", f"coopgen-cute-{len(_bundles)}")
        _bundles.append((weakref.ref(ctx), bundle))
        return bundle


def launch_dims(needed: bool):
    """The traced kernel's block shape (CuTe DSL proves it from ``launch(block=...)``), else
    ``coopgen.block_shape``'s, else None (the call must say threads_per_block=)."""
    try:
        block = _get_launch_facts().exact_block_dim
    except Exception:  # noqa: BLE001 (no launch facts: a device function, a dynamic launch)
        block = None
    return tuple(block) if block else assumed_block.get()


def target_arch(dsl) -> str:
    """The architecture CuTe DSL compiles for ('sm_90a'): its GPUArch option, CUTE_DSL_ARCH,
    else the current device's."""
    arch = None
    try:
        arch = dsl.compile_options.options[GPUArch].value
    except (AttributeError, KeyError, TypeError):
        arch = None
    arch = arch or getattr(getattr(dsl, "envar", None), "arch", None) \
        or os.environ.get("CUTE_DSL_ARCH")
    if not arch:
        from cutlass.base_dsl.runtime import cuda as cuda_runtime
        major, minor = cuda_runtime.get_compute_capability_major_minor()
        arch = f"sm_{major}{minor}{'a' if major >= 9 else ''}"
    arch = str(arch).strip()
    return arch if arch.startswith("sm_") else f"sm_{arch.removeprefix('compute_')}"


def _finalize(dsl, module, function_name) -> None:
    """CuTe DSL's trace-finalize hook: compile this trace's bundle, link it to the module."""
    ctx = ir.Context.current
    with _lock:
        mine = [b for c, b in _bundles if c() is ctx]
        _bundles[:] = [(c, b) for c, b in _bundles if c() is not ctx and c() is not None]
    _forget_earlier_paths(dsl)
    for bundle in mine:
        if not bundle.shims:
            continue
        path = clang.compile_bitcode(bundle.source(), target_arch(dsl))
        for op in module.body.operations:
            if op.operation.name == "gpu.module":
                attrs = op.operation.attributes
                paths = [a.value for a in attrs["link-libraries"]] \
                    if "link-libraries" in attrs else []
                attrs["link-libraries"] = ir.ArrayAttr.get(
                    [ir.StringAttr.get(p) for p in sorted({*paths, path})])


def _forget_earlier_paths(dsl) -> None:
    """CuTe DSL adds each module's link libraries to a compile option that outlives the
    compile: coopgen's bitcode of earlier kernels is taken out of it (the user's stays)."""
    try:
        value = dsl.compile_options.options[LinkLibraries].value or ""
    except (AttributeError, KeyError, TypeError):
        return
    ours = str(clang.bitcode_dir())
    kept = [p for p in value.split(",") if p and not p.startswith(ours)]
    if kept != [p for p in value.split(",") if p]:
        dsl.compile_options.options[LinkLibraries] = LinkLibraries(",".join(kept))


def _install_hook() -> None:
    global _hooked
    if not _hooked:
        CuTeDSL._get_dsl().register_trace_finalize_hook(_finalize)
        _hooked = True
