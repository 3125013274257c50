"""CPU-only link check: compile a kernel to LTO-IR and link it to a cubin.

No GPU is needed: numba's ``compile_all`` only runs NVVM (and NVRTC for our
shim bundles), and cuda.core's ``Linker`` uses nvJitLink, which needs an
explicit ``arch``. The verbose nvJitLink log (ptxas info lines) is parsed so
tests can assert e.g. "no local memory, no spills".
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field

from cuda.core import Linker, LinkerOptions, ObjectCode

__all__ = [
    "FunctionInfo",
    "LinkResult",
    "link_cubin",
    "link_ptx",
    "link_pieces",
    "compile_kernel_pieces",
    "parse_link_log",
    "launch_config_on_cpu",
    "link_as_launched",
]


@dataclass
class FunctionInfo:
    """Resources ptxas reports for one function (kernel or non-inlined callee)."""

    name: str
    registers: int = 0
    barriers: int = 0
    stack_frame: int = 0  # bytes of local memory for the frame
    spill_stores: int = 0
    spill_loads: int = 0
    smem: int = 0  # static shared memory, bytes
    lmem: int = 0  # explicit local memory, if reported
    cmem: dict = field(default_factory=dict)  # bank -> bytes

    @property
    def local_bytes(self) -> int:
        return self.stack_frame + self.lmem


@dataclass
class LinkResult:
    cubin: bytes
    log: str
    functions: dict  # name -> FunctionInfo (every "Function properties")
    entries: list  # kernel (entry) names in the order ptxas compiled them
    gmem: int  # bytes of global (__device__) variables in the module

    @property
    def kernel(self) -> FunctionInfo:
        """Info of the (first) entry function."""
        return self.functions[self.entries[0]]

    # Convenience views of the kernel's numbers.
    @property
    def registers(self) -> int:
        return self.kernel.registers

    @property
    def spill_stores(self) -> int:
        return sum(f.spill_stores for f in self.functions.values())

    @property
    def spill_loads(self) -> int:
        return sum(f.spill_loads for f in self.functions.values())

    @property
    def local_bytes(self) -> int:
        return max((f.local_bytes for f in self.functions.values()), default=0)

    @property
    def smem(self) -> int:
        return self.kernel.smem


_RE_PROPS = re.compile(r"Function properties for (\S+)")
_RE_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_RE_GMEM = re.compile(r"ptxas info\s*:\s*(\d+) bytes gmem")
_RE_BYTES = re.compile(r"(\d+) bytes (stack frame|spill stores|spill loads|smem|lmem)")
_RE_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")
_RE_REGS = re.compile(r"Used (\d+) registers")
_RE_BARS = re.compile(r"used (\d+) barriers")
_FIELDS = {
    "stack frame": "stack_frame",
    "spill stores": "spill_stores",
    "spill loads": "spill_loads",
    "smem": "smem",
    "lmem": "lmem",
}


def parse_link_log(log: str):
    """-> (functions, entries, gmem) from an nvJitLink/ptxas verbose log.

    ptxas prints, per function::

        ptxas info    : Function properties for NAME
        ptxas         .     0 bytes stack frame, 0 bytes spill stores, ...
        ptxas info    : Used 23 registers, used 1 barriers, 704 bytes smem

    (the "Used" line only for entries). Lines are attributed to the most
    recent "Function properties" header.
    """
    functions: dict[str, FunctionInfo] = {}
    entries: list[str] = []
    gmem = 0
    cur = None
    for line in log.splitlines():
        if m := _RE_GMEM.search(line):
            gmem += int(m.group(1))
            continue
        if m := _RE_ENTRY.search(line):
            entries.append(m.group(1))
            continue
        if m := _RE_PROPS.search(line):
            cur = functions.setdefault(m.group(1), FunctionInfo(m.group(1)))
            continue
        if cur is None:
            continue
        for num, what in _RE_BYTES.findall(line):
            setattr(cur, _FIELDS[what], int(num))
        for num, bank in _RE_CMEM.findall(line):
            cur.cmem[int(bank)] = int(num)
        if m := _RE_REGS.search(line):
            cur.registers = int(m.group(1))
        if m := _RE_BARS.search(line):
            cur.barriers = int(m.group(1))
    for e in entries:  # an entry with nothing reported still gets a row
        functions.setdefault(e, FunctionInfo(e))
    return functions, entries, gmem


def _to_object_code(piece, i: int) -> ObjectCode:
    """compile_all returns LTO-IR bytes for the kernel, ObjectCode for NVRTC-
    compiled .cu files and numba LinkableCode objects (our ShimBundle among
    them) for everything else."""
    if isinstance(piece, ObjectCode):
        return piece
    if isinstance(piece, (bytes, bytearray)):
        return ObjectCode.from_ltoir(bytes(piece), name=f"piece{i}")
    from numba.cuda.cudadrv import linkable_code as lc

    if isinstance(piece, str):  # a path
        piece = lc.LinkableCode.from_path(piece)
    makers = {
        lc.LTOIR: ObjectCode.from_ltoir,
        lc.PTXSource: ObjectCode.from_ptx,
        lc.Cubin: ObjectCode.from_cubin,
        lc.Fatbin: ObjectCode.from_fatbin,
        lc.Object: ObjectCode.from_object,
        lc.Archive: ObjectCode.from_library,
    }
    for cls, make in makers.items():
        if isinstance(piece, cls):
            data = piece.data
            if isinstance(data, str):
                data = data.encode()
            return make(data, name=str(piece.name))
    raise TypeError(f"don't know how to link {piece!r}")


class _DeviceOfArch:
    def __init__(self, arch):
        self.compute_capability = tuple(arch)


@contextlib.contextmanager
def _device_functions_for(arch):
    """numba compiles the ``@cuda.jit(device=True)`` functions and ``@overload``
    implementations a kernel calls for the current device, which a machine
    without a GPU lacks: there, compile them for ``arch`` like the kernel."""
    from numba import cuda
    from numba.cuda import dispatcher

    if cuda.is_available():
        yield
        return
    saved = dispatcher.get_current_device
    dispatcher.get_current_device = lambda: _DeviceOfArch(arch)
    try:
        yield
    finally:
        dispatcher.get_current_device = saved


def compile_kernel_pieces(kernel, signature, *, arch=(9, 0)):
    """``numba.cuda.compile_all`` for a kernel: [kernel LTO-IR, *linking files]."""
    from numba import cuda

    pyfunc = getattr(kernel, "py_func", kernel)  # accept a CUDADispatcher
    with _device_functions_for(arch):
        pieces, _resty = cuda.compile_all(
            pyfunc, signature, device=False, abi="numba", cc=tuple(arch), output="ltoir"
        )
    return pieces


def link_pieces(pieces, *, arch=(9, 0), optimize_unused_variables: bool = False) -> LinkResult:
    """LTO-link ``pieces`` (as returned by compile_all) to an sm_XY cubin."""
    objs = [_to_object_code(p, i) for i, p in enumerate(pieces)]
    opts = LinkerOptions(
        arch=f"sm_{arch[0]}{arch[1]}",
        link_time_optimization=True,
        verbose=True,
        # None, not False: older cuda.core appended the flag for False too
        optimize_unused_variables=True if optimize_unused_variables else None,
    )
    linker = Linker(*objs, options=opts)
    try:
        cubin = linker.link("cubin").code
        log = linker.get_info_log() or ""
    finally:
        linker.close()
    functions, entries, gmem = parse_link_log(log)
    return LinkResult(bytes(cubin), log, functions, entries, gmem)


def link_ptx(kernel, sig, *, arch=(9, 0), pieces=None) -> str:
    """The LTO-linked PTX of a kernel: what LTO made of the shims, e.g. to check that no path
    was folded into ``trap`` (LLVM's verdict on undefined behaviour). ``pieces`` (from
    :func:`compile_kernel_pieces` for this arch) saves compiling the kernel again."""
    if pieces is None:
        pieces = compile_kernel_pieces(kernel, sig, arch=arch)
    objs = [_to_object_code(p, i) for i, p in enumerate(pieces)]
    opts = LinkerOptions(arch=f"sm_{arch[0]}{arch[1]}", link_time_optimization=True, ptx=True)
    linker = Linker(*objs, options=opts)
    try:
        return bytes(linker.link("ptx").code).decode()
    finally:
        linker.close()


def link_cubin(
    kernel,
    signature,
    *,
    arch=(9, 0),
    optimize_unused_variables: bool = False,
) -> LinkResult:
    """Compile ``kernel`` (py function or CUDADispatcher) for ``signature``
    and LTO-link everything to a cubin for ``sm_<arch>``.

    ``optimize_unused_variables`` passes nvJitLink's flag of that name; numba's
    own launch path does not, so it is off by default to report what a real
    launch gets (libcu++'s static constexpr members then show up as ``gmem``).
    """
    pieces = compile_kernel_pieces(kernel, signature, arch=arch)
    return link_pieces(
        pieces, arch=arch, optimize_unused_variables=optimize_unused_variables
    )


class _LaunchOnCpu:
    """What coopgen reads of a launch (``numba.cuda.launchconfig``) while a kernel compiles:
    its block shape, its arguments, the dispatcher to key specialisations on."""

    _launch_config_key = staticmethod(lambda cfg: (cfg.blockdim,))

    def __init__(self, py_func, block, args):
        block = block if isinstance(block, tuple) else (block,)
        self.blockdim = tuple(block) + (1,) * (3 - len(block))
        self.args = tuple(args)
        self.py_func = py_func
        self.dispatcher = self

    def mark_launch_config_sensitive(self):
        pass


@contextlib.contextmanager
def launch_config_on_cpu(kernel, block, args=()):
    """Compile as ``kernel[grid, block](*args)`` would, without a GPU to launch on."""
    from . import lowering_context
    saved = lowering_context.current_launch_config
    cfg = _LaunchOnCpu(getattr(kernel, "py_func", kernel), block, args)
    lowering_context.current_launch_config = lambda: cfg
    try:
        yield cfg
    finally:
        lowering_context.current_launch_config = saved


def link_as_launched(kernel, block, *args, arch=(9, 0)) -> LinkResult:
    """Link ``kernel`` for ``sm_<arch>`` as ``kernel[grid, block](*args)`` would compile it:
    with the launch's block shape and argument values (kernel arguments that size arrays are
    constants only when a launch compiles the kernel)."""
    from numba.cuda.typing.typeof import typeof  # the kernel dispatcher's typeof
    sig = tuple(typeof(a) for a in args)
    with launch_config_on_cpu(kernel, block, args):
        return link_cubin(kernel, sig, arch=arch)
