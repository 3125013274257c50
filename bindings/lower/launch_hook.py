"""Launch kernels whose coopgen storage lives in dynamic shared memory (codegen.placement) with
no extra step: each launch needs more dynamic bytes than asked, past 48 KB with the function's
attribute raised. numba-cuda's ``pre_launch_callbacks`` run after the size is read, so this
wraps ``_Kernel.launch``, the one internal it touches (:func:`check_internals`). Kernels without
such storage pay one dictionary lookup.
"""
from __future__ import annotations

import inspect

from numba.cuda.cudadrv.linkable_code import LTOIR

from ..codegen.placement import dynamic_requirement, launch_bytes

#: ``_Kernel.launch``'s parameters in the numba-cuda versions this wrapper follows.
LAUNCH_PARAMETERS = ("self", "args", "griddim", "blockdim", "stream", "sharedmem")
_NEED = "_coopgen_dynamic_shared_need"  # per kernel: (bytes, alignment) or None
_ATTRIBUTE = "_coopgen_max_dynamic_shared"  # per kernel: device id -> attribute value set


def check_internals() -> None:
    """Raise if numba-cuda's launch path is not the one this module wraps."""
    from numba.cuda.dispatcher import _Kernel as kernel
    params = tuple(inspect.signature(kernel.launch).parameters)
    if params != LAUNCH_PARAMETERS:
        raise RuntimeError(
            f"coopgen: numba-cuda's _Kernel.launch takes {params}, not {LAUNCH_PARAMETERS}: "
            f"coopgen cannot add dynamic shared memory to launches of this numba-cuda")


def _kernel_name(kernel) -> str:
    func = getattr(kernel, "py_func", None)
    return getattr(func, "__qualname__", None) or kernel._codelibrary.name


def _need(kernel):
    """(bytes, alignment) of its storage in dynamic shared memory, or None; read from the cubin,
    so kernels loaded from numba's cache keep it."""
    if _NEED not in kernel.__dict__:
        library = kernel._codelibrary
        ours = any(isinstance(f, LTOIR) and str(f.name).startswith("coopgen-")
                   for f in library._linking_files)
        kernel.__dict__[_NEED] = dynamic_requirement(library.get_cubin()) if ours else None
    return kernel.__dict__[_NEED]


def _set_max_dynamic_shared(kernel, user_bytes: int, need) -> int:
    """The launch's dynamic bytes; raises the function's limit to them when needed."""
    from cuda.bindings import driver as binding
    from numba.cuda.cudadrv.driver import driver

    total = launch_bytes(user_bytes, need)
    cufunc = kernel._codelibrary.get_cufunc()
    device = cufunc.device
    done = kernel.__dict__.setdefault(_ATTRIBUTE, {})
    if done.get(device.id, -1) >= total:
        return total
    static = cufunc.attrs.shared
    limit = device.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    if static + total > limit:
        raise ValueError(
            f"coopgen: kernel {_kernel_name(kernel)!r} needs {static + total} bytes of shared "
            f"memory per block ({need[0]} of coopgen storage in dynamic shared memory, "
            f"{user_bytes} dynamic bytes from the launch, {static} static), more than the "
            f"device max opt-in of {limit} bytes per block")
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attr, total, cufunc.handle, device.id)
    done[device.id] = total
    return total


def install() -> bool:
    from numba.cuda.dispatcher import _Kernel as kernel_class
    if getattr(kernel_class, "_coopgen_launch_hook", False):
        return True
    check_internals()
    original = kernel_class.launch

    def launch(self, args, griddim, blockdim, stream=0, sharedmem=0):
        need = _need(self)
        if need is not None:
            sharedmem = _set_max_dynamic_shared(self, sharedmem, need)
        return original(self, args, griddim, blockdim, stream, sharedmem)

    launch.__doc__ = original.__doc__
    kernel_class.launch = launch
    kernel_class._coopgen_launch_hook = True
    return True
