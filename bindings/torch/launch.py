"""A kernel's launcher from PyTorch: one specialization per signature, each compiled once by the
kernel's own compiler (numba-cuda or numba-cuda-mlir, through its ordinary launch), then raw
``cuLaunchKernel`` calls on PyTorch's current stream with the arguments packed in one buffer.

Every call first tries the last signature's launch, whose guard checks the arguments (types; a
tensor's dtype, rank, contiguity and device; the block shape and dynamic shared bytes); when
they differ, it builds the signature's key from the same fields and looks it up: an argument
that differs from every signature seen selects a new specialization (a non-contiguous tensor
compiles the kernel for arrays of any layout, 'A', and passes its strides), or raises a clear
error (a CPU tensor, tensors of two devices, a number out of its type's range). Bytes are seen
as another type only where the launcher was told to (``views``)."""
from __future__ import annotations

import ctypes
import importlib
import operator
import struct
import sys

from . import arrays

#: numba type name of a scalar parameter -> its struct code (each parameter gets 8 bytes)
SCALAR_CODES = {"int8": "b", "int16": "h", "int32": "i", "int64": "q", "uint8": "B",
                "uint16": "H", "uint32": "I", "uint64": "Q", "float16": "e", "float32": "f",
                "float64": "d", "bool": "?"}
_driver = None


def driver():
    """libcuda's ``cuFuncSetAttribute`` and ``cuGetErrorName``, typed once, and its
    ``cuLaunchKernel`` untyped as ``launch_kernel`` (and ``cuLaunchKernelEx`` as
    ``launch_kernel_ex``): a typed call of 11 arguments costs twice the
    host time. Its callers pass pointers as ``c_void_p`` and dimensions as ints (< 2**31)."""
    global _driver
    if _driver is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.launch_kernel = lib["cuLaunchKernel"]  # a second function object: no argtypes
        lib.launch_kernel.restype = ctypes.c_int
        lib.launch_kernel_ex = lib["cuLaunchKernelEx"]  # launches with a cluster shape
        lib.launch_kernel_ex.restype = ctypes.c_int
        _driver = lib
    return _driver


class StreamPointers(dict):
    """raw stream handle -> its ``c_void_p``, made once (a process uses a few streams)."""

    def __missing__(self, stream: int):
        self[stream] = pointer = ctypes.c_void_p(stream)
        return pointer


STREAM_POINTERS = StreamPointers()


def check(err: int, what: str) -> None:
    if err:
        name = ctypes.c_char_p()
        driver().cuGetErrorName(err, ctypes.byref(name))
        raise RuntimeError(f"coopgen.torch: {what} failed: "
                           f"{(name.value or b'?').decode()}")


