"""A kernel's shim bundle as CuTe DSL links it: LLVM bitcode, made by clang in CUDA mode.

CuTe DSL 4.8 links the files named in its ``link-libraries`` into the kernel's LLVM module
before libNVVM compiles it, and takes LLVM bitcode only: an NVRTC LTO-IR file is refused
("Unsupported representation: ltoir"), and PTX or cubin files are not linked at all. NVRTC
cannot emit LLVM bitcode, so the bundle's one translation unit (coopgen.codegen.bundle, the same
C++ as the other backends') is compiled by clang, once per kernel, and cached on disk.

Which clang: ``COOPGEN_CLANG`` (a clang or clang++ executable), else the one inside the
``ziglang`` package (``coopgen[cute]`` installs it: a clang known to target sm_100a), else
``clang++``/``clang`` on PATH. clang's CUDA
wrapper headers come from its resource folder, or from libclang-ng's (``ziglang`` ships none);
the CUDA runtime headers from the CUDA toolkit wheels (``cuda-toolkit[cudart,crt]``) or
``CUDA_HOME``. Failure modes: no clang, no headers, or a compile error each raise
:class:`ClangError` naming what is missing and how to install it.
"""
import contextlib
import functools
import hashlib
import importlib.util
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from ..codegen import cache as _cache
from ..codegen import nvrtc
from ..model import registry
from ..model.errors import CoopgenError

INSTALL = "pip install 'coopgen[cute]'"
#: clang reads these before the bundle (NVRTC's --pre-include, coopgen.codegen.nvrtc), then
#: the declarations clang's CUDA headers lack for CUDA 13 (CCCL names cudaConfigureCall in
#: host code that a device-only compile still parses).
PRELUDE = """#pragma once
extern "C" cudaError_t cudaConfigureCall(dim3, dim3, size_t = 0, cudaStream_t = 0);
#include <cuda_fp16.h>
#include <cuda_bf16.h>
"""
_counts = {"compile": 0, "hit": 0}


class ClangError(CoopgenError):
    """clang is missing, cannot find a header, or rejected the bundle (``.log``: its output)."""

    def __init__(self, message: str, log: str = ""):
        super().__init__(f"{message}\n{log}" if log else message)
        self.log = log


def compile_count() -> int:
    return _counts["compile"]


def cache_hit_count() -> int:
    return _counts["hit"]


@functools.cache
def clang_command() -> tuple[str, ...]:
    """The command that runs clang (``zig clang`` for the ziglang package)."""
    given = os.environ.get("COOPGEN_CLANG")
    if given:
        found = shutil.which(given)
        if found is None:
            raise ClangError(f"COOPGEN_CLANG={given!r} is not an executable")
        return (found,)
    spec = importlib.util.find_spec("ziglang")
    if spec is not None and spec.submodule_search_locations:
        zig = Path(spec.submodule_search_locations[0]) / "zig"
        if zig.is_file():
            return (str(zig), "clang")
    for name in ("clang++", "clang"):
        if (found := shutil.which(name)) is not None:
            return (found,)
    raise ClangError("coopgen.cute needs clang to compile CUB's shims to LLVM bitcode (CuTe DSL "
                     f"links no NVRTC output): {INSTALL} (brings ziglang's clang), or put "
                     "clang++ on PATH, or set COOPGEN_CLANG")


@functools.cache
def clang_identity() -> str:
    """The clang binary, part of every cache key: its path, size and time, so that a cached
    kernel's compile runs no clang at all."""
    found = os.stat(clang_command()[0])
    return f"{' '.join(clang_command())}:{found.st_size}:{found.st_mtime_ns}"


@functools.cache
def resource_dir() -> str | None:
    """A clang resource folder holding the CUDA wrapper headers: clang's own, else
    libclang-ng's (the ziglang package ships none)."""
    if clang_command()[-1] != "clang":  # not zig's: ask it
        out = subprocess.run([*clang_command(), "-print-resource-dir"], capture_output=True,
                             encoding="utf-8", errors="replace")
        own = Path(out.stdout.strip())
        if (own / "include" / "__clang_cuda_runtime_wrapper.h").is_file():
            return None  # its own, found by itself
    spec = importlib.util.find_spec("clang")
    if spec is not None and spec.submodule_search_locations:
        res = Path(spec.submodule_search_locations[0]) / "native" / "resource"
        if (res / "include" / "__clang_cuda_runtime_wrapper.h").is_file():
            return str(res)
    raise ClangError(f"clang ({clang_identity()}) has no CUDA wrapper headers "
                     f"(__clang_cuda_runtime_wrapper.h): {INSTALL} (brings libclang-ng's)")


