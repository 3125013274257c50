"""Compile CUDA C++ shims to LTO-IR with NVRTC, behind the disk cache (``codegen.cache``).

``COOPGEN_DUMP_SHIMS=<dir>`` writes every source compiled (cache hits included) to
``<dir>/<key>.cu``; ``COOPGEN_NVRTC_PCH`` says when to build NVRTC's precompiled header
(_use_pch). Both are read on every call, so tests can monkeypatch them."""
import atexit
import contextlib
import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import tempfile
import threading
from pathlib import Path

from cuda.bindings import nvrtc as _nvrtc

from ..model import registry
from . import cache as _cache
from . import toolchain

VERSION = _cache.own_version()
nvrtc_version = functools.cache(toolchain.nvrtc_version)


class NvrtcError(RuntimeError):
    """NVRTC failed; ``.log`` holds the compiler log, ``.source`` the input."""

    def __init__(self, message: str, log: str = "", source: str = ""):
        super().__init__(f"{message}\n{log}" if log else message)
        self.log, self.source = log, source


_lock = threading.Lock()
#: (event, kind) -> count, process wide (tests assert on them); "ptx" compiles read sizes back.
_counts = {(event, kind): 0 for event in ("compile", "hit") for kind in ("ltoir", "ptx")}


def compile_count(kind: str = "ltoir") -> int:
    return _counts["compile", kind]


def cache_hit_count(kind: str = "ltoir") -> int:
    return _counts["hit", kind]


def reset_counters() -> None:
    with _lock:
        _counts.update(dict.fromkeys(_counts, 0))


@functools.cache
def supported_archs() -> tuple[int, ...]:
    err, archs = _nvrtc.nvrtcGetSupportedArchs()
    _check(err, "nvrtcGetSupportedArchs")
    return tuple(archs)


@functools.cache
def default_arch() -> str:
    """The arch of compiles no kernel compile chose (two-phase temp storage sizes): the current
    device's, or sm_90 without one (CPU-only compile checks)."""
    with contextlib.suppress(Exception):  # no backend, driver or device: the default
        if cc := current_device_cc():
            return f"sm_{cc[0]}{cc[1]}"
    return "sm_90"


#: () -> (major, minor) of the current GPU or None; the backend sets it (coopgen.lower).
current_device_cc = None


def unsupported_arch(arch) -> str | None:
    """Why this NVRTC cannot compile for ``arch``, or None when it can."""
    n, archs = arch_number(arch), supported_archs()
    if n in archs:
        return None
    major, minor = nvrtc_version()
    if n > max(archs):
        hint = (f"sm_{n} needs a newer CUDA 13 toolkit: pip install -U 'coopgen[cu13]'"
                if major >= 13 else
                f"sm_{n} needs a newer toolkit: pip install -U 'coopgen[cu12]' (or "
                f"'coopgen[cu13]' under a CUDA 13 driver)")
    elif n < min(archs):
        hint = f"CUDA {major} dropped sm_{n}: pip install 'coopgen[cu{major - 1}]'"
    else:
        hint = f"sm_{n} is not among them"
    return (f"cannot compile for sm_{n}: NVRTC {major}.{minor} targets "
            f"{', '.join(f'sm_{a}' for a in archs)}; {hint}")


def arch_number(arch) -> int:
    """'sm_90' / 'compute_90' / 'sm_90a' / '90' / (9, 0) -> 90."""
    if isinstance(arch, tuple):
        return arch[0] * 10 + arch[1]
    return int(_normalize_arch(arch)[len("compute_"):].rstrip("af"))


@functools.cache
def _nvrtc_identity() -> str:
    """Version plus libnvrtc's size, so patch releases (both 13.0) get their own cache entries;
    no paths or times, so a cache warmed on one machine serves another."""
    with contextlib.suppress(OSError):  # identity is best effort; the version is enough
        return f"{nvrtc_version()!r}:{os.stat(toolchain.lib_path('nvrtc')).st_size}"
    return repr(nvrtc_version())


@functools.cache
def cccl_include_dir() -> str:
    """The verified CCCL headers of the bindings' lock entry: the only include directory
    needed, as CCCL never includes the toolkit's runtime headers under NVRTC (adding the
    toolkit's would change the emitted LTO-IR)."""
    return os.path.realpath(registry.include_dir())


@functools.cache
def half_include_dir() -> str:
    """cuda_fp16.h / cuda_bf16.h (NVRTC has none built in): numba-cuda's copies for this NVRTC
    major, found without importing numba-cuda (codegen serves any backend); without
    numba-cuda (numba-cuda-mlir has no copies), the CUDA runtime's headers."""
    spec = importlib.util.find_spec("numba_cuda")
    if spec is None:
        from cuda.pathfinder import find_nvidia_header_directory
        return find_nvidia_header_directory("cudart")
    base = Path(spec.submodule_search_locations[0]) / "numba" / "cuda" / "include"
    major = str(nvrtc_version()[0])
    return str(base / major if (base / major).is_dir() else max(base.iterdir()))


