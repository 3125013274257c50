"""A kernel's launcher from PyTorch: one specialization per signature, each compiled once by the
kernel's own compiler (numba-cuda or numba-cuda-mlir, through its ordinary launch), then raw
``cuLaunchKernel`` calls on PyTorch's current stream with the arguments packed in one buffer.

Every call builds the signature's key from the arguments (a tensor's dtype, rank, contiguity and
device; a number's type; the block shape and dynamic shared bytes) and looks it up: an argument
that differs from every signature seen selects a new specialization (a non-contiguous tensor
compiles the kernel for arrays of any layout, 'A', and passes its strides), or raises a clear
error (a CPU tensor, tensors of two devices, a number out of its type's range). Bytes are seen
as another type only where the launcher was told to (``views``)."""
from __future__ import annotations

import ctypes
import importlib
import struct
import sys

from . import arrays

#: numba type name of a scalar parameter -> its struct code (each parameter gets 8 bytes)
SCALAR_CODES = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B",
                "uint16": "H", "uint32": "I", "uint64": "Q", "float16": "e", "float32": "f",
                "float64": "d", "bool": "?"}
SCALARS = (int, float, bool)
_driver = None


def driver():
    """libcuda's ``cuLaunchKernel``, ``cuFuncSetAttribute`` and ``cuGetErrorName``, typed once."""
    global _driver
    if _driver is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuLaunchKernel.restype = ctypes.c_int
        lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + \
            [ctypes.c_void_p] * 3
        lib.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        _driver = lib
    return _driver


def check(err: int, what: str) -> None:
    if err:
        name = ctypes.c_char_p()
        driver().cuGetErrorName(err, ctypes.byref(name))
        raise RuntimeError(f"coopgen.torch: {what} failed: "
                           f"{(name.value or b'?').decode()}")


