"""The numba-cuda-mlir backend, wired up: importing it registers coopgen's types, typing and
lowering with numba-cuda-mlir's extension registries and adds it to the installed backends
(coopgen.model.backends)."""
from numba_cuda_mlir import extending as ext
from numba_cuda_mlir.numba_cuda import types

from ..model import backends
from ..types import desc
from . import arrays, bundle, objects, rewrite, typing  # noqa: F401
from .describe import host_dtype
from .describe import device_function

NAME = "numba-cuda-mlir"
PROVIDES = {"device_function": device_function, "gpu_dataclass": objects.gpu_dataclass,
            "gpu_dataclass_argument_handler": objects.DATACLASS_ARGUMENTS}
_installed = False


def register(kind: str, obj, **info) -> None:
    """An object users call, given numba-cuda-mlir typing and lowering."""
    if kind == "entry":
        typing.register(obj)
    elif kind == "array":
        arrays.register_array(obj, info["space"])
    elif kind == "entry_classes":
        primitive, primitive_class = obj
        ext.typeof_impl.register(primitive)(lambda val, c: typing.FUNCTION_TYPES[id(val)])
        ext.typeof_impl.register(primitive_class)(lambda val, c: objects.class_type(val))
    if _installed:  # made after import (a two-phase object): the compilers must see it
        ext.refresh_registries()


# Its own types before numba-cuda's reader, which fails on them (cuda.float32x2)
desc.HOST_DTYPES.insert(0, lambda v: host_dtype(v) if isinstance(v, types.Type) else None)
desc.HOST_DTYPES.append(host_dtype)
backends.installed.append(__import__(__name__, fromlist=["register"]))


def install() -> None:
    """Makes numba-cuda-mlir's compilers see the registrations."""
    global _installed
    objects.register_methods()
    ext.refresh_registries()
    _installed = True