cache_dir = _cache.shim_dir  # the LTO-IR cache folder, or None when caching is disabled


def _normalize_arch(arch: str) -> str:
    """'sm_90' / 'compute_90' / '90' / 'sm_90a' -> 'compute_90' / 'compute_90a': LTO-IR is
    virtual-architecture code; nvJitLink picks the real ``sm_XX`` at link time."""
    return "compute_" + re.sub(r"^(sm_)?(compute_)?(lto_)?", "", str(arch))


def base_options(arch: str, include_dirs, extra=(), kind: str = "ltoir") -> list[str]:
    """The exact NVRTC option list used for a compile (minus ``-pch``)."""
    return ["-std=c++17", "--relocatable-device-code=true",  # keep extern "C" shims; link later
            *(["-dlto"] if kind == "ltoir" else []),  # emit LTO-IR, not PTX
            f"-arch={_normalize_arch(arch)}", *(f"-I{d}" for d in include_dirs), *extra]


def _dir_identity(d: str) -> str:
    """An include directory's identity for the cache key, cheaper than hashing its headers."""
    p = os.path.realpath(d)
    if p == cccl_include_dir():  # the locked headers: their digest says it all
        return registry.package().HEADERS_DIGEST
    if p == os.path.realpath(half_include_dir()) and importlib.util.find_spec("numba_cuda"):
        return f"numba-cuda-{importlib.metadata.version('numba-cuda')}-half-headers"
    try:  # another folder (none in coopgen): a reinstall changes its mtime
        return f"{p}:{os.stat(p).st_mtime_ns}"
    except OSError:
        return f"{p}:missing"


def _cache_key(source: str, opts: list[str], arch: str, include_dirs) -> str:
    parts = ("coopgen-ltoir-v2",  # each part ends with "\0\1", so none runs into the next
             VERSION,  # a new coopgen may emit other code for the same source (headers, options)
             source,
             _nvrtc_identity(),  # the toolchain: NVRTC's major decides the LTO-IR format
             "\0".join(o for o in opts if not o.startswith("-I")),  # dirs: by identity below
             _normalize_arch(arch),
             "\0".join(_dir_identity(d) for d in include_dirs))
    return hashlib.sha256("".join(p + "\0\1" for p in parts).encode()).hexdigest()


def _check(err, what: str, prog=None, source: str = ""):
    if err == _nvrtc.nvrtcResult.NVRTC_SUCCESS:
        return
    log = ""
    if prog is not None:
        log_err, size = _nvrtc.nvrtcGetProgramLogSize(prog)
        if log_err == _nvrtc.nvrtcResult.NVRTC_SUCCESS and size > 1:
            buf = b" " * size
            _nvrtc.nvrtcGetProgramLog(prog, buf)
            log = buf.rstrip(b"\0").decode(errors="replace")
    raise NvrtcError(f"{what} failed: {err.name}", log, source)


_PCH_POLICIES = {"0": "off", "off": "off", "1": "second", "second": "second", "first": "first"}


def _use_pch(kind: str) -> bool:
    """NVRTC's automatic PCH: a -pch compile keeps its parsed leading #include block in the
    process, one per option set (so per arch and toolchain), and a later -pch compile starting
    with the same block skips parsing it (~0.9 s -> ~0.2 s). Every bundle starts with the same
    block (ShimBundle.source), so one PCH serves every later kernel. Making it costs ~0.2 s
    (tools/bench/RESULTS.md): ``first`` (default) pays that on the process's first compile,
    ``second`` on its second, ``0`` never. (A background thread was tried: a process exiting
    while NVRTC runs in a daemon thread crashes.)"""
    value = os.environ.get("COOPGEN_NVRTC_PCH", "first")
    policy = _PCH_POLICIES.get(value.strip().lower())
    if policy is None:
        raise ValueError(f"COOPGEN_NVRTC_PCH={value!r}: use first (the default), second or 0")
    if kind != "ltoir" or policy == "off" or nvrtc_version() < (12, 8):  # -pch: NVRTC 12.8+
        return False
    return policy == "first" or compile_count() > 0


_pch_dirs: dict[int, str] = {}  # by process: a forked worker must not read its parent's


def _pch_options() -> list[str]:
    """-pch, with a folder of the process's own for the header file: NVRTC 12.x would write it
    to the working directory and leave it there (13.x uses and removes a folder of its own)."""
    if os.getpid() not in _pch_dirs:
        _pch_dirs[os.getpid()] = tempfile.mkdtemp(prefix="coopgen-pch-")
        atexit.register(shutil.rmtree, _pch_dirs[os.getpid()], True)
    return ["-pch", f"-pch-dir={_pch_dirs[os.getpid()]}"]