@functools.cache
def cuda_root() -> str:
    """A folder clang takes as ``--cuda-path``: ``CUDA_HOME`` (or ``CUDA_PATH``), else one made
    in coopgen's cache folder for the wheels' headers: ``include/`` of the CUDA runtime headers
    and an empty ``bin/`` (clang checks for it)."""
    include = None
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if home and (Path(home) / "include" / "cuda_runtime.h").is_file():
            return home
    try:
        from cuda.pathfinder import find_nvidia_header_directory
        include = find_nvidia_header_directory("cudart")
    except Exception:  # noqa: BLE001 (not found, or an older pathfinder)
        include = None
    if not include or not (Path(include) / "cuda_runtime.h").is_file():
        raise ClangError("coopgen.cute needs the CUDA runtime headers (cuda_runtime.h) for "
                         f"clang: {INSTALL} (brings cuda-toolkit[cudart,crt]) or set CUDA_HOME")
    digest = hashlib.sha256(str(Path(include).resolve()).encode()).hexdigest()[:12]
    root = _cache.root() / "clang-cuda" / digest
    (root / "bin").mkdir(parents=True, exist_ok=True)
    link = root / "include"
    if not link.exists():
        try:
            link.symlink_to(Path(include).resolve(), target_is_directory=True)
        except FileExistsError:  # another process made it meanwhile
            pass
    return str(root)


@functools.cache
def stub_dir() -> str:
    """The folder of the headers coopgen gives clang whatever the CUDA root: the prelude, and an
    empty curand header (clang's CUDA wrapper includes it; the CUDA wheels ship none)."""
    # one folder per prelude, its files written only when missing or different: a PCH that
    # read them holds their times, so no process (of another coopgen, too) may rewrite them
    version = hashlib.sha256(PRELUDE.encode()).hexdigest()[:12]
    stub = _cache.root() / "clang-cuda" / f"stub-{version}"
    stub.mkdir(parents=True, exist_ok=True)
    _write_if_changed(stub / "curand_mtgp32_kernel.h", b"")
    _write_if_changed(stub / "coopgen_clang_prelude.h", PRELUDE.encode())
    return str(stub)


def _write_if_changed(path: Path, data: bytes) -> None:
    try:
        if path.read_bytes() == data:
            return
    except OSError:
        pass
    _cache.atomic_write(path, data)


#: clang -O3 as nvcc would optimise (libNVVM inlines clang's bitcode as it is): full unrolls
#: up to 1000 instructions (LLVM's 300 left the two radix-sort passes of the bench's uint8
#: histogram a loop, which nvcc unrolls: 0.95 of its speed), and no SLP vectorizer (it packed
#: a thread's uint8 items into words, unpacked by PRMTs nvcc's code has none of).
NVCC_LIKE = ("-mllvm", "-unroll-threshold=1000", "-fno-slp-vectorize")


def options(arch: str) -> list[str]:
    """clang's options for a device-only compile of the bundle for ``arch`` ('sm_90a')."""
    root = cuda_root()
    res = resource_dir()
    generated = [o for o in registry.package().NVRTC_OPTIONS if o.startswith(("-D", "-U"))]
    return ["-x", "cuda", "--cuda-device-only", f"--cuda-gpu-arch={arch}", f"--cuda-path={root}",
            "-nocudalib", "-std=c++17", "-O3", *NVCC_LIKE, "-emit-llvm", "-c", "-w",
            "-Wno-unknown-cuda-version", *(["-resource-dir", res] if res else []),
            f"-I{stub_dir()}", f"-I{nvrtc.cccl_include_dir()}",
            "-include", "coopgen_clang_prelude.h", "-D_CCCL_META_UNROLL_LIMIT=10", *generated]


def bitcode_dir() -> Path:
    return _cache.root() / "bitcode"


def _pch_key(arch: str) -> str:
    from ..codegen.bundle import canonical_includes
    return hashlib.sha256("\0\1".join(("coopgen-clang-pch-v1", nvrtc.VERSION, clang_identity(),
                                         registry.package().HEADERS_DIGEST, *options(arch),
                                         *canonical_includes())).encode()).hexdigest()


_pch_dirs: dict[int, Path] = {}  # by process, when the cache is disabled


def _pch_folder() -> Path:
    if _cache.shim_dir() is not None:
        return _cache.root() / "clang-pch"
    if os.getpid() not in _pch_dirs:  # caching disabled: one of this process's own
        _pch_dirs[os.getpid()] = Path(tempfile.mkdtemp(prefix="coopgen-clang-pch-"))
    return _pch_dirs[os.getpid()]


