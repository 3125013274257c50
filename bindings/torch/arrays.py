"""What ``coopgen.torch`` reads from a launch's arguments: a cheap key per argument (dtype, rank,
contiguity and device of an array; the type of a number), the kernel parameters numba-cuda or
numba-cuda-mlir pass for it, and the compiler's own device array for the first launch of a
signature. Nothing here imports torch: tensors are recognised by their type's name."""
from __future__ import annotations

import math

#: element type -> numpy typestr of its bits (bfloat16 travels as uint16 and is viewed)
TYPESTRS = {"float16": "<f2", "bfloat16": "<u2", "float32": "<f4", "float64": "<f8",
            "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8", "uint8": "|u1",
            "uint16": "<u2", "uint32": "<u4", "uint64": "<u8", "bool": "|b1",
            "complex64": "<c8", "complex128": "<c16"}
TENSOR_TYPES = ("Tensor", "Parameter", "Buffer")  # torch's classes (subclasses: by MRO)
UNKNOWN_DEVICE = -2  # a __cuda_array_interface__ names no device: the current one


def is_tensor_type(t) -> bool:
    return any(c.__name__ in TENSOR_TYPES and c.__module__.startswith("torch")
               for c in t.__mro__)


def dtype_name(dtype) -> str:
    """``float16`` for torch.float16, numpy's float16, ml_dtypes' bfloat16 or '<f2'."""
    name = str(dtype).removeprefix("torch.")
    if name in TYPESTRS:
        return name
    import numpy as np
    return np.dtype(dtype).name


def c_strides(shape) -> tuple:
    """C-contiguous strides in elements."""
    out, size = [], 1
    for n in reversed(shape):
        out.append(size)
        size *= n
    return tuple(reversed(out))


def is_contiguous(shape, strides) -> bool:
    """Strides (elements) that read ``shape`` C-contiguously (axes of one element are free)."""
    return all(n == 1 or s == c for n, s, c in zip(shape, strides, c_strides(shape)))


class Fields:
    """An array that is not a tensor, as the launch needs it: address, shape, strides in
    elements, element type, device (``UNKNOWN_DEVICE``: the current one)."""
    __slots__ = ("ptr", "shape", "strides", "dtype", "device", "readonly", "owner")

    def __init__(self, ptr, shape, strides, dtype, device, readonly, owner):
        self.ptr, self.shape, self.strides = ptr, tuple(shape), tuple(strides)
        self.dtype, self.device, self.readonly, self.owner = dtype, device, readonly, owner

    def key(self) -> tuple:
        return ("array", self.dtype, len(self.shape), is_contiguous(self.shape, self.strides),
                self.device, self.readonly)