def current_stream(device: int) -> int:
    """PyTorch's current stream on ``device`` as a raw handle (0, the legacy default stream,
    when PyTorch is not imported)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    return torch._C._cuda_getCurrentRawStream(max(device, 0) if device >= 0 else
                                              torch.cuda.current_device())


def stream_handle(stream) -> int:
    """A raw stream from an int, a torch.cuda.Stream, a numba or CuPy stream."""
    for attr in ("cuda_stream", "handle", "ptr"):
        if hasattr(stream, attr):
            value = getattr(stream, attr)
            return int(getattr(value, "value", value) or 0)
    return int(stream)


def dim3(d) -> tuple:
    d = (d,) if isinstance(d, int) else tuple(d)
    if not 1 <= len(d) <= 3 or any(not isinstance(n, int) or n < 1 for n in d):
        raise ValueError(f"coopgen.torch: a grid or block is 1 to 3 positive ints, not {d!r}")
    return d + (1,) * (3 - len(d))


class NumbaCuda:
    """numba-cuda: its launch compiles and loads; a pre-launch callback keeps the kernel."""
    abi = "numba"
    package = "numba"

    def __init__(self):
        self.cuda = importlib.import_module("numba.cuda")

    def first_launch(self, kernel, grid, block, stream, sharedmem, args):
        seen = {}
        config = kernel[grid, block, self.cuda.external_stream(stream) if stream else 0,
                        sharedmem]
        config.pre_launch_callbacks.append(lambda k, cfg: seen.update(kernel=k))
        config(*args)
        k = seen["kernel"]
        # coopgen's own callback has raised the function's limit and reported the total
        return int(k._codelibrary.get_cufunc().handle), config.sharedmem, k.argument_types


class NumbaCudaMlir:
    """numba-cuda-mlir: its launch compiles (per launch configuration where the kernel asks
    for one, as coopgen's kernels do); the compile result gives the cubin's function."""
    abi = "memref"
    package = "numba_cuda_mlir"
    DYNAMIC_LIMIT = 48 * 1024  # bytes a launch gets without raising the function's attribute

    def __init__(self):
        self.cuda = importlib.import_module("numba_cuda_mlir.cuda")
        self.typeof = importlib.import_module("numba_cuda_mlir.numba_cuda.typing.typeof")

    def first_launch(self, kernel, grid, block, stream, sharedmem, args):
        kernel[grid, block, self.cuda.external_stream(stream) if stream else 0,
               sharedmem](*args)
        argtypes = tuple(self.typeof.typeof(a, self.typeof.Purpose.argument) for a in args)
        result = self._result(kernel, argtypes, block)
        handle = int(result._codelibrary.get_cufunc().handle)
        total = max(sharedmem, result.metadata.get("required_dynamic_shared_memory", 0))
        if total > self.DYNAMIC_LIMIT:
            attribute = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check(driver().cuFuncSetAttribute(handle, attribute, total), "cuFuncSetAttribute")
        return handle, total, argtypes

    @staticmethod
    def _result(kernel, argtypes, block):
        blocks = {tuple(block[:n]) for n in (1, 2, 3)}
        for (sig, key), result in kernel.launch_config_overloads.items():
            if tuple(sig) == argtypes and tuple(dict(key)["block"]) in blocks:
                return result
        result = kernel.overloads.get(argtypes)
        if result is None:
            raise RuntimeError(f"coopgen.torch: numba-cuda-mlir launched {kernel} but kept no "
                               f"compile result for {argtypes}")
        return result


COMPILERS = {"numba": NumbaCuda, "numba_cuda_mlir": NumbaCudaMlir}
_compilers: dict = {}


def compiler_of(kernel):
    package = type(kernel).__module__.split(".")[0]
    if package not in COMPILERS or not hasattr(kernel, "__getitem__"):
        raise TypeError(f"coopgen.torch: {kernel!r} is no kernel of numba-cuda or "
                        f"numba-cuda-mlir (a @cuda.jit function)")
    if package not in _compilers:
        _compilers[package] = COMPILERS[package]()
    return _compilers[package]


class Specialization:
    """One signature's compiled function and its packed parameter buffer."""

    def __init__(self, function: int, sharedmem: int, device: int, writers, codes):
        self.function, self.sharedmem, self.device = function, sharedmem, device
        self.writers = writers
        self.struct = struct.Struct("<" + "".join(c + "x" * (8 - struct.calcsize(c))
                                                  for c in codes))
        self.buffer = ctypes.create_string_buffer(max(self.struct.size, 8))
        base = ctypes.addressof(self.buffer)
        self.params = (ctypes.c_void_p * len(codes))(*(base + 8 * i for i in range(len(codes))))

    def launch(self, grid, block, stream, args) -> None:
        values = []
        for write, a in zip(self.writers, args):
            values += write(a)
        try:
            self.struct.pack_into(self.buffer, 0, *values)
        except struct.error as e:  # a number out of its parameter's range
            raise ValueError(f"coopgen.torch: an argument does not fit its parameter: "
                             f"{e}") from None
        check(driver().cuLaunchKernel(self.function, *grid, *block, self.sharedmem, stream,
                                      self.params, None), "cuLaunchKernel")


def tensor_writer(abi, itemsize: int):
    params = arrays.ABI[abi]
    return lambda a: params(a.data_ptr(), a.shape, a.stride(), itemsize)


def tensor_view_writer(abi, itemsize: int, source_size: int, name: str):
    """A C-contiguous tensor (its key says so) seen flat in ``itemsize``-byte elements."""
    params = arrays.ABI[abi]

    def write(a):
        n, rest = divmod(a.numel() * source_size, itemsize)
        if rest:
            raise ValueError(f"coopgen.torch: {name} holds {a.numel() * source_size} bytes, "
                             f"not whole {itemsize}-byte elements")
        return params(a.data_ptr(), (n,), (1,), itemsize)
    return write


def fields_writer(abi, itemsize: int, view=None, name=""):
    params = arrays.ABI[abi]

    def write(a):
        f = a if isinstance(a, arrays.Fields) else arrays.tensor_fields(a)
        if view is not None:
            f = arrays.words(f, view, name)
        return params(f.ptr, f.shape, f.strides, itemsize)
    return write


def scalar_writer(a):
    return (a,)
