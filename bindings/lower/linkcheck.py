"""Link kernels without a GPU: numba's ``compile_all`` runs only NVVM (and NVRTC for the
shims), nvJitLink (cuda.core's ``Linker``) takes an explicit arch. Its verbose log (ptxas info
lines) is parsed, so tests can assert e.g. "no local memory, no spills"."""
import contextlib
import re
from dataclasses import dataclass, field
from types import SimpleNamespace

from cuda.core import Linker, LinkerOptions, ObjectCode

__all__ = ["FunctionInfo", "LinkResult", "link_cubin", "link_ptx", "link_pieces",
           "compile_kernel_pieces", "parse_link_log", "launch_config_on_cpu", "link_as_launched"]


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
    local_bytes = property(lambda self: self.stack_frame + self.lmem)


@dataclass
class LinkResult:
    cubin: bytes
    log: str
    functions: dict  # name -> FunctionInfo (every "Function properties")
    entries: list  # kernel (entry) names in the order ptxas compiled them
    gmem: int  # bytes of global (__device__) variables in the module

    # the (first) entry function's registers and shared memory; the spills and local memory
    # of any function
    kernel = property(lambda self: self.functions[self.entries[0]])
    registers = property(lambda self: self.kernel.registers)
    smem = property(lambda self: self.kernel.smem)
    spill_stores = property(lambda self: sum(f.spill_stores for f in self.functions.values()))
    spill_loads = property(lambda self: sum(f.spill_loads for f in self.functions.values()))
    local_bytes = property(lambda self: max((f.local_bytes for f in self.functions.values()),
                                            default=0))


_RE_PROPS = re.compile(r"Function properties for (\S+)")
_RE_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_RE_GMEM = re.compile(r"ptxas info\s*:\s*(\d+) bytes gmem")
#: "N bytes stack frame", "Used N registers", "used N barriers", ...: FunctionInfo's fields
_RE_COUNTS = re.compile(r"(\d+) (?:bytes )?(stack frame|spill stores|spill loads|smem|lmem|"
                        r"registers|barriers)\b")
_RE_CMEM = re.compile(r"(\d+) bytes cmem\[(\d+)\]")


def parse_link_log(log: str):
    """-> (functions, entries, gmem) from an nvJitLink/ptxas verbose log, whose lines belong
    to the latest "Function properties for NAME" (the "Used ... registers" line: entries only)."""
    functions: dict[str, FunctionInfo] = {}
    entries: list[str] = []
    gmem, cur = 0, None
    for line in log.splitlines():
        if m := _RE_GMEM.search(line):
            gmem += int(m.group(1))
        elif m := _RE_ENTRY.search(line):
            entries.append(m.group(1))
        elif m := _RE_PROPS.search(line):
            cur = functions.setdefault(m.group(1), FunctionInfo(m.group(1)))
        elif cur is not None:
            for num, what in _RE_COUNTS.findall(line):
                setattr(cur, what.replace(" ", "_"), int(num))
            for num, bank in _RE_CMEM.findall(line):
                cur.cmem[int(bank)] = int(num)
    for e in entries:  # an entry with nothing reported still gets a row
        functions.setdefault(e, FunctionInfo(e))
    return functions, entries, gmem


def _to_object_code(piece, i: int) -> ObjectCode:
    """compile_all's pieces: LTO-IR bytes (the kernel), ObjectCode (NVRTC-compiled .cu files)
    or numba LinkableCode (the ShimBundle among them)."""
    if isinstance(piece, ObjectCode):
        return piece
    if isinstance(piece, (bytes, bytearray)):
        return ObjectCode.from_ltoir(bytes(piece), name=f"piece{i}")
    from numba.cuda.cudadrv import linkable_code as lc
    if isinstance(piece, str):  # a path
        piece = lc.LinkableCode.from_path(piece)
    makers = {lc.LTOIR: ObjectCode.from_ltoir, lc.PTXSource: ObjectCode.from_ptx,
              lc.Cubin: ObjectCode.from_cubin, lc.Fatbin: ObjectCode.from_fatbin,
              lc.Object: ObjectCode.from_object, lc.Archive: ObjectCode.from_library}
    for cls, make in makers.items():
        if isinstance(piece, cls):
            data = piece.data.encode() if isinstance(piece.data, str) else piece.data
            return make(data, name=str(piece.name))
    raise TypeError(f"don't know how to link {piece!r}")


