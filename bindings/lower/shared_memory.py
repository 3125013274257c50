"""What a numba kernel's LLVM modules do with shared memory (for where coopgen's storage may
live, coopgen.codegen.placement), and the alignment numba's own shared byte arrays need to
serve as temp storage."""
from llvmlite import binding
from numba.cuda.cudadrv import nvvm

from ..codegen.shims import SHARED_ALIGNMENT


def is_kernel_module(module) -> bool:
    """Whether an llvmlite module holds a kernel (numba marks it in ``nvvm.annotations``)."""
    annotations = module.namedmetadata.get("nvvm.annotations")
    return annotations is not None and any(
        getattr(op, "string", None) == "kernel" for md in annotations.operands
        for op in md.operands)


def _shared_globals(module):
    """(variable, whether it has a definition) for each shared-memory global of the module."""
    for gv in module.global_values:
        if getattr(gv, "addrspace", 0) == 3:
            yield gv, getattr(gv, "initializer", None) is not None


def uses_dynamic_shared(module) -> bool:
    """Whether an llvmlite module declares dynamic shared memory (``cuda.shared.array(0, ...)``:
    a shared array without a definition)."""
    return any(not defined for _, defined in _shared_globals(module))


def static_shared_bytes(module) -> int:
    """Bytes of the statically sized shared arrays an llvmlite module defines (numba's
    ``cuda.shared.array``, ``coopgen.shared.array``); dynamic ones (declarations) count 0."""
    layout = binding.create_target_data(nvvm.NVVM().data_layout)
    total = 0
    for gv, defined in _shared_globals(module):
        if defined:
            align = gv.value_type.get_abi_alignment(layout)
            total = -(-total // align) * align + gv.value_type.get_abi_size(layout)
    return total


def align_numba_shared_bytes(module) -> None:
    """numba aligns a ``cuda.shared.array(n, uint8)`` (and the dynamic ``cuda.shared.array(0,
    uint8)``) to 1 byte only; used as a primitive's temp storage it must hold any CUB
    TempStorage. Raise the alignment of the byte arrays numba put in shared memory in this
    module, named ``_cudapy_smem...`` (a slice of one is as aligned as its offset, as in C++)."""
    for gv, _ in _shared_globals(module):
        if gv.name.startswith("_cudapy_smem") and str(getattr(gv.value_type, "element", None)) \
                == "i8" and (gv.align or 1) < SHARED_ALIGNMENT:
            gv.align = SHARED_ALIGNMENT
