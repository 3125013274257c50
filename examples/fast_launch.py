"""Launch a numba kernel (coopgen's or any other) on PyTorch tensors, or on any
``__cuda_array_interface__`` or DLPack producer, with a few µs of host time.

numba's own launch (``kernel[grid, block, stream](*args)``) types every argument, finds the
specialization, builds a device-array view of each tensor (through DLPack for bfloat16) and
converts every value to ctypes again on each call: 250-500 µs from PyTorch tensors. A
:class:`Launcher` does that work once per signature. Its first call is numba's ordinary launch
(so numba compiles, loads the module and coopgen raises the kernel's shared-memory limit as
usual); a pre-launch callback keeps the specialization numba chose and the dynamic shared bytes
it launched with. Every later call writes the raw pointers, shapes and scalars into ctypes
slots laid out as numba passes a kernel's arguments, and calls the driver's ``cuLaunchKernel``
on the given stream, by default PyTorch's current one, so ``torch.cuda.graph`` captures it.

    launch = Launcher(kernel, threads)                 # nothing compiled yet
    launch(grid, first_args, numba_args=numba_args)    # the first call, numba's path
    launch(grid, x, w, y, n, eps)                      # later: tensors and scalars

Arrays: each argument's memory is seen as the kernel's array type, C-contiguous: the same
shape with the last axis counted in the kernel's element (a float16 row of 4096 is 2048
uint32 words), or flat when the kernel's array is 1-D. A launcher keeps the kernel of one
device; launches must run where that device's primary context is current (PyTorch's and
numba's are the same context).
"""
from __future__ import annotations

import ctypes
import math
import sys

from numba import types

#: ctypes of the scalars numba passes by value (numba's ``_Kernel._prepare_args``).
SCALARS = {types.int8: ctypes.c_int8, types.int16: ctypes.c_int16,
           types.int32: ctypes.c_int32, types.int64: ctypes.c_int64,
           types.uint8: ctypes.c_uint8, types.uint16: ctypes.c_uint16,
           types.uint32: ctypes.c_uint32, types.uint64: ctypes.c_uint64,
           types.float32: ctypes.c_float, types.float64: ctypes.c_double}
_driver = None


def driver():
    """libcuda's ``cuLaunchKernel`` and ``cuGetErrorName``, typed once."""
    global _driver
    if _driver is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuLaunchKernel.restype = ctypes.c_int
        lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + \
            [ctypes.c_void_p] * 3
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _driver = lib
    return _driver


