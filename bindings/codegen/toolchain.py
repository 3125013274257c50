"""Whether the CUDA compiler libraries belong together: NVRTC (the shims), NVVM (numba-cuda's
kernels) and nvJitLink make LTO-IR of one CUDA major, and a driver must be of it or newer.
:func:`require_consistent` raises one ToolchainError before the first compile (not an nvJitLink
error wall); :func:`problems` tells ``coopgen doctor``. NVVM's C API must answer (else it is
not a libNVVM this process can use); its CUDA major comes from the package or toolkit holding it,
else from its IR's debug version where that tells (``nvvmVersion`` says 2.0 in CUDA 12 and 13
alike); a major neither tells is a problem too."""
import contextlib
import ctypes
import functools
import importlib
import importlib.metadata
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

#: Distributions that ship libNVVM, by CUDA major (numba-cuda looks in this order).
NVVM_DISTRIBUTIONS = ("nvidia-cuda-nvcc-cu12", "nvidia-nvvm", "nvidia-cuda-nvcc")


class ToolchainError(RuntimeError):
    """The CUDA compiler libraries found do not form one toolchain."""


@dataclass(frozen=True)
class Part:
    name: str  # "NVRTC", "nvJitLink", "NVVM"
    version: str  # "13.0", "12.9.86", "not found"
    major: int | None  # its CUDA major; None when unknown or not found
    where: str  # the library's path, or why it was not found

    def __str__(self) -> str:
        return f"{self.name} {self.version} ({self.where})"


def lib_path(name: str) -> str:
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
        return load_nvidia_dynamic_lib(name).abs_path or "?"
    except Exception as e:  # pragma: no cover - reported, not raised
        return f"not found: {e}"


def _probe(name: str, lib: str, version) -> Part:
    """``name`` as found: ``version()`` gives its version numbers, or raises when it is missing."""
    try:
        v = version()
        return Part(name, ".".join(map(str, v)), v[0], lib_path(lib))
    except Exception as e:
        return Part(name, "not found", None, str(e))


def nvrtc_version() -> tuple[int, int]:
    from cuda.bindings import nvrtc
    err, major, minor = nvrtc.nvrtcVersion()
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise RuntimeError(f"nvrtcVersion failed: {err.name}")
    return major, minor


#: () -> the libNVVM path the backend compiles kernels with (coopgen.lower sets it), or None.
backend_nvvm_path = None


def cuda_version_of(path: str) -> tuple[str, int | None]:
    """(version, CUDA major) of the pip package or toolkit holding the library at ``path``."""
    real = os.path.realpath(path)
    for dist_name in NVVM_DISTRIBUTIONS:
        with contextlib.suppress(importlib.metadata.PackageNotFoundError):
            dist = importlib.metadata.distribution(dist_name)
            base = os.path.realpath(dist.locate_file(""))
            rel = Path(os.path.relpath(real, base)).as_posix()
            if real.startswith(base + os.sep) and any(str(f) == rel for f in dist.files or ()):
                return dist.version, int(dist.version.split(".")[0])
    for parent in Path(real).parents:  # a CUDA toolkit: what it says of its version
        if version := _toolkit_version(parent):
            return version, int(version.split(".")[0])
    return "?", None


def _toolkit_version(root: Path) -> str | None:
    """The CUDA version of a toolkit folder: its version.json, its nvvm package's dist-info, or
    (in system installs that ship neither) the CUDA_VERSION its cuda.h defines."""
    with contextlib.suppress(ValueError, KeyError, OSError):  # none, or not readable
        return json.loads((root / "version.json").read_text(encoding="utf-8"))["cuda"]["version"]
    if infos := sorted((root / "dist-info").glob("nvidia_nvvm-*.dist-info")):
        return infos[-1].name[len("nvidia_nvvm-"):-len(".dist-info")]
    for header in [root / "include" / "cuda.h", *root.glob("targets/*/include/cuda.h")]:
        with contextlib.suppress(OSError):
            if found := re.search(r"^#define CUDA_VERSION (\d+)$", header.read_text(encoding="utf-8"), re.M):
                number = int(found.group(1))
                return f"{number // 1000}.{number % 1000 // 10}"
    return None


#: CUDA major by the debug metadata version of NVVM IR (``nvvmIRVersion``'s last two numbers),
#: where it tells one: 3.1 is CUDA 12.3's, but 3.2 is both CUDA 12.9's and 13's.
NVVM_DEBUG_VERSION_MAJORS = {(3, 1): 12}