def _nvrtc_compile(source: str, opts: list[str], name: str, kind: str = "ltoir",
                   name_expressions: tuple[str, ...] = ()) -> tuple[bytes, tuple[str, ...]]:
    """(the output, the lowered (mangled) name of each of ``name_expressions``)."""
    err, prog = _nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    _check(err, "nvrtcCreateProgram")
    try:
        for expression in name_expressions:
            (err,) = _nvrtc.nvrtcAddNameExpression(prog, expression.encode())
            _check(err, "nvrtcAddNameExpression", prog, source)
        (err,) = _nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        with _lock:
            _counts["compile", kind] += 1
        _check(err, "nvrtcCompileProgram", prog, source)
        get_size, get = ((_nvrtc.nvrtcGetLTOIRSize, _nvrtc.nvrtcGetLTOIR) if kind == "ltoir"
                         else (_nvrtc.nvrtcGetPTXSize, _nvrtc.nvrtcGetPTX))
        err, size = get_size(prog)
        _check(err, get_size.__name__, prog, source)
        buf = b" " * size
        (err,) = get(prog, buf)
        _check(err, get.__name__, prog, source)
        lowered = []
        for expression in name_expressions:
            err, name = _nvrtc.nvrtcGetLoweredName(prog, expression.encode())
            _check(err, "nvrtcGetLoweredName", prog, source)
            lowered.append(name.decode())
        return buf, tuple(lowered)
    finally:
        _nvrtc.nvrtcDestroyProgram(prog)


def compile_ptx(source: str, *, arch: str | None = None) -> str:
    """PTX text (cached on disk), to read sizes the compiler computes."""
    return compile_ltoir(source, arch=arch, kind="ptx").rstrip(b"\0").decode()


def compile_ltoir(source: str, *, include_dirs: list[str] | None = None,
                  arch: str | None = None, kind: str = "ltoir") -> bytes:
    """One translation unit to LTO-IR (cached on disk); NvrtcError carries NVRTC's log."""
    return compile_naming(source, (), include_dirs=include_dirs, arch=arch, kind=kind)[0]


def compile_naming(source: str, name_expressions: tuple[str, ...], *,
                   include_dirs: list[str] | None = None, arch: str | None = None,
                   kind: str = "ltoir") -> tuple[bytes, tuple[str, ...]]:
    """:func:`compile_ltoir`, and the mangled names NVRTC gives ``name_expressions`` (say, a
    template instantiated on sizes only the compiler knows: LTO-IR may be compressed)."""
    toolchain.require_consistent()  # a mixed stack: one error here, not a linker's
    arch = arch or default_arch()
    if refused := unsupported_arch(arch):
        raise NvrtcError(refused)
    include_dirs = [str(d) for d in (include_dirs if include_dirs is not None
                                     else [cccl_include_dir()])] + [half_include_dir()]
    # CCCL only enables its __half/__nv_bfloat16 code when these headers were seen first;
    # without them CCCL 3.0.1's ThreadReduce picks a SIMD path for int/float min/max/plus
    # that ends in assert(false) (CUDA_ERROR_ASSERT at run time). nvcc always includes them.
    options = ("--pre-include=cuda_fp16.h", "--pre-include=cuda_bf16.h",
               # libcu++'s type-list metaprograms unroll 10 deep under nvcc and 16 deep under
               # any other compiler, NVRTC included; at 16, cuda/std/__type_traits/type_list.h
               # alone takes ~0.4 s of NVRTC's front end (about 40% of a shim's compile). nvcc's
               # depth changes no generated code.
               "-D_CCCL_META_UNROLL_LIMIT=10", *registry.package().NVRTC_OPTIONS)
    opts = base_options(arch, include_dirs, options, kind)
    key = _cache_key(source + "\0".join(("", *name_expressions)), opts, arch, include_dirs)
    if dump := os.environ.get("COOPGEN_DUMP_SHIMS"):
        _cache.atomic_write(Path(dump) / f"{key}.cu", source.encode())
    path = cache_dir() / f"{key}.{kind}" if cache_dir() is not None else None
    data = _cache.read(path) if path is not None else None  # None: absent or damaged (warned)
    names = _cache.read(path.with_suffix(".names")) if data and name_expressions else b""
    if data and names is not None:
        with _lock:
            _counts["hit", kind] += 1
        return data, tuple(names.decode().split("\n")) if name_expressions else ()
    data, lowered = _nvrtc_compile(source, opts + (_pch_options() if _use_pch(kind) else []),
                                   f"coopgen_{key[:12]}.cu", kind, tuple(name_expressions))
    if path is not None:
        if name_expressions:  # first: a reader that finds the output finds its names
            _cache.write(path.with_suffix(".names"), "\n".join(lowered).encode())
        _cache.write(path, data)  # framed with its length and checksum; evicts past the cap
    return data, lowered