@contextlib.contextmanager
def _locked(path: Path):
    """An exclusive lock on ``path`` (processes compiling at once make one PCH, not one each);
    no lock where the platform has no flock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover (Windows)
        yield
        return
    with open(path, "a+b") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def precompiled_header(arch: str) -> str | None:
    """clang's precompiled header of the canonical #include block (coopgen.codegen.bundle: every
    bundle starts with it) for ``arch``, made once per clang, headers and options and kept in
    the cache: parsing CUB's and CUDA's headers is nearly all of a bundle's compile (about 9 of
    10 s), so a compile that reads it takes about 1 s. None when ``COOPGEN_CLANG_PCH=0`` or
    clang could not make one (then each compile parses the headers)."""
    if os.environ.get("COOPGEN_CLANG_PCH", "1").strip().lower() in ("0", "off", "no"):
        return None
    key = _pch_key(arch)
    if key in _pch_failed:
        return None
    folder = _pch_folder()
    path = folder / f"{key}.pch"
    if path.is_file():
        return str(path)
    from ..codegen.bundle import canonical_includes
    folder.mkdir(parents=True, exist_ok=True)
    with _locked(folder / f"{key}.lock"):
        if path.is_file():  # another process made it while this one waited
            return str(path)
        # the PCH names its header, which must stay where it was: one per key, beside it
        header = folder / f"{key}.cuh"
        _write_if_changed(header, "".join(f"#include <{h}>\n"
                                          for h in canonical_includes()).encode())
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".pch")
        os.close(fd)
        try:
            done = subprocess.run([*clang_command(), *options(arch), "-Xclang", "-emit-pch",
                                   str(header), "-o", tmp],
                                  capture_output=True, encoding="utf-8", errors="replace")
            if done.returncode != 0 or not os.path.getsize(tmp):
                _pch_failed.add(key)
                return None
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return str(path)


_pch_failed: set = set()  # keys this process makes no PCH of (clang failed, or it went stale)
_pch_dropped: dict = {}


def _clang(source: str, arch: str, pch: str | None):
    """Run clang on ``source``: (its result, the bitcode or None)."""
    with tempfile.TemporaryDirectory(prefix="coopgen-clang-") as tmp:
        src, out = Path(tmp) / "bundle.cu", Path(tmp) / "bundle.bc"
        src.write_text(source, encoding="utf-8")
        done = subprocess.run([*clang_command(), *options(arch),
                               *(["-include-pch", pch] if pch else []), str(src), "-o", str(out)],
                              capture_output=True, encoding="utf-8", errors="replace")
        _counts["compile"] += 1
        ok = done.returncode == 0 and out.is_file()
        return done, out.read_bytes() if ok else None


def compile_bitcode(source: str, arch: str) -> str:
    """The path of the bundle's LLVM bitcode for ``arch`` (compiled, or found in the cache)."""
    opts = options(arch)
    key = hashlib.sha256("\0\1".join(("coopgen-bitcode-v1", nvrtc.VERSION, clang_identity(),
                                      registry.package().HEADERS_DIGEST, *opts, source))
                         .encode()).hexdigest()
    path = bitcode_dir() / f"{key}.bc"
    if _cache.shim_dir() is not None and path.is_file() and path.read_bytes()[:2] == b"BC":
        _counts["hit"] += 1
        return str(path)
    pch = precompiled_header(arch)
    done, data = _clang(source, arch, pch)
    if data is None and pch is not None:
        # a header changed since the PCH was made, or the PCH is damaged: parse the headers,
        # and drop the PCH if that works (the next compile makes a new one, once a process)
        done, data = _clang(source, arch, None)
        if data is not None:
            with contextlib.suppress(OSError):
                os.unlink(pch)
            _pch_dropped[pch] = _pch_dropped.get(pch, 0) + 1
            if _pch_dropped[pch] > 1:
                _pch_failed.add(_pch_key(arch))
    if data is None:
        raise ClangError(f"clang ({clang_identity()}) could not compile the CUB shims for "
                         f"{arch}", (done.stderr or done.stdout).strip())
    if _cache.shim_dir() is None:  # caching disabled: a file of this process's own
        path = Path(tempfile.mkdtemp(prefix="coopgen-bitcode-")) / f"{key}.bc"
    _cache.atomic_write(path, data)
    return str(path)


__all__ = ["ClangError", "compile_bitcode", "clang_command", "options", "precompiled_header"]