def current_stream(device: int) -> int:
    """PyTorch's current stream on ``device`` (-1: the current device) as a raw handle (0, the
    legacy default stream, when PyTorch is not imported)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return 0
    return torch._C._cuda_getCurrentRawStream(device if device >= 0 else
                                              torch.cuda.current_device())


def stream_getter():
    """``device -> PyTorch's current raw stream there`` (the function Inductor's launchers
    call), or ``device -> 0`` where PyTorch is not imported."""
    torch = sys.modules.get("torch")
    return (lambda device: 0) if torch is None else torch._C._cuda_getCurrentRawStream


def stream_handle(stream) -> int:
    """A raw stream from an int, a torch.cuda.Stream, a numba or CuPy stream."""
    for attr in ("cuda_stream", "handle", "ptr"):
        if hasattr(stream, attr):
            value = getattr(stream, attr)
            return int(getattr(value, "value", value) or 0)
    return int(stream)


def dim3(d, what: str = "a grid or block") -> tuple:
    """A grid, block or cluster shape (``what``) as 3 Python ints (numpy's ints accepted)."""
    try:
        dims = (operator.index(d),) if not isinstance(d, tuple) else tuple(map(operator.index, d))
    except TypeError:
        dims = ()
    if not 1 <= len(dims) <= 3 or any(n < 1 for n in dims):
        raise ValueError(f"coopgen.torch: {what} is 1 to 3 positive ints, not {d!r}")
    return dims + (1,) * (3 - len(dims))


#: CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: a ``CUlaunchAttribute`` (id, 4 bytes of padding, a
#: 64-byte value whose first 12 bytes are the cluster's x, y, z)
CLUSTER_DIMENSION = 4
LAUNCH_ATTRIBUTE = struct.Struct("<i4x3I52x")
#: ``CUlaunchConfig``'s grid, block, dynamic shared bytes and stream, the fields a launch sets;
#: its attribute pointer and count follow (``LAUNCH_ATTRIBUTES``)
LAUNCH_CONFIG = struct.Struct("<7I4xQ")
LAUNCH_ATTRIBUTES = struct.Struct("<QI4x")


class _Compiled(Exception):
    """Ends a numba-cuda launch after it compiled and loaded the kernel: a launcher with a
    cluster shape launches it itself (numba's launch has no cluster shape)."""


class NumbaCuda:
    """numba-cuda: its launch compiles and loads; a pre-launch callback keeps the kernel."""
    abi = "numba"

    def __init__(self):
        self.cuda = importlib.import_module("numba.cuda")

    def first_launch(self, kernel, grid, block, stream, sharedmem, args, launch=True):
        """(function handle, dynamic shared bytes, argument types) of the kernel for ``args``,
        compiled and loaded by numba's launch; ``launch=False`` stops that launch after the
        last pre-launch callback (coopgen's raises the function's shared-memory limit)."""
        seen = {}
        config = kernel[grid, block, self.cuda.external_stream(stream) if stream else 0,
                        sharedmem]

        def stop(k, cfg):
            raise _Compiled

        def keep(k, cfg):
            seen.update(kernel=k)
            if not launch:  # after every other callback, coopgen's among them
                cfg.pre_launch_callbacks.append(stop)

        config.pre_launch_callbacks.append(keep)
        try:
            config(*args)
        except _Compiled:
            pass
        k = seen["kernel"]
        # coopgen's own callback has raised the function's limit and reported the total
        return int(k._codelibrary.get_cufunc().handle), config.sharedmem, k.argument_types


class NumbaCudaMlir:
    """numba-cuda-mlir: its launch compiles (per launch configuration where the kernel asks
    for one, as coopgen's kernels do); the compile result gives the cubin's function."""
    abi = "memref"
    DYNAMIC_LIMIT = 48 * 1024  # bytes a launch gets without raising the function's attribute

    def __init__(self):
        self.cuda = importlib.import_module("numba_cuda_mlir.cuda")
        self.typeof = importlib.import_module("numba_cuda_mlir.numba_cuda.typing.typeof")

    def first_launch(self, kernel, grid, block, stream, sharedmem, args, launch=True):
        # launch=False (a cluster shape) is refused by the Launcher: the launch compiles
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
    """One signature's compiled function and its launch: a function made for the signature
    that reads each argument's fields, packs them into one buffer (8 bytes a parameter) and
    calls ``cuLaunchKernel``, in straight-line code (a loop over writers costs twice as much
    host time). ``sources``: per argument, ("tensor", itemsize, ndim), ("view", itemsize,
    source itemsize), ("fields", writer) or ("scalar",)."""

    def __init__(self, function: int, sharedmem: int, device: int, abi: str, sources, codes,
                 cluster: tuple | None = None):
        self.function, self.sharedmem, self.device = function, sharedmem, device
        self.cluster = cluster
        if cluster is not None:  # cuLaunchKernelEx's CUlaunchConfig and its one attribute
            self.attribute = ctypes.create_string_buffer(
                LAUNCH_ATTRIBUTE.pack(CLUSTER_DIMENSION, *cluster))
            self.config = ctypes.create_string_buffer(LAUNCH_CONFIG.size +
                                                      LAUNCH_ATTRIBUTES.size)
            LAUNCH_ATTRIBUTES.pack_into(self.config, LAUNCH_CONFIG.size,
                                        ctypes.addressof(self.attribute), 1)
        self.struct = struct.Struct("<" + "".join(c + "x" * (8 - struct.calcsize(c))
                                                  for c in codes))
        self.buffer = ctypes.create_string_buffer(max(self.struct.size, 8))
        base = ctypes.addressof(self.buffer)
        self.params = (ctypes.c_void_p * len(codes))(*(base + 8 * i for i in range(len(codes))))
        self.launch = self._generate(abi, sources)

    def _generate(self, abi: str, sources):
        lines, values, scope, aligned = [], [], {}, []
        for i, (kind, *info) in enumerate(sources):
            a = f"a{i}"
            if kind == "tensor":
                size, ndim = info
                lines.append(f"p{i} = {a}.data_ptr(); s{i} = {a}.shape; t{i} = {a}.stride()")
                shape = [f"s{i}[{d}]" for d in range(ndim)]
                strides = [f"t{i}[{d}]" + (f" * {size}" if abi == "numba" else "")
                           for d in range(ndim)]
                values += (["0", "0", f"{a}.numel()", str(size), f"p{i}"] if abi == "numba"
                           else [f"p{i}", f"p{i}", "0"]) + shape + strides
            elif kind == "view":
                size, source = info
                lines += [f"n{i}, r{i} = divmod({a}.numel() * {source}, {size})",
                          f"if r{i}: not_whole({i}, {a}.numel() * {source}, {size})",
                          f"p{i} = {a}.data_ptr()"]
                if size > source:  # wider elements: a misaligned start would fault
                    aligned.append((i, size))
                values += ["0", "0", f"n{i}", str(size), f"p{i}", f"n{i}", str(size)] \
                    if abi == "numba" else [f"p{i}", f"p{i}", "0", f"n{i}", "1"]
            elif kind == "fields":
                scope[f"w{i}"] = info[0]
                values.append(f"*w{i}({a})")
            else:
                values.append(a)
        if aligned:  # one test for all the views: the rare failure finds its argument
            lines += [f"if {' | '.join(f'p{i} & {size - 1}' for i, size in aligned)}:",
                      f"    misaligned(({', '.join(f'p{i}' for i, _ in aligned)},), "
                      f"{[(i, size) for i, size in aligned]})"]
        unpack = [f"({''.join(f'a{i}, ' for i in range(len(sources)))}) = args"]
        code = "\n    ".join(["def launch(grid, block, stream, args):"] + unpack + lines + [
            f"values = ({''.join(v + ', ' for v in values)})",
            "try:", "    pack_into(buffer, 0, *values)",
            "except struct_error as e:", "    not_fit(e)"] + ([
            "err = launch_kernel(function, grid[0], grid[1], grid[2], block[0], block[1], "
            "block[2], sharedmem, stream_pointers[stream], params, None)",
            "if err:", "    check(err, 'cuLaunchKernel')"] if self.cluster is None else [
            "pack_config(config, 0, *grid, *block, sharedmem, stream)",
            "err = launch_kernel_ex(config_pointer, function, params, None)",
            "if err:", "    check(err, f'cuLaunchKernelEx with cluster {cluster} of grid "
            "{grid}')"]))
        scope.update(pack_into=self.struct.pack_into, buffer=self.buffer, check=check,
                     struct_error=(struct.error, OverflowError), not_fit=_not_fit,
                     not_whole=_not_whole, misaligned=_misaligned,
                     launch_kernel=driver().launch_kernel,
                     function=ctypes.c_void_p(self.function), sharedmem=self.sharedmem,
                     params=self.params, stream_pointers=STREAM_POINTERS)
        if self.cluster is not None:
            scope.update(pack_config=LAUNCH_CONFIG.pack_into, config=self.config,
                         config_pointer=ctypes.c_void_p(ctypes.addressof(self.config)),
                         launch_kernel_ex=driver().launch_kernel_ex, cluster=self.cluster)
        exec(compile(code, "<coopgen.torch launch>", "exec"), scope)  # noqa: S102
        return scope["launch"]

    def guarded(self, block, requested: int, checks, names: dict, stream_of):
        """``run(grid, block, stream, sharedmem, args) -> bool``: this launch if the arguments
        pass ``checks`` (expressions of a0, a1, ... and ``names``), else False; a launcher
        tries its last signature's first, before building a key."""
        unpack = "".join(f"a{i}, " for i in range(len(checks)))
        code = "\n    ".join([
            "def run(grid, block_, stream, requested_, args):",
            f"if len(args) != {len(checks)} or requested_ != requested or block_ != block:",
            "    return False",
            f"({unpack}) = args",
            f"if not ({' and '.join(checks) or 'True'}):", "    return False",
            "launch(grid, block, stream_of(device) if stream is None else stream, args)",
            "return True"])
        scope = dict(names, block=block, requested=requested, launch=self.launch,
                     stream_of=stream_of, device=self.device)
        exec(compile(code, "<coopgen.torch guarded launch>", "exec"), scope)  # noqa: S102
        return scope["run"]


def _not_fit(e):
    raise ValueError(f"coopgen.torch: an argument does not fit its parameter: {e}") from None


def _misaligned(pointers, views):
    for p, (i, size) in zip(pointers, views):
        if p % size:
            arrays.misaligned(f"argument {i}", p, size)


def _not_whole(i: int, nbytes: int, size: int):
    raise ValueError(f"coopgen.torch: argument {i} holds {nbytes} bytes, not whole {size}-byte "
                     f"elements")


def fields_writer(abi, itemsize: int, view=None, name=""):
    """The parameters of an array that is not a tensor (its ``Fields``)."""
    params = arrays.ABI[abi]

    def write(f):
        if view is not None:
            f = arrays.words(f, view, name)
        return params(f.ptr, f.shape, f.strides, itemsize)
    return write