def nvvm_library_version(path: str) -> tuple[tuple[int, int], tuple[int, int, int, int]]:
    """(``nvvmVersion``, ``nvvmIRVersion``) of the libNVVM file at ``path``, from its C API."""
    lib, numbers = ctypes.CDLL(path), [ctypes.c_int() for _ in range(6)]
    if lib.nvvmVersion(*map(ctypes.byref, numbers[:2])) or lib.nvvmIRVersion(
            *map(ctypes.byref, numbers[2:])):
        raise RuntimeError("nvvmVersion or nvvmIRVersion failed")
    return tuple(n.value for n in numbers[:2]), tuple(n.value for n in numbers[2:])


def _nvvm() -> Part:
    """The libNVVM the backend compiles kernels with (its own search), else pathfinder's."""
    path = None
    with contextlib.suppress(Exception):  # an older or newer backend layout: fall back
        path = backend_nvvm_path and backend_nvvm_path()
    path = path if path and os.path.isfile(path) else lib_path("nvvm")
    if path.startswith("not found"):
        return Part("NVVM", "not found", None, path)
    package_version, package_major = cuda_version_of(path)
    try:
        version, ir = nvvm_library_version(path)
    except Exception as e:  # not a libNVVM this process can load or ask
        return Part("NVVM", "?", None, f"{path}; its version cannot be read: {e}")
    major = package_major if package_major is not None else NVVM_DEBUG_VERSION_MAJORS.get(ir[2:])
    shown = package_version if package_version != "?" else f"CUDA {major or '?'}"
    return Part("NVVM", f"{shown} (libNVVM {version[0]}.{version[1]}, IR {ir[0]}.{ir[1]} "
                f"debug {ir[2]}.{ir[3]})", major, path)


@functools.lru_cache(maxsize=None)
def parts() -> tuple[Part, ...]:
    """NVRTC, nvJitLink and NVVM as this process loads them."""
    return (_probe("NVRTC", "nvrtc", nvrtc_version),
            _probe("nvJitLink", "nvJitLink",
                   lambda: importlib.import_module("cuda.bindings.nvjitlink").version()),
            _nvvm())


@functools.lru_cache(maxsize=None)
def driver_version() -> tuple[int, int] | None:
    """The CUDA version of the installed driver, e.g. (13, 0); None without a driver."""
    with contextlib.suppress(Exception):  # no libcuda: a machine without a GPU
        from cuda.bindings import driver
        err, v = driver.cuDriverGetVersion()
        if err == driver.CUresult.CUDA_SUCCESS and v:
            return (v // 1000, v % 1000 // 10)
    return None


def problems(found: tuple[Part, ...] | None = None,
             driver: tuple[int, int] | None | str = "probe") -> list[str]:
    """What keeps the toolchain from working, one sentence each naming the parts and the fix;
    empty when NVRTC, nvJitLink and NVVM are one CUDA major that the driver (if any) runs."""
    found = parts() if found is None else found
    driver = driver_version() if driver == "probe" else driver
    out = []
    missing = [p for p in found if p.version == "not found"]
    majors = {p.major for p in found if p.major is not None}
    want = max(majors) if majors else None
    if not want:  # nothing to go by but cuda-bindings' major
        with contextlib.suppress(importlib.metadata.PackageNotFoundError, ValueError):
            want = int(importlib.metadata.version("cuda-bindings").split(".")[0])
    if missing:
        out.append(f"missing: {'; '.join(map(str, missing))}. Fix: pip install "
                   f"'coopgen[cu{want or 13}]'")
    if unknown := [p for p in found if p.major is None and p not in missing]:
        known = ", ".join(f"{p.name} {p.version}" for p in found if p.major is not None)
        out.append(f"unknown CUDA major: {'; '.join(map(str, unknown))}; beside {known or 'none'}"
                   f" it may make LTO-IR of another major, which does not link. Fix: pip install "
                   f"'coopgen[cu{want or 13}]' (or uninstall the toolkit or packages holding it)")
    if len(majors) > 1:
        listed = ", ".join(f"{p.name} {p.version} from {p.where}" for p in found
                           if p.major is not None)
        out.append(f"mixed CUDA majors: {listed}. LTO-IR of one major does not link with "
                   f"another: install one toolchain, 'coopgen[cu12]' or 'coopgen[cu13]', in a "
                   f"fresh environment (or uninstall the other major's packages)")
    if driver is not None and majors and max(majors) > driver[0]:
        out.append(f"the driver runs CUDA {driver[0]}.{driver[1]}, older than the CUDA "
                   f"{max(majors)} toolchain ({', '.join(f'{p.name} {p.version}' for p in found)})"
                   f": its cubins do not load. Fix: pip install 'coopgen[cu{driver[0]}]', or "
                   f"update the driver")
    return out


@functools.cache  # a raise is not cached: it checks again until it passes once
def require_consistent() -> None:
    """Raise :class:`ToolchainError` unless :func:`problems` finds none."""
    found = problems()
    if found:
        raise ToolchainError("coopgen: the CUDA toolchain cannot compile and link kernels:\n  "
                             + "\n  ".join(found))
