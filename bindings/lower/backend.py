"""The numba-cuda backend, wired up: importing it registers coopgen's types, typing and lowering
with numba-cuda and answers what the numba-free stages ask of a backend."""
from ..codegen import nvrtc, toolchain
from ..types import desc
from . import launch_hook, numba_internals, rewrite, typing  # noqa: F401
from .describe import host_dtype


def _current_device_cc():
    from numba import cuda
    return cuda.get_current_device().compute_capability if cuda.is_available() else None


def _numba_nvvm_path():
    from numba.cuda.cuda_paths import get_cuda_paths
    return get_cuda_paths()["nvvm"].info


desc.HOST_DTYPES.append(host_dtype)
nvrtc.current_device_cc = _current_device_cc
toolchain.backend_nvvm_path = _numba_nvvm_path


def install() -> None:
    """Hooks into numba-cuda's kernel cache and launches (once the package is imported)."""
    numba_internals.install_kernel_cache()
    launch_hook.install()