def compile_kernel_pieces(kernel, signature, *, arch=(9, 0)):
    """``numba.cuda.compile_all`` for a kernel (or its dispatcher): [kernel LTO-IR, *linking
    files]. numba compiles the device functions and ``@overload``s a kernel calls for the
    current device; without a GPU, they are compiled for ``arch`` like the kernel."""
    from numba import cuda
    from numba.cuda import dispatcher
    saved = dispatcher.get_current_device
    if not cuda.is_available():
        dispatcher.get_current_device = lambda: SimpleNamespace(compute_capability=tuple(arch))
    try:
        return cuda.compile_all(getattr(kernel, "py_func", kernel), signature, device=False,
                                abi="numba", cc=tuple(arch), output="ltoir")[0]
    finally:
        dispatcher.get_current_device = saved


def _link(pieces, arch, output: str, **options):
    """(code, log) of LTO-linking ``pieces`` (compile_all's) for sm_<arch>."""
    objs = [_to_object_code(p, i) for i, p in enumerate(pieces)]
    linker = Linker(*objs, options=LinkerOptions(arch=f"sm_{arch[0]}{arch[1]}",
                                                 link_time_optimization=True, **options))
    try:
        return bytes(linker.link(output).code), linker.get_info_log() or ""
    finally:
        linker.close()


def link_pieces(pieces, *, arch=(9, 0), optimize_unused_variables: bool = False) -> LinkResult:
    # None, not False: older cuda.core appended the flag for False too
    cubin, log = _link(pieces, arch, "cubin", verbose=True,
                       optimize_unused_variables=True if optimize_unused_variables else None)
    return LinkResult(cubin, log, *parse_link_log(log))


def link_ptx(kernel, sig, *, arch=(9, 0), pieces=None) -> str:
    """The LTO-linked PTX: what LTO made of the shims (e.g. no path folded into ``trap``,
    LLVM's verdict on undefined behaviour); ``pieces`` saves compiling the kernel again."""
    pieces = compile_kernel_pieces(kernel, sig, arch=arch) if pieces is None else pieces
    return _link(pieces, arch, "ptx", ptx=True)[0].decode()


def link_cubin(kernel, signature, *, arch=(9, 0),
               optimize_unused_variables: bool = False) -> LinkResult:
    """Compile ``kernel`` and LTO-link it to a cubin. ``optimize_unused_variables`` (nvJitLink's
    flag) is off as on numba's launch path, to report what a launch gets (libcu++'s static
    constexpr members then show up as ``gmem``)."""
    return link_pieces(compile_kernel_pieces(kernel, signature, arch=arch), arch=arch,
                       optimize_unused_variables=optimize_unused_variables)


class _LaunchOnCpu:
    """What coopgen reads of a launch (``numba.cuda.launchconfig``) while a kernel compiles:
    its block shape, its arguments, the dispatcher to key specialisations on."""

    _launch_config_key = staticmethod(lambda cfg: (cfg.blockdim,))
    mark_launch_config_sensitive = staticmethod(lambda: None)

    def __init__(self, py_func, block, args):
        block = block if isinstance(block, tuple) else (block,)
        self.blockdim = tuple(block) + (1,) * (3 - len(block))
        self.args = tuple(args)
        self.py_func = py_func
        self.dispatcher = self


@contextlib.contextmanager
def launch_config_on_cpu(kernel, block, args=()):
    """Compile as ``kernel[grid, block](*args)`` would, without a GPU to launch on."""
    from . import bundle
    saved = bundle.current_launch_config
    cfg = _LaunchOnCpu(getattr(kernel, "py_func", kernel), block, args)
    bundle.current_launch_config = lambda: cfg
    try:
        yield cfg
    finally:
        bundle.current_launch_config = saved


def link_as_launched(kernel, block, *args, arch=(9, 0)) -> LinkResult:
    """Link ``kernel`` as ``kernel[grid, block](*args)`` would compile it: with the launch's
    block shape and argument values (which size arrays only under a launch)."""
    from numba.cuda.typing.typeof import typeof  # the kernel dispatcher's typeof
    sig = tuple(typeof(a) for a in args)
    with launch_config_on_cpu(kernel, block, args):
        return link_cubin(kernel, sig, arch=arch)