def torch_stream(tensor=None) -> int:
    """PyTorch's current stream on the tensor's device (or the current device) as a raw
    handle; 0 (the legacy default stream) when PyTorch is not imported."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    get_device = getattr(tensor, "get_device", None)
    device = get_device() if get_device is not None else torch.cuda.current_device()
    return torch._C._cuda_getCurrentRawStream(device)  # what Inductor's launchers call


def array_fields(a, ndim: int, itemsize: int, name: str = "array") -> tuple[int, tuple]:
    """(address, shape) of ``a``'s memory seen as a C-contiguous array of ``ndim`` axes of
    ``itemsize``-byte elements: a PyTorch tensor, a ``__cuda_array_interface__`` object or a
    DLPack producer."""
    if hasattr(a, "data_ptr"):  # PyTorch: the fastest to read
        if not a.is_contiguous():
            raise ValueError(f"launcher: {name} must be C-contiguous")
        ptr, shape, size = a.data_ptr(), tuple(a.shape), a.element_size()
    elif hasattr(a, "__cuda_array_interface__"):
        cai = a.__cuda_array_interface__
        ptr, shape, size = cai["data"][0], tuple(cai["shape"]), int(cai["typestr"][2:])
        strides = cai.get("strides")
        if strides is not None and strides != _c_strides(shape, size):
            raise ValueError(f"launcher: {name} must be C-contiguous")
    elif hasattr(a, "__dlpack__"):
        from rms_norm import _strided_memory_view  # the example's cuda.core import
        view = _strided_memory_view().from_dlpack(a, stream_ptr=-1)
        ptr, shape, size = view.ptr, tuple(view.shape), view.dtype.itemsize
        if view.strides is not None and any(n > 1 and s * size != c for n, s, c in zip(
                shape, view.strides, _c_strides(shape, size))):
            raise ValueError(f"launcher: {name} must be C-contiguous")
    else:
        raise ValueError(f"launcher: {name} must be a device array (a PyTorch tensor, or an "
                         f"object with __cuda_array_interface__ or __dlpack__), not "
                         f"{type(a).__name__}")
    if ndim == 1:
        shape = (math.prod(shape),)
    elif len(shape) != ndim:
        raise ValueError(f"launcher: {name} has {len(shape)} axes; the kernel takes {ndim}")
    last = shape[-1] * size if shape else 0
    if last % itemsize:
        raise ValueError(f"launcher: {name}'s last axis holds {last} bytes, not whole "
                         f"{itemsize}-byte elements of the kernel's array")
    return ptr, shape[:-1] + (last // itemsize,)


def _c_strides(shape, itemsize: int) -> tuple:
    return tuple(itemsize * math.prod(shape[i + 1:]) for i in range(len(shape)))


class _ArraySlot:
    """The ctypes values numba passes for one array: meminfo, parent, size, itemsize, data,
    then the shape and the strides in bytes."""

    def __init__(self, ty, itemsize: int):
        if ty.layout != "C":
            raise ValueError(f"launcher: array argument {ty} must be C-contiguous (layout 'C')")
        self.ndim, self.itemsize = ty.ndim, itemsize
        self.size, self.data = ctypes.c_int64(0), ctypes.c_void_p(0)
        self.shape = [ctypes.c_int64(0) for _ in range(self.ndim)]
        self.strides = [ctypes.c_int64(0) for _ in range(self.ndim)]
        self.values = [ctypes.c_void_p(0), ctypes.c_void_p(0), self.size,
                       ctypes.c_int64(self.itemsize), self.data, *self.shape, *self.strides]

    def set(self, a, index: int) -> None:
        if self.ndim == 1 and hasattr(a, "data_ptr"):  # a tensor seen flat: the common case
            if not a.is_contiguous():
                raise ValueError(f"launcher: argument {index} must be C-contiguous")
            n, rest = divmod(a.numel() * a.element_size(), self.itemsize)
            if rest:
                raise ValueError(f"launcher: argument {index} holds {n * self.itemsize + rest} "
                                 f"bytes, not whole {self.itemsize}-byte elements")
            self.data.value = a.data_ptr()
            self.size.value = self.shape[0].value = n
            self.strides[0].value = self.itemsize
            return
        ptr, shape = array_fields(a, self.ndim, self.itemsize, f"argument {index}")
        self.data.value = ptr
        size = self.itemsize
        for i in range(self.ndim - 1, -1, -1):
            self.shape[i].value, self.strides[i].value = shape[i], size
            size *= shape[i]
        self.size.value = size // self.itemsize


class _ScalarSlot:
    def __init__(self, ty):
        self.value = SCALARS[ty](0)
        self.values = [self.value]

    def set(self, v, index: int) -> None:
        self.value.value = v


class Launcher:
    """A kernel's launch for one block shape and one signature; see the module docstring."""

    def __init__(self, dispatcher, blockdim):
        self.dispatcher = dispatcher
        self.blockdim = tuple(blockdim) + (1,) * (3 - len(blockdim)) \
            if isinstance(blockdim, tuple) else (blockdim, 1, 1)
        self.kernel = None

    def _bind(self, kernel, sharedmem: int, numba_args) -> None:
        slots = []
        for i, (ty, a) in enumerate(zip(kernel.argument_types, numba_args)):
            if isinstance(ty, types.Array):  # numba's bfloat16 type has no bit width
                slots.append(_ArraySlot(ty, a.dtype.itemsize))
            elif ty in SCALARS:
                slots.append(_ScalarSlot(ty))
            else:
                raise ValueError(f"launcher: argument {i} of type {ty} is not an array or a "
                                 f"number; launch it through numba")
        self.slots = slots
        values = [v for s in slots for v in s.values]
        self._params = (ctypes.c_void_p * len(values))(*map(ctypes.addressof, values))
        self._function = ctypes.c_void_p(int(kernel._codelibrary.get_cufunc().handle))
        self.sharedmem, self.kernel = sharedmem, kernel

    def first(self, griddim, stream: int, numba_args) -> None:
        """numba's own launch of ``numba_args``, keeping the specialization it ran."""
        seen = {}
        config = self.dispatcher[griddim, self.blockdim, stream]
        config.pre_launch_callbacks.append(lambda kernel, cfg: seen.update(kernel=kernel))
        config(*numba_args)
        self._bind(seen["kernel"], config.sharedmem, numba_args)  # as coopgen reported it

    def __call__(self, griddim, *args, stream: int | None = None) -> None:
        """Launch on ``stream`` (PyTorch's current stream when None) with ``args`` as the
        kernel's arguments: arrays as tensors or other device arrays, then numbers."""
        if len(args) != len(self.slots):
            raise TypeError(f"launcher: the kernel takes {len(self.slots)} arguments, "
                            f"{len(args)} given")
        for i, (slot, a) in enumerate(zip(self.slots, args)):
            slot.set(a, i)
        self.launch(griddim, torch_stream(args[0]) if stream is None else stream)

    def launch(self, griddim, stream: int) -> None:
        """Launch with the values already in the slots."""
        gx, gy, gz = (griddim, 1, 1) if isinstance(griddim, int) else griddim
        bx, by, bz = self.blockdim
        err = driver().cuLaunchKernel(self._function, gx, gy, gz, bx, by, bz, self.sharedmem,
                                      stream, self._params, None)
        if err:
            name = ctypes.c_char_p()
            driver().cuGetErrorName(err, ctypes.byref(name))
            raise RuntimeError(f"launcher: cuLaunchKernel failed: {name.value.decode()}")
