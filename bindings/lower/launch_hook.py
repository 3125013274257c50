"""Launch kernels whose coopgen storage lives in dynamic shared memory (codegen.placement) with
no extra step: each launch needs more dynamic bytes than asked, past 48 KB with the function's
attribute raised. numba-cuda reads a launch's size before its ``pre_launch_callbacks`` run, so
this wraps ``_Kernel.launch`` (:func:`check_internals`); kernels without such storage pay a
dictionary lookup and a thread-local read. As in cuda.coop, the launch configuration reports the
real total: a callback the kernel's compile registers (:func:`report_on`) sets its
``sharedmem``, and the dispatcher keys its kernels on the bytes the user asked for (reporting
compiles nothing again)."""
import inspect
import threading
from types import SimpleNamespace

from numba.cuda.cudadrv.linkable_code import LTOIR

from ..codegen.placement import dynamic_requirement, launch_bytes

#: ``_Kernel.launch``'s parameters in the numba-cuda versions this wrapper follows.
LAUNCH_PARAMETERS = ("self", "args", "griddim", "blockdim", "stream", "sharedmem")
_NEED = "_coopgen_dynamic_shared_need"  # per kernel: (bytes, alignment) or None
_ATTRIBUTE = "_coopgen_max_dynamic_shared"  # per kernel: device id -> attribute value set
_REQUESTED = "_coopgen_requested_sharedmem"  # per launch configuration: the user's bytes
#: The report's word to the launch that follows it: (kernel, user's bytes, total).
_reported = threading.local()


def check_internals() -> None:
    """Raise if numba-cuda's launch path is not the one this module wraps."""
    from numba.cuda.dispatcher import CUDADispatcher, _Kernel as kernel
    params = tuple(inspect.signature(kernel.launch).parameters)
    if params != LAUNCH_PARAMETERS:
        raise RuntimeError(
            f"coopgen: numba-cuda's _Kernel.launch takes {params}, not {LAUNCH_PARAMETERS}: "
            f"coopgen cannot add dynamic shared memory to launches of this numba-cuda")
    key = inspect.getattr_static(CUDADispatcher, "_launch_config_key", None)
    if not isinstance(key, staticmethod) or len(inspect.signature(key).parameters) != 1:
        raise RuntimeError("coopgen: numba-cuda's CUDADispatcher._launch_config_key is no "
                           "staticmethod of the launch configuration")


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
        name = getattr(kernel.py_func, "__qualname__", None) or kernel._codelibrary.name
        raise ValueError(
            f"coopgen: kernel {name!r} needs {static + total} bytes of shared "
            f"memory per block ({need[0]} of coopgen storage in dynamic shared memory, "
            f"{user_bytes} dynamic bytes from the launch, {static} static), more than the "
            f"device max opt-in of {limit} bytes per block")
    attr = binding.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver.cuKernelSetAttribute(attr, total, cufunc.handle, device.id)
    done[device.id] = total
    return total


def report_on(cfg) -> None:
    """Have the launch ``cfg`` (its compile is running) report its kernel's dynamic shared
    memory in ``cfg.sharedmem`` from now on."""
    callbacks = getattr(cfg, "pre_launch_callbacks", None)
    if callbacks is not None and report_total not in callbacks:
        callbacks.append(report_total)


def report_total(kernel, cfg) -> None:
    """Pre-launch callback: ``cfg.sharedmem`` becomes the launch's dynamic bytes, the user's and
    this kernel's storage, as cuda.coop reports them. One configuration launches every dtype's
    specialization: a kernel without such storage gets the user's bytes, not another's total."""
    need = _need(kernel)
    if need is None and _REQUESTED not in cfg.__dict__:
        return  # never reported: the configuration holds the user's bytes
    read = cfg.sharedmem  # what numba read before its callbacks, and passes to the launch
    requested = cfg.__dict__.setdefault(_REQUESTED, read)
    cfg.sharedmem = requested if need is None else launch_bytes(requested, need)
    _reported.last = (kernel, read, requested)


def _requested(kernel, sharedmem: int) -> int:
    """The user's dynamic bytes of a launch numba gives ``sharedmem`` (read before the report)."""
    reported, read, requested = getattr(_reported, "last", None) or (None, 0, 0)
    _reported.last = None
    return requested if reported is kernel and sharedmem == read else sharedmem


def _keyed_on_request(key):
    """numba's launch key, of the bytes the user asked for where a report changed them."""
    def launch_config_key(cfg):
        requested = getattr(cfg, "__dict__", {}).get(_REQUESTED)
        return key(cfg if requested is None else SimpleNamespace(**{**vars(cfg),
                                                                    "sharedmem": requested}))
    return staticmethod(launch_config_key)


def install() -> bool:
    from numba.cuda.dispatcher import CUDADispatcher, _Kernel as kernel_class
    if getattr(kernel_class, "_coopgen_launch_hook", False):
        return True
    check_internals()
    original = kernel_class.launch

    def launch(self, args, griddim, blockdim, stream=0, sharedmem=0):
        sharedmem = _requested(self, sharedmem)
        if (need := _need(self)) is not None:
            sharedmem = _set_max_dynamic_shared(self, sharedmem, need)
        return original(self, args, griddim, blockdim, stream, sharedmem)

    launch.__doc__ = original.__doc__
    kernel_class.launch = launch
    CUDADispatcher._launch_config_key = _keyed_on_request(CUDADispatcher._launch_config_key)
    kernel_class._coopgen_launch_hook = True
    return True
