"""Where the CUDA compiler libraries come from and which versions they are (for `coopgen doctor`)."""
from __future__ import annotations


def _lib_path(name: str) -> str:
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib
        return load_nvidia_dynamic_lib(name).abs_path or "?"
    except Exception as e:  # pragma: no cover - reported, not raised
        return f"not found: {e}"


def describe() -> dict[str, tuple[str, str]]:
    """{library: (version, path)}; version is "not found" when the library cannot be loaded."""
    out = {}
    try:
        from cuda.bindings import nvrtc
        err, major, minor = nvrtc.nvrtcVersion()
        out["NVRTC"] = (f"{major}.{minor}", _lib_path("nvrtc"))
    except Exception as e:
        out["NVRTC"] = ("not found", str(e))
    try:
        from cuda.bindings import nvjitlink
        v = nvjitlink.version()
        out["nvJitLink"] = (".".join(map(str, v)), _lib_path("nvJitLink"))
    except Exception as e:
        out["nvJitLink"] = ("not found", str(e))
    try:
        from cuda.bindings import nvvm
        v = nvvm.version()
        out["NVVM"] = (".".join(map(str, v)), _lib_path("nvvm"))
    except Exception as e:
        out["NVVM"] = ("not found", str(e))
    return out
