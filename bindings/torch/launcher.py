"""``coopgen.torch.launcher(kernel)``: launch a numba-cuda or numba-cuda-mlir kernel on tensors
and other device arrays with a few µs of host time (``launch`` says how)."""
from __future__ import annotations

import numpy as np

from . import arrays, launch

TENSOR, SCALAR, ARRAY = 0, 1, 2


class Launcher:
    """Launches of one kernel, one specialization per signature.

        launch = coopgen.torch.launcher(kernel)
        launch[grid, block](x, y, n, 0.5)              # PyTorch's current stream
        launch[grid, block, stream, sharedmem](x, y, n, 0.5)

    ``views``: {argument index: numpy dtype or "flat"}: that argument's bytes are seen as a
    flat C-contiguous array of that dtype (a float16 row as uint32 words; "flat": its own
    dtype, any rank seen as 1-D); only there are bytes reinterpreted.
    ``scalars``: {argument index: numpy scalar type}: a Python number there is passed as that
    type (``np.int32``), as an explicit numba signature would type it, and refused when it does
    not fit; without it numba's rule holds (int: int64, float: float64).
    ``cluster``: 1 to 3 ints, the thread-block cluster shape of every launch (sm_90 and later;
    numba-cuda kernels): the grid must be a multiple of it, and the kernel is compiled by
    numba's launch but launched only by ``cuLaunchKernelEx``."""

    def __init__(self, kernel, views: dict | None = None, scalars: dict | None = None,
                 cluster=None):
        self.kernel = kernel
        self.cluster = None if cluster is None else launch.dim3(cluster, "a cluster shape")
        self.compiler = launch.compiler_of(kernel)
        if self.cluster is not None and self.compiler.abi != "numba":
            raise ValueError("coopgen.torch: a cluster shape (cluster=) takes a numba-cuda "
                             "kernel; numba-cuda-mlir compiles a kernel on its launch, which "
                             "has no cluster shape")
        self.views = {int(i): t if t == "flat" else arrays.dtype_name(t)
                      for i, t in (views or {}).items()}
        self.scalars = {int(i): np.dtype(t).type for i, t in (scalars or {}).items()}
        self.specializations: dict = {}
        self._kinds: dict = {}
        self._last = self._spec = None  # the last signature's guarded launch and its own

    def __getitem__(self, config) -> "Configured":
        if not isinstance(config, tuple) or not 2 <= len(config) <= 4:
            raise TypeError("coopgen.torch: launch[grid, block] or launch[grid, block, "
                            "stream, sharedmem]")
        grid, block, stream, sharedmem = config + (None, 0)[len(config) - 2:]
        return Configured(self, launch.dim3(grid), launch.dim3(block),
                          None if stream is None else launch.stream_handle(stream),
                          int(sharedmem))

    def _kind(self, t) -> int:
        kind = TENSOR if arrays.is_tensor_type(t) else SCALAR \
            if issubclass(t, (int, float, bool, np.number, np.bool_)) else ARRAY
        self._kinds[t] = kind
        return kind

    def launch(self, grid, block, args, stream=None, sharedmem: int = 0) -> None:
        """Launch with ``grid`` and ``block`` (3-tuples) on ``stream`` (None: PyTorch's current
        stream on the arrays' device)."""
        last = self._last
        if last is not None and last(grid, block, stream, sharedmem, args):
            return
        kinds, key, passed = self._kinds, [block, sharedmem], None
        for i, a in enumerate(args):
            t = type(a)
            kind = kinds.get(t)
            if kind is None:
                kind = self._kind(t)
            if kind == TENSOR:  # the fields a tensor's key holds: 4 entries
                key += (a.dtype, a.dim(), a.is_contiguous(), a.get_device())
            elif kind == SCALAR:
                key.append(t)
            else:
                if passed is None:
                    passed = list(args)
                passed[i] = f = arrays.fields(a, f"argument {i}")
                key.append(f.key())
        key = tuple(key)
        spec = self.specializations.get(key)
        args = args if passed is None else passed
        if spec is None:
            self.specializations[key] = spec = self._bind(grid, block, stream, sharedmem, args)
        else:
            spec.launch(grid, block, spec.stream(spec.device) if stream is None else stream,
                        args)
        self._last, self._spec = spec.run, spec

    def guarded(self, sized=None):
        """The launch of the signature launched last, ``run(grid, block, stream, sharedmem,
        args) -> bool`` (``stream`` None: PyTorch's current one): it launches only where
        ``args`` pass that signature's checks (each tensor's dtype, rank, contiguity and
        device, each number's type) and ``block`` and ``sharedmem`` are the signature's, else
        it returns False having launched nothing (``launch`` then dispatches or raises). None
        before the first launch. A caller that launches one signature again and again keeps
        it and skips the dispatch. ``sized``: arguments of that signature; the launch takes
        the viewed tensors (``views``) to be of their sizes, reading none: for a caller that
        checks their shapes itself."""
        spec = self._spec
        if spec is None or sized is None:
            return self._last
        views = [(i, a.nbytes, source[1]) for i, (a, source) in
                 enumerate(zip(sized, spec.layout[1])) if source[0] == "view"]
        return spec.guarded(*spec.guard, sizes={i: n // size for i, n, size in views
                                                if n % size == 0})

    def _bind(self, grid, block, stream, sharedmem, args) -> launch.Specialization:
        """The signature's first launch, through the kernel's compiler; its specialization."""
        device = self._device(args)
        if stream is None:
            stream = launch.current_stream(device)
        fields = [arrays.tensor_fields(a) if self._kind(type(a)) == TENSOR else a
                  for a in args]
        for i, view in self.views.items():
            if i >= len(fields) or not isinstance(fields[i], arrays.Fields):
                raise TypeError(f"coopgen.torch: views names argument {i}, which is no array")
            fields[i] = arrays.words(fields[i], view, f"argument {i}")
        compiler = self.compiler
        numba_args = [arrays.device_array(compiler.cuda, f) if isinstance(f, arrays.Fields)
                      else self.scalars[i](f) if i in self.scalars and type(f) in (int, float)
                      else f for i, f in enumerate(fields)]
        if self.cluster is not None and any(g % c for g, c in zip(grid, self.cluster)):
            raise ValueError(f"coopgen.torch: grid {grid} is no multiple of the cluster shape "
                             f"{self.cluster}")
        function, total, argtypes = compiler.first_launch(self.kernel, grid, block, stream,
                                                          sharedmem, numba_args,
                                                          launch=self.cluster is None)
        sources, codes = [], []
        for i, (ty, f) in enumerate(zip(argtypes, fields)):
            if isinstance(f, arrays.Fields):
                size, tensor = arrays.itemsize(f.dtype), self._kind(type(args[i])) == TENSOR
                count = len(arrays.ABI[compiler.abi](0, f.shape, f.strides, size))
                sources.append(("view", size, args[i].element_size()) if tensor and
                               i in self.views else ("tensor", size, len(f.shape)) if tensor
                               else ("fields", launch.fields_writer(
                                   compiler.abi, size, self.views.get(i), f"argument {i}"),
                                   count))
                codes += "q" * count
            elif str(ty) in launch.SCALAR_CODES:
                sources.append(("scalar",))
                codes.append(launch.SCALAR_CODES[str(ty)])
            else:
                raise TypeError(f"coopgen.torch: argument {i} of type {ty} is no array or "
                                f"number; launch this kernel through its compiler")
        spec = launch.Specialization(function, total, device, compiler.abi, sources, codes,
                                     self.cluster)
        spec.stream = launch.stream_getter()
        spec.run = spec.guarded(block, sharedmem, *self._checks(args), spec.stream)
        if self.cluster is not None:  # numba's launch compiled it; this is the first launch
            spec.launch(grid, block, stream, args)
        return spec

    def _checks(self, args) -> tuple[list, dict]:
        """What a later call's arguments must be for this signature: the same types, and for
        tensors the same dtype, rank, contiguity and device (an array that is not a tensor
        takes the key's path)."""
        checks, names = [], {}
        for i, a in enumerate(args):
            names[f"T{i}"] = type(a)
            kind = self._kind(type(a))
            if kind == TENSOR:
                names[f"D{i}"] = a.dtype
                # a view sees any rank as one flat array: its rank is no part of the signature
                rank = "" if i in self.views else f"a{i}.dim() == {a.dim()} and "
                checks.append(f"type(a{i}) is T{i} and a{i}.dtype is D{i} and {rank}"
                              f"{'' if a.is_contiguous() else 'not '}a{i}.is_contiguous() "
                              f"and a{i}.get_device() == {a.get_device()}")
            else:
                checks.append(f"type(a{i}) is T{i}" if kind == SCALAR else "False")
        return checks, names

    @staticmethod
    def _device(args) -> int:
        """The device of the arrays: one, a GPU, the current one."""
        devices = {f"argument {i}": a.get_device() if hasattr(a, "get_device") else a.device
                   for i, a in enumerate(args) if hasattr(a, "get_device")
                   or isinstance(a, arrays.Fields)}
        cpu = [n for n, d in devices.items() if d == -1]
        if cpu:
            raise ValueError(f"coopgen.torch: {', '.join(cpu)} {'is' if len(cpu) == 1 else 'are'}"
                             f" in host memory; the kernel runs on the GPU")
        known = sorted({d for d in devices.values() if d != arrays.UNKNOWN_DEVICE})
        if len(known) > 1:
            raise ValueError(f"coopgen.torch: the arrays are on devices {known}; a launch "
                             f"takes arrays of one device")
        current = _current_device()
        if known and current is not None and known[0] != current:
            raise ValueError(f"coopgen.torch: the arrays are on cuda:{known[0]}, the current "
                             f"device is cuda:{current}; launch under "
                             f"torch.cuda.device({known[0]})")
        return known[0] if known else (current if current is not None else 0)


def _current_device():
    import sys
    torch = sys.modules.get("torch")
    return torch.cuda.current_device() if torch is not None else None


class Configured:
    """``launch[grid, block, ...]``: calling it launches."""
    __slots__ = ("launcher", "grid", "block", "stream", "sharedmem")

    def __init__(self, launcher, grid, block, stream, sharedmem):
        self.launcher, self.grid, self.block = launcher, grid, block
        self.stream, self.sharedmem = stream, sharedmem

    def __call__(self, *args) -> None:
        self.launcher.launch(self.grid, self.block, args, self.stream, self.sharedmem)
