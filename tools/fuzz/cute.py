"""The differential suite's kernels in CuTe DSL (``python -m tools.fuzz --backend cute``).

The configurations, their data and the numpy references are the suite's own; only the kernel's
spelling and its launch are CuTe DSL's: register fragments (``cute.make_rmem_tensor``) for
coopgen's local arrays, shared tensors from ``SmemAllocator``, ``cute.local_tile`` views for
iterators, plain Python functions (traced into the kernel's module) for the Python operators.
Every array of a batch lives in one device buffer, each at a 16-byte aligned offset, so a
kernel takes one pointer and a launch copies one buffer each way.

What coopgen.cute does not bind is not drawn, and ``--list`` says why: stateful operators
(prefix callbacks), decomposers and counts callbacks, complex and record items, and Python
operators on half-precision items (passed by pointer; CUB's built-in operators on them are
drawn). cuda.coop's group-first calls are drawn as on numba. cutlass is imported only when a
batch is built.
"""
from __future__ import annotations

import math
import os

import numpy as np

from . import families, kernels
from .space import ALL_DTYPES, TILES

#: Item dtypes drawn: C numbers, and half precision (bfloat16 where ml_dtypes is installed)
#: with CUB's built-in operators (coopgen.cute traces Python operators on C numbers only).
DTYPES = ALL_DTYPES + families.HALVES
#: Parameter roles and C++ types of the overloads coopgen.cute does not bind (docs/cute.md).
UNBOUND_ROLES = {"prefix_callback": "prefix callbacks (stateful operators)"}
UNBOUND_BASES = {"DecomposerT": "decomposers", "CountsCallback": "counts callbacks"}
#: The architecture of a compile-only run without a GPU (CUTE_DSL_ARCH, else this).
COMPILE_ARCH = "sm_90a"
ALIGN = 16  # bytes: each array's offset in the batch's buffer

PRELUDE = '''\
import cutlass
import cutlass.cute as cute
from coopgen import TempStorage, block, coop, thread, warp

TS_EXCLUSIVE = TempStorage("exclusive")  # temp_storage= of calls drawn with storage "exclusive"
TS_SHARED = TempStorage("shared")  # ... and "shared" (the kernel syncs before each use)


def view(buf, offset, dtype, n):  # n items of dtype at a byte offset of the batch's buffer
    # (cute.recast_tensor types it dtype: a tensor made from a pointer has the pointer's MLIR
    # element type, which has no sign, so unsigned items would read as signed)
    return cute.recast_tensor(cute.make_tensor(cute.recast_ptr(buf.iterator + offset, dtype=dtype),
                                               cute.make_layout(n)), dtype)


def py_add(a, b):
    return a + b


def py_max(a, b):
    return cutlass.select_(a > b, a, b)


def py_sub(a, b):
    return a - b


def py_less(a, b):
    return a < b


def py_greater(a, b):
    return a > b


def py_ne(a, b):
    return a != b  # unordered for floats: NaN != NaN, as numpy's
'''


def skip_reason(cls, method) -> str:
    """Why coopgen.cute cannot make this call ("" when it can)."""
    for p in method.params:
        if p.role in UNBOUND_ROLES:
            return f"coopgen.cute binds no {UNBOUND_ROLES[p.role]} yet (docs/cute.md, Limits)"
        base = p.base.split("[")[0].strip()
        if base in UNBOUND_BASES:
            return f"coopgen.cute binds no {UNBOUND_BASES[base]} yet (docs/cute.md, Limits)"
    return ""


def refused(cfg) -> bool:
    """A Python operator on half-precision items: coopgen.cute refuses it by name."""
    return cfg.op.startswith("py_") and cfg.dtype in families.HALVES


refused.what = (f"Python operators on {', '.join(families.HALVES)} items: passed by pointer, "
                "and coopgen.cute traces operators on C numbers only (CUB's built-in operators "
                "on them are drawn)")


def _cutlass_name(dtype: str) -> str:
    if dtype == "bool":
        return "cutlass.Boolean"
    if dtype == "bfloat16":
        return "cutlass.BFloat16"
    return f"cutlass.{dtype[0].upper()}{dtype[1:]}"