def fields(a, name: str) -> Fields:
    """The fields of a ``__cuda_array_interface__`` or DLPack producer (not a tensor)."""
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        import numpy as np
        dtype = np.dtype(cai["typestr"])
        if dtype.kind == "V":
            raise TypeError(f"coopgen.torch: {name}'s __cuda_array_interface__ says "
                            f"{cai['typestr']!r}, which names no element type (bfloat16 has no "
                            f"typestr); pass it as a tensor or a DLPack producer")
        shape = tuple(cai["shape"])
        strides = cai.get("strides")
        if strides is None:
            strides = c_strides(shape)
        elif any(s % dtype.itemsize for s in strides):
            raise ValueError(f"coopgen.torch: {name}'s strides {strides} are not whole "
                             f"{dtype.itemsize}-byte elements")
        else:
            strides = tuple(s // dtype.itemsize for s in strides)
        ptr, readonly = cai["data"]
        return Fields(ptr, shape, strides, dtype.name, UNKNOWN_DEVICE, bool(readonly), a)
    if hasattr(a, "__dlpack__"):
        view = _strided_memory_view().from_dlpack(a, stream_ptr=-1)
        if not view.is_device_accessible:
            raise ValueError(f"coopgen.torch: {name} is not in GPU memory")
        shape = tuple(view.shape)
        strides = c_strides(shape) if view.strides is None else tuple(view.strides)
        device = getattr(view, "device_id", UNKNOWN_DEVICE)
        return Fields(view.ptr, shape, strides, dtype_name(view.dtype), device,
                      bool(getattr(view, "readonly", False)), a)
    raise TypeError(f"coopgen.torch: {name} must be a tensor, a device array (with "
                    f"__cuda_array_interface__ or __dlpack__) or a number, not "
                    f"{type(a).__name__}")


def _strided_memory_view():
    try:
        from cuda.core.utils import StridedMemoryView
    except ImportError:  # cuda.core before 0.4
        from cuda.core.experimental.utils import StridedMemoryView
    return StridedMemoryView


def tensor_fields(a) -> Fields:
    return Fields(a.data_ptr(), a.shape, a.stride(), dtype_name(a.dtype), a.get_device(),
                  False, a)


def itemsize(name: str) -> int:
    import numpy as np
    return np.dtype(TYPESTRS[name]).itemsize


class MisalignedView(ValueError):
    """An array seen as wider elements (a launcher's ``views``) does not start on a boundary of
    their size: the kernel's loads would fault. A caller with a kernel for unaligned data
    catches it and launches that instead."""


def misaligned(name: str, ptr: int, item: int, view: str = ""):
    view = f" {view}" if view else ""
    raise MisalignedView(f"coopgen.torch: {name} is seen as {item}-byte{view} elements, so "
                         f"its data must start on a {item}-byte boundary; it starts at "
                         f"{ptr:#x} ({ptr % item} bytes past one)")


def words(f: Fields, view: str, name: str) -> Fields:
    """``f``'s memory seen as a flat C-contiguous array of ``view`` elements ("flat": its own
    type), a view the caller asked for."""
    view = f.dtype if view == "flat" else view
    size, item = itemsize(f.dtype), itemsize(view)
    if f.ptr % item:
        misaligned(name, f.ptr, item, view)
    if not is_contiguous(f.shape, f.strides):
        raise ValueError(f"coopgen.torch: {name} is seen as a flat array of {view}, so it must "
                         f"be C-contiguous")
    n, rest = divmod(math.prod(f.shape) * size, item)
    if rest:
        raise ValueError(f"coopgen.torch: {name} holds {n * item + rest} bytes, not whole "
                         f"{item}-byte {view} elements")
    return Fields(f.ptr, (n,), (1,), view, f.device, f.readonly, f.owner)


def device_array(cuda, f: Fields):
    """The compiler's own device array over ``f``'s memory (its first launch types it)."""
    import numpy as np
    typestr = TYPESTRS[f.dtype]
    size = np.dtype(typestr).itemsize
    contiguous = is_contiguous(f.shape, f.strides)
    desc = {"data": (f.ptr, f.readonly), "shape": f.shape, "typestr": typestr, "version": 3,
            "strides": None if contiguous else tuple(s * size for s in f.strides)}
    array = cuda.from_cuda_array_interface(desc, owner=f.owner, sync=False)
    if f.dtype == "bfloat16":
        try:
            import ml_dtypes
        except ImportError:
            raise ImportError("coopgen.torch: bfloat16 arrays need ml_dtypes (pip install "
                              "'coopgen[torch]')") from None
        array = array.view(ml_dtypes.bfloat16)
    return array


#: kernel parameters of an array, per compiler: numba-cuda's (meminfo, parent, items,
#: itemsize, data, shape, strides in bytes) and numba-cuda-mlir's memref (allocated, aligned,
#: offset, shape, strides in elements)
def numba_params(ptr, shape, strides, itemsize) -> list:
    return [0, 0, math.prod(shape), itemsize, ptr, *shape, *(s * itemsize for s in strides)]


def memref_params(ptr, shape, strides, itemsize) -> list:
    return [ptr, ptr, 0, *shape, *strides]


ABI = {"numba": numba_params, "memref": memref_params}
