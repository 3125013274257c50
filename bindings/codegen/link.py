"""LTO-link a kernel's pieces without a GPU: nvJitLink (cuda.core's ``Linker``) takes an
explicit arch. Its verbose log (ptxas info lines) is parsed, so tests can assert e.g. "no local
memory, no spills". The pieces come from either backend's compiler (its linkcheck)."""
import re
from dataclasses import dataclass, field

from cuda.core import Linker, LinkerOptions, ObjectCode

from . import nvrtc


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


#: A linking file's class name (numba-cuda's ``linkable_code`` classes, or numba-cuda-mlir's
#: copies of them) -> how cuda.core takes its data.
_MAKERS = {"LTOIR": ObjectCode.from_ltoir, "PTXSource": ObjectCode.from_ptx,
           "Cubin": ObjectCode.from_cubin, "Fatbin": ObjectCode.from_fatbin,
           "Object": ObjectCode.from_object, "Archive": ObjectCode.from_library}

_SUFFIXES = {"ltoir": "LTOIR", "ptx": "PTXSource", "cubin": "Cubin", "fatbin": "Fatbin",
             "o": "Object", "a": "Archive"}


def _to_object_code(piece, i: int, arch) -> ObjectCode:
    """A compiler's pieces: LTO-IR bytes (the kernel), ObjectCode (NVRTC-compiled .cu files)
    or a linking file (the ShimBundle among them), found by its class (or a base class)."""
    if isinstance(piece, ObjectCode):
        return piece
    if isinstance(piece, (bytes, bytearray)):
        return ObjectCode.from_ltoir(bytes(piece), name=f"piece{i}")
    if isinstance(piece, str):  # a path
        with open(piece, "rb") as f:
            return _MAKERS[_SUFFIXES[piece.rpartition(".")[2]]](f.read(), name=piece)
    for cls in type(piece).__mro__:
        data = getattr(piece, "data", None)
        if cls.__name__ == "CUSource":  # CUDA C++ (a declare_device's link=): NVRTC's LTO-IR
            data = data if isinstance(data, str) else data.decode()
            return ObjectCode.from_ltoir(nvrtc.compile_ltoir(data, arch=f"sm_{arch[0]}{arch[1]}"),
                                         name=str(piece.name))
        if (make := _MAKERS.get(cls.__name__)) is not None:
            return make(data.encode() if isinstance(data, str) else data, name=str(piece.name))
    raise TypeError(f"don't know how to link {piece!r}")


def _link(pieces, arch, output: str, **options):
    """(code, log) of LTO-linking ``pieces`` (compile_all's) for sm_<arch>."""
    objs = [_to_object_code(p, i, arch) for i, p in enumerate(pieces)]
    linker = Linker(*objs, options=LinkerOptions(arch=f"sm_{arch[0]}{arch[1]}",
                                                 link_time_optimization=True, **options))
    try:
        return bytes(linker.link(output).code), linker.get_info_log() or ""
    finally:
        linker.close()


def link_pieces(pieces, *, arch=(9, 0), optimize_unused_variables: bool = False,
                max_registers: int | None = None) -> LinkResult:
    # None, not False: older cuda.core appended the flag for False too
    cubin, log = _link(pieces, arch, "cubin", verbose=True,
                       optimize_unused_variables=True if optimize_unused_variables else None,
                       max_register_count=max_registers)
    return LinkResult(cubin, log, *parse_link_log(log))