def layout(configs) -> tuple[list[tuple[int, str, int]], int]:
    """(byte offset, dtype, items) of every slot of the batch, in the kernel's order (the
    configurations', then each one's slots), and the buffer's bytes."""
    out, offset = [], 0
    for cfg in configs:
        groups = kernels.groups_of(cfg, TILES)
        for s in kernels.slots(cfg):
            n = math.prod(kernels.host_shape(cfg, s, groups))
            out.append((offset, s.dtype, n))
            offset += -(-n * families.np_dtype(s.dtype).itemsize // ALIGN) * ALIGN
    return out, max(offset, ALIGN)


class CuteDialect(kernels.Dialect):
    """The calls' surroundings in CuTe DSL."""
    block_index = "bx"
    sync = "cute.arch.barrier()"

    def dtype(self, name: str) -> str:
        return _cutlass_name(name)

    def local(self, n: int, dtype: str) -> str:
        return f"cute.make_rmem_tensor({n}, {self.dtype(dtype)})"

    def shared(self, n: int, dtype: str) -> str:
        return f"smem.allocate_tensor({self.dtype(dtype)}, cute.make_layout({n}), 16)"

    def items(self, n: int) -> str:
        return f"cutlass.range_constexpr({n})"  # unrolled: the fragments stay in registers

    def tile(self, a: str, n: int) -> str:
        return f"cute.local_tile({a}, ({n},), (g,))"

    def digit_extractor(self, cfg, j: int) -> str:
        shift, mask = kernels.digit_bits(cfg)
        return f"\n\ndef c{j}_digit(key):\n    return (key >> {shift}) & {mask}\n"

    def module(self, configs, args: list, body: list, defs: str) -> str:
        block = tuple(configs[0].block) + (1,) * (3 - len(configs[0].block))
        slots, size = layout(configs)
        views = [f"{name} = view(buf, {off}, {self.dtype(dt)}, {n})"
                 for name, (off, dt, n) in zip(args, slots)]
        head = ["tx, ty, tz = cute.arch.thread_idx()",
                "bx, _, _ = cute.arch.block_idx()",
                f"t = tx + {block[0]} * (ty + {block[1]} * tz)",
                f"r = bx * {math.prod(block)} + t",
                "smem = cutlass.memory.SmemAllocator()", *views]
        return (PRELUDE + defs + "\n\n@cute.kernel\ndef kernel(buf: cute.Tensor):\n"
                + "".join(f"    {line}\n" for line in head + body)
                + "\n\n@cute.jit\ndef launch(p: cute.Pointer):\n"
                f"    kernel(cute.make_tensor(p, cute.make_layout({size}))).launch(\n"
                f"        grid=({TILES}, 1, 1), block={block})\n")


CUTE = CuteDialect()


def kernel_source(configs) -> str:
    return kernels.kernel_source(configs, CUTE)


def _pointer(address: int = 0):
    import cutlass
    from cutlass.base_dsl.enums import AddressSpace
    from cutlass.cute.runtime import make_ptr
    return make_ptr(cutlass.Uint8, address, AddressSpace.gmem, assumed_align=ALIGN)


_device = None


def _current_device():
    global _device
    if _device is None:
        from cuda.core import Device
        # Device() asks the driver for a current context first (cuCtxGetDevice), an API error
        # compute-sanitizer reports when there is none yet; CUDA_VISIBLE_DEVICES picks the GPU
        _device = Device(0)
        _device.set_current()
    return _device


def _check(result) -> None:
    from cuda.bindings import driver
    if result[0] != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver call failed: {result[0].name}")


def run_kernel(configs, args, compile_only: bool, build) -> list[np.ndarray] | None:
    """Compile the batch (``build``: source -> module), and unless ``compile_only`` launch it
    on TILES blocks with ``args`` (the slots' host arrays, flat, in the kernel's order):
    the arrays afterwards."""
    if compile_only:  # without a GPU, CuTe DSL needs the architecture before its import
        os.environ.setdefault("CUTE_DSL_ARCH", COMPILE_ARCH)
    import cutlass.cute as cute

    slots, size = layout(configs)
    mod = build(kernel_source(configs))
    if compile_only:
        cute.compile[cute.GPUArch(os.environ["CUTE_DSL_ARCH"])](mod.launch, _pointer())
        return None
    device = _current_device()
    compiled = cute.compile(mod.launch, _pointer())
    from cuda.bindings import driver
    host = pack(configs, args)
    err, address = driver.cuMemAlloc(size)
    _check((err,))
    try:
        _check(driver.cuMemcpyHtoD(address, host.ctypes.data, size))
        compiled(_pointer(int(address)))
        device.sync()
        _check(driver.cuMemcpyDtoH(host.ctypes.data, address, size))
    finally:
        driver.cuMemFree(address)
    return unpack(configs, args, host)


def pack(configs, args) -> np.ndarray:
    """The batch's buffer: each array's bytes at its offset (layout)."""
    slots, size = layout(configs)
    host = np.zeros(size, np.uint8)
    for (off, dtype, n), a in zip(slots, args, strict=True):
        assert a.size == n and a.dtype == families.np_dtype(dtype), (dtype, n, a.dtype, a.size)
        host[off:off + a.nbytes] = np.ascontiguousarray(a).view(np.uint8).reshape(-1)
    return host


def unpack(configs, args, host: np.ndarray) -> list[np.ndarray]:
    """The arrays in the buffer (shaped and typed as ``args``)."""
    slots, _ = layout(configs)
    return [host[off:off + a.nbytes].view(a.dtype).copy() for (off, _, _), a in zip(slots, args)]


__all__ = ["CUTE", "DTYPES", "kernel_source", "layout", "pack", "refused", "run_kernel",
           "skip_reason", "unpack"]
