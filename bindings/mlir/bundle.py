"""A kernel's shim bundle as numba-cuda-mlir links it: an ``LTOIR`` link item of the function
being lowered, compiled when its linker reads it (after the whole function is lowered); and the
launch's block shape, read by a whole-function planner before typing."""
import contextvars
import math
import threading
import weakref
from types import SimpleNamespace

import numba_cuda_mlir._mlir.ir as ir
from numba_cuda_mlir import extending as ext
from numba_cuda_mlir.numba_cuda.cudadrv.linkable_code import LTOIR
from numba_cuda_mlir.numba_cuda.core import ir as nir

from ..codegen import nvrtc, placement
from ..codegen.bundle import ShimBundle
from ..model.errors import CoopgenError

_launch_block: contextvars.ContextVar = contextvars.ContextVar("coopgen_mlir_block", default=None)


class LinkedShimBundle(ShimBundle, LTOIR):
    requirement_before_link = True

    def __init__(self, arch: str, name: str, builder):
        ShimBundle.__init__(self, arch, name)
        LTOIR.__init__(self, data=None, name=name)
        self._builder = weakref.ref(builder)  # the lowering of its function
        self._metadata = builder.metadata  # its compile's, which the launch reads

    @property
    def data(self) -> bytes:  # read by numba-cuda-mlir's linker once the function is lowered
        code = self.ltoir()
        if (need := self.requirement) is not None:  # dynamic: the launch
            ext.set_required_dynamic_shared_memory(  # adds it (at the base: after_user False)
                SimpleNamespace(metadata=self._metadata), placement.launch_bytes(0, need))
        return code

    def _kernel_shared_memory(self) -> dict:
        """A kernel's storage may be dynamic, at the base of dynamic shared memory: where the
        kernel uses dynamic shared memory itself it stays static (the launch's bytes are the
        larger of the user's and coopgen's, not their sum)."""
        builder = self._builder()
        if builder is None or not builder._is_kernel or builder._dynamic_shared_memory_values:
            return {"may_be_dynamic": False}
        return {"may_be_dynamic": True, "after_user_bytes": False,
                "other_static_bytes": _static_shared_bytes(builder.mlir_gpu_module)}


# numba-cuda-mlir's link plan knows LTO-IR link items by their class's name: under its own name
# the bundle would leave the kernel compiled to PTX, linked beside the shims with no inlining
# across them (several times slower, and over the register bound of a 512-thread kernel).
LinkedShimBundle.__name__ = LinkedShimBundle.__qualname__ = LTOIR.__name__


def _static_shared_bytes(module) -> int:
    """Bytes of the module's shared-memory globals (cuda.shared.array, coopgen.shared.array)."""
    total = 0
    for op in module.bodyRegion.blocks[0].operations:
        if op.operation.name == "memref.global":
            mtype = ir.MemRefType(ir.TypeAttr(op.attributes["type"]).value)
            if "workgroup" in str(mtype.memory_space):
                item, lanes = mtype.element_type, 1
                if isinstance(item, ir.VectorType):  # cuda.float32x2 and the like
                    item, lanes = item.element_type, math.prod(item.shape)
                total += math.prod(mtype.shape) * lanes * max(1, item.width // 8)
    return total


_bundles: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_bundles_lock = threading.Lock()


def arch_of(builder) -> str:
    cc = builder.metadata["gpu_target"]["cc"]
    return nvrtc._normalize_arch(f"sm_{cc[0]}{cc[1]}")


def bundle_for(builder, what: str) -> LinkedShimBundle:
    """The bundle of the function ``builder`` lowers (made and linked on first use)."""
    with _bundles_lock:
        if (bundle := _bundles.get(builder)) is None:
            arch = arch_of(builder)
            if refused := nvrtc.unsupported_arch(arch):
                raise CoopgenError(f"{what}: {refused}")
            bundle = _bundles[builder] = LinkedShimBundle(arch, f"coopgen-shims-{id(builder):x}",
                                                          builder)
            builder.link_external_item(bundle)
            _bound_threads(builder)
        return bundle


def _bound_threads(builder) -> None:
    """Tell ptxas the block size the kernel is specialised on (``maxntid``, C++'s
    ``__launch_bounds__``): a 512-thread radix sort then fits its registers."""
    block = launch_dims(True)
    attrs = builder.mlir_funcOp.attributes
    if block and builder._is_kernel and "nvvm.maxntid" not in attrs:
        attrs["nvvm.maxntid"] = ir.DenseI32ArrayAttr.get([block[0] * block[1] * block[2], 1, 1])


def _is_coopgen(value, depth: int = 0) -> bool:
    name = getattr(value, "__name__", None) if isinstance(value, type(threading)) else None
    if (name or type(value).__module__ or "").split(".")[0] == "coopgen":
        return True
    # a device function that calls coopgen: the kernel inlines it (coopgen.mlir.rewrite)
    return depth < 4 and calls_coopgen(getattr(value, "py_func", None), depth + 1)


def calls_coopgen(func, depth: int = 0) -> bool:
    """Whether a Python function reads coopgen (a global or closure variable of its), itself
    or through the device functions it calls."""
    code = getattr(func, "__code__", None)
    if code is None:
        return False
    cells = [c.cell_contents for c in func.__closure__ or () if _filled(c)]
    return any(_is_coopgen(v, depth) for v in cells + [
        func.__globals__.get(n) for n in code.co_names if n in func.__globals__])


def _filled(cell) -> bool:
    try:
        cell.cell_contents
    except ValueError:  # a closure variable not assigned yet
        return False
    return True


def uses_coopgen(func_ir) -> bool:
    return any(isinstance(stmt, nir.Assign) and isinstance(stmt.value, (nir.Global, nir.FreeVar))
               and _is_coopgen(stmt.value.value)
               for block in func_ir.blocks.values() for stmt in block.body)


@ext.register_planner
class LaunchShape(ext.WholeFunctionPlanner):
    """A kernel that calls coopgen is specialised on its launch's block shape, which typing
    reads (launch_dims); a kernel compiled without a launch has none."""

    def run(self) -> bool:
        if self.is_device_function:
            return False
        block = None
        if uses_coopgen(self.state.func_ir):
            try:
                block = tuple(ext.require_launch_config(self.state)["block"])
            except RuntimeError:  # no launch: coopgen.block_shape may give one
                block = None
        _launch_block.set(block and block + (1,) * (3 - len(block)))
        return False


def launch_dims(needed: bool):
    from ..resolve.hooks import assumed_block
    return _launch_block.get() or assumed_block.get()
