"""The numba-cuda backend, wired up: importing it registers coopgen's types, typing and lowering
with numba-cuda, answers what the numba-free stages ask of a backend, and adds it to the
installed backends (coopgen.model.backends)."""
from numba.cuda.extending import typeof_impl

from ..codegen import nvrtc, toolchain
from ..model import backends
from ..types import desc
from . import arrays, host_objects, launch_hook, numba_internals, rewrite, typing  # noqa: F401
from .describe import host_dtype
from .describe import device_function

NAME = "numba-cuda"
PROVIDES = {"gpu_dataclass": host_objects.gpu_dataclass, "device_function": device_function,
            "gpu_dataclass_argument_handler": host_objects.ARGUMENTS}


def _current_device_cc():
    from numba import cuda
    return cuda.get_current_device().compute_capability if cuda.is_available() else None


def _numba_nvvm_path():
    from numba.cuda.cuda_paths import get_cuda_paths
    return get_cuda_paths()["nvvm"].info


def register(kind: str, obj, **info) -> None:
    """An object users call, given numba-cuda typing and lowering (model.backends.register)."""
    if kind == "entry":
        typing.register(obj)
    elif kind == "array":
        arrays.register_array(obj, info["space"])
    elif kind == "entry_classes":  # as callees, or as kernel arguments (two-phase objects)
        primitive, primitive_class = obj
        for cls, own in ((primitive, lambda val: val._nbtype),
                         (primitive_class, typing.PrimitiveClassType)):
            typeof_impl.register(cls)(
                lambda val, c, own=own: host_objects.as_argument(val, c) or own(val))
        host_objects.ENTRY_CLASSES += obj


desc.HOST_DTYPES.append(host_dtype)
nvrtc.current_device_cc = nvrtc.current_device_cc or _current_device_cc
toolchain.backend_nvvm_path = toolchain.backend_nvvm_path or _numba_nvvm_path
backends.installed.append(__import__(__name__, fromlist=["register"]))


def install() -> None:
    """Hooks into numba-cuda's kernel cache and launches (once the package is imported)."""
    numba_internals.install_kernel_cache()
    launch_hook.install()
