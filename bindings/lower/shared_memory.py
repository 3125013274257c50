"""What a numba kernel's LLVM modules do with shared memory (for where coopgen's storage may
live, coopgen.codegen.placement), and the alignment numba's own shared byte arrays need to
serve as temp storage."""
import re

from numba.cuda.cudadrv import nvvm

from ..codegen.shims import SHARED_ALIGNMENT

_SCALAR_BYTES = {"half": 2, "bfloat": 2, "float": 4, "double": 8, "fp128": 16}
_SCALAR = re.compile(r"i(\d+)|(\w+)")


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
    total = 0
    for gv, defined in _shared_globals(module):
        if not defined:
            continue
        size, align, _ = _type_layout(str(gv.value_type))
        total = -(-total // align) * align + size
    return total


def _type_layout(text: str, i: int = 0) -> tuple[int, int, int]:
    """(size, alignment, end) of the LLVM type spelled at text[i]."""
    if text.startswith("[", i):
        n_end = text.index(" x ", i)
        count = int(text[i + 1:n_end])
        size, align, j = _type_layout(text, n_end + 3)
        return count * size, align, text.index("]", j) + 1
    packed = text.startswith("<{", i)
    if packed or text.startswith("{", i):
        j = i + (2 if packed else 1)
        size, align = 0, 1
        while True:
            while text[j] in " ,":
                j += 1
            if text[j] in "}>":
                break
            fsize, falign, j = _type_layout(text, j)
            falign = 1 if packed else falign
            size = -(-size // falign) * falign + fsize
            align = max(align, falign)
        size = -(-size // align) * align
        return size, align, j + (2 if packed else 1)
    m = _SCALAR.match(text, i)
    nbytes = max(1, int(m.group(1)) // 8) if m.group(1) else _SCALAR_BYTES[m.group(2)]
    return nbytes, nbytes, m.end()


#: numba's own ``cuda.shared.array`` globals (static and dynamic) are named so.
NUMBA_SHARED_PREFIX = "_cudapy_smem"


def align_numba_shared_bytes(module, alignment: int = SHARED_ALIGNMENT) -> None:
    """numba aligns a ``cuda.shared.array(n, uint8)`` (and the dynamic ``cuda.shared.array(0,
    uint8)``) to 1 byte only; used as a primitive's temp storage it must hold any CUB
    TempStorage. Raise the alignment of the byte arrays numba put in shared memory in this
    module (a slice of one is as aligned as its offset, as in CUDA C++)."""
    for gv in module.global_values:
        if not gv.name.startswith(NUMBA_SHARED_PREFIX) or gv.type.addrspace != \
                nvvm.ADDRSPACE_SHARED:
            continue
        elem = gv.value_type
        if getattr(elem, "element", None) is not None and str(elem.element) == "i8" and \
                (gv.align or 1) < alignment:
            gv.align = alignment
