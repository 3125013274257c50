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

import array
import ctypes
import functools
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
    ``cuLaunchKernelEx`` untyped as ``launch_kernel_ex``: every launch passes it four objects
    made once (its ``CUlaunchConfig``, the function, the parameters, None), which costs less
    host time than ``cuLaunchKernel``'s eleven arguments converted on each call."""
    global _driver
    if _driver is None:
        lib = ctypes.CDLL("libcuda.so.1")
        lib.cuFuncSetAttribute.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
        lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
        lib.launch_kernel_ex = lib["cuLaunchKernelEx"]  # a second function object: no argtypes
        lib.launch_kernel_ex.restype = ctypes.c_int
        _driver = lib
    return _driver


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
    if not 1 <= len(dims) <= 3 or any(not 1 <= n < 1 << 32 for n in dims):
        raise ValueError(f"coopgen.torch: {what} is 1 to 3 positive ints below 2**32, not "
                         f"{d!r}")
    return dims + (1,) * (3 - len(dims))


#: CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: a ``CUlaunchAttribute`` (id, 4 bytes of padding, a
#: 64-byte value whose first 12 bytes are the cluster's x, y, z)
CLUSTER_DIMENSION = 4
LAUNCH_ATTRIBUTE = struct.Struct("<i4x3I52x")
#: ``CUlaunchConfig``'s grid, block, dynamic shared bytes and stream, the fields a launch sets;
#: its attribute pointer and count follow (``LAUNCH_ATTRIBUTES``)
LAUNCH_CONFIG = struct.Struct("<7I4xQ")
LAUNCH_ATTRIBUTES = struct.Struct("<QI4x")
#: what writing a value that does not fit its parameter raises (a memoryview's item, a struct)
NOT_FIT = (ValueError, TypeError, OverflowError, struct.error)


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
    kept: list = []  # the dispatchers made by fresh()

    def __init__(self):
        self.cuda = importlib.import_module("numba_cuda_mlir.cuda")
        self.typeof = importlib.import_module("numba_cuda_mlir.numba_cuda.typing.typeof")

    def first_launch(self, kernel, grid, block, stream, sharedmem, args, launch=True):
        # launch=False (a cluster shape) is refused by the Launcher: the launch compiles
        kernel = self.fresh(kernel)
        kernel[grid, block, self.cuda.external_stream(stream) if stream else 0,
               sharedmem](*args)
        argtypes = tuple(self.typeof.typeof(a, self.typeof.Purpose.argument) for a in args)
        sig, result = self._result(kernel, argtypes, block)
        handle = int(result._codelibrary.get_cufunc().handle)
        total = max(sharedmem, result.metadata.get("required_dynamic_shared_memory", 0))
        if total > self.DYNAMIC_LIMIT:
            attribute = 8  # CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
            check(driver().cuFuncSetAttribute(handle, attribute, total), "cuFuncSetAttribute")
        return handle, total, sig

    @staticmethod
    def fresh(kernel):
        """``kernel``, or where it compiled other signatures a new dispatcher of its function and
        options: numba-cuda-mlir 0.6's launch of a float32 scalar on a dispatcher holding a
        float64 one ran a kernel that wrote zeros (H200); one of its own ran right."""
        if not (kernel.overloads or kernel.launch_config_overloads) or \
                not getattr(kernel, "_can_compile", True):  # (signatures given: it coerces)
            return kernel
        clone = type(kernel)(kernel.py_func, targetoptions=dict(kernel.targetoptions))
        if kernel.targetoptions.get("cache"):
            clone.enable_caching()
        NumbaCudaMlir.kept.append(clone)  # its module stays loaded: launches hold its function
        return clone

    @staticmethod
    def _result(kernel, argtypes, block) -> tuple:
        """(signature, compile result) the launch used: its own, or one numba-cuda-mlir reuses
        (arrays of another layout, whose strides a memref passes; integers of another width)."""
        blocks = {tuple(block[:n]) for n in (1, 2, 3)}
        reuse = getattr(kernel, "_can_reuse_overload", lambda s, r: s == r)
        results = [(tuple(sig), r) for (sig, key), r in kernel.launch_config_overloads.items()
                   if tuple(dict(key)["block"]) in blocks] + list(kernel.overloads.items())
        for exact in (True, False):
            for sig, result in results:
                if sig == argtypes if exact else all(map(reuse, sig, argtypes)):
                    return sig, result
        raise RuntimeError(f"coopgen.torch: numba-cuda-mlir launched {kernel} but kept no "
                           f"compile result for {argtypes}")


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
    that reads each argument's fields, writes those that change into the parameter buffer (8
    bytes a parameter; the constant ones, an array's item size, are written once) and calls
    ``cuLaunchKernelEx``, in straight-line code (a loop over writers costs twice as much host
    time). ``sources``: per argument, ("tensor", itemsize, ndim), ("view", itemsize, source
    itemsize), ("fields", writer, parameters) or ("scalar",); ``codes``: each parameter's struct
    code."""

    def __init__(self, function: int, sharedmem: int, device: int, abi: str, sources, codes,
                 cluster: tuple | None = None):
        self.function, self.sharedmem, self.device = function, sharedmem, device
        self.cluster = cluster
        #: the parameters' layout, to read them back
        self.struct = struct.Struct("<" + "".join(c + "x" * (8 - struct.calcsize(c))
                                                  for c in codes))
        self.buffer = bytearray(max(self.struct.size, 8))
        memory = (ctypes.c_char * len(self.buffer)).from_buffer(self.buffer)
        base = ctypes.addressof(memory)
        self.params = (ctypes.c_void_p * len(codes))(*(base + 8 * i for i in range(len(codes))))
        self._memory = memory  # (keeps the buffer's ctypes view, whose address params hold)
        # cuLaunchKernelEx's CUlaunchConfig, the cluster shape its one attribute where given
        self.attribute = ctypes.create_string_buffer(
            LAUNCH_ATTRIBUTE.pack(CLUSTER_DIMENSION, *(cluster or (1, 1, 1))))
        self.config = ctypes.create_string_buffer(LAUNCH_CONFIG.size + LAUNCH_ATTRIBUTES.size)
        LAUNCH_ATTRIBUTES.pack_into(self.config, LAUNCH_CONFIG.size,
                                    ctypes.addressof(self.attribute), cluster is not None)
        self.layout = abi, sources, codes
        self.held = [None] * (len(sources) + 1)  # what the buffer holds: sizes, then numbers
        self._writes, self._scope = self._parameters(*self.layout)
        self._scope.update(
            pack_config=LAUNCH_CONFIG.pack_into, config=self.config, sharedmem=sharedmem,
            config_pointer=ctypes.c_void_p(ctypes.addressof(self.config)), params=self.params,
            launch_kernel_ex=driver().launch_kernel_ex, function=ctypes.c_void_p(function),
            failed=self._failed,
            last=[None, None, None])  # the config's grid, block and stream, for both launches
        self.launch = self._define(["def launch(grid, block, stream, args):",
                                    self._unpack(len(sources))] + self._writes, "launch")

    @staticmethod
    def _unpack(count: int) -> str:
        return f"({''.join(f'a{i}, ' for i in range(count))}) = args"

    def _parameters(self, abi: str, sources, codes, sizes=None) -> tuple[list, dict]:
        """The launch's lines that read the arguments and write the parameters that change
        into ``buffer`` (the constant ones are written here), and the names they use.
        ``sizes``: {argument: its elements}, views whose size the caller has checked."""
        words = memoryview(self.buffer).cast("q")  # an array's parameters: 8-byte ints
        scope = {"words": words, **{f"pack_{c}": struct.Struct("<" + c).pack_into
                                    for c in set(codes)}}  # numbers: struct checks their range
        lines, writes, aligned, slot, sized = [], [], [], 0, []
        for i, (kind, *info) in enumerate(sources):
            a = f"a{i}"
            if kind == "tensor":
                size, ndim = info
                lines.append(f"p{i} = {a}.data_ptr(); s{i} = {a}.shape; t{i} = {a}.stride()")
                shape = [f"s{i}[{d}]" for d in range(ndim)]
                strides = [f"t{i}[{d}]" + (f" * {size}" if abi == "numba" else "")
                           for d in range(ndim)]
                values = ([0, 0, f"{a}.numel()", size, f"p{i}"] if abi == "numba"
                          else [f"p{i}", f"p{i}", 0]) + shape + strides
            elif kind == "view":
                size, source = info
                n = f"={sizes[i]}" if i in (sizes or {}) else f"n{i}"  # "=": a size known
                lines += [f"n{i} = {a}.nbytes",
                          f"if n{i} % {size}: not_whole({i}, n{i}, {size})",
                          f"n{i} //= {size}"] * (n[0] != "=") + [f"p{i} = {a}.data_ptr()"]
                if size > source:  # wider elements: a misaligned start would fault
                    aligned.append((i, size))
                values = [0, 0, n, size, f"p{i}", n, size] if abi == "numba" \
                    else [f"p{i}", f"p{i}", 0, n, 1]
            elif kind == "fields":
                scope[f"w{i}"], count = info  # its errors (MisalignedView) raised as they are
                lines.append(f"f{i} = array_q(w{i}({a}))")
                writes.append(f"words[{slot}:{slot + count}] = f{i}")
                slot += count
                continue
            else:  # a number: written where it is not the object the buffer holds
                writes.append(f"if {a} is not held[{i + 1}]: "
                              f"pack_{codes[slot]}(buffer, {8 * slot}, {a}); held[{i + 1}] = {a}")
                slot += 1
                continue
            for value in values:  # an array's: constants written once, the others per launch
                if isinstance(value, int):
                    words[slot] = value
                elif value[0] == "=":
                    sized.append(f"words[{slot}] = {value[1:]}")
                else:
                    writes.append(f"words[{slot}] = {value}")
                slot += 1
        # held[0]: the sizes the buffer holds, where a launch that knows them wrote them
        if sized:
            scope["sizes"] = sizes = object()
            writes.insert(0, f"if held[0] is not sizes: {'; '.join(sized)}; held[0] = sizes")
        elif any(kind == "view" for kind, *_ in sources):
            writes.insert(0, "held[0] = None")
        if aligned:  # one test for all the views: the rare failure finds its argument
            lines += [f"if {' | '.join(f'p{i} & {size - 1}' for i, size in aligned)}:",
                      f"    misaligned(({', '.join(f'p{i}' for i, _ in aligned)},), "
                      f"{[(i, size) for i, size in aligned]})"]
        scope.update(buffer=self.buffer, held=self.held, not_fit=_not_fit, not_whole=_not_whole,
                     misaligned=_misaligned, not_fit_errors=NOT_FIT,
                     array_q=functools.partial(array.array, "q"))
        return lines + ["try:"] + [f"    {w}" for w in writes or ["pass"]] + [
            "except not_fit_errors as e:", "    not_fit(e)"], scope

    def _define(self, head: list, name: str, names: dict | None = None):
        """The function ``name``: ``head`` (its def line and the lines before the launch: the
        parameters' writes last), then the launch (the config rewritten only where the grid,
        block or stream differs from the last launch's)."""
        code = "\n    ".join(head + [
            "if grid is not last[0] or block is not last[1] or stream != last[2]:",
            "    pack_config(config, 0, *grid, *block, sharedmem, stream)",
            "    last[:] = grid, block, stream",
            "err = launch_kernel_ex(config_pointer, function, params, None)",
            "if err:", "    failed(err, grid)"] + (["return True"] if name == "run" else []))
        scope = dict(self._scope, **(names or {}))
        exec(compile(code, f"<coopgen.torch {name}>", "exec"), scope)  # noqa: S102
        return scope[name]

    def _failed(self, err: int, grid) -> None:
        check(err, "cuLaunchKernelEx" if self.cluster is None else
              f"cuLaunchKernelEx with cluster {self.cluster} of grid {grid}")

    def guarded(self, block, requested: int, checks, names: dict, stream_of, sizes=None):
        """``run(grid, block, stream, sharedmem, args) -> bool``: this launch if the arguments
        pass ``checks`` (expressions of a0, a1, ... and ``names``), else False; a launcher
        tries its last signature's first, before building a key. ``sizes``: as
        ``_parameters``'."""
        self.guard = block, requested, checks, names, stream_of
        writes, scope = (self._writes, {}) if sizes is None else \
            self._parameters(*self.layout, sizes)
        return self._define([
            "def run(grid, block_, stream, requested_, args):",
            f"if len(args) != {len(checks)} or requested_ != requested or block_ != block:",
            "    return False",
            self._unpack(len(checks)),
            f"if not ({' and '.join(checks) or 'True'}):", "    return False",
            "if stream is None:", "    stream = stream_of(device)"] + writes, "run",
            dict(names, **scope, block=block, requested=requested, stream_of=stream_of,
                 device=self.device))


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
