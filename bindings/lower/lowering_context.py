"""What numba does not tell a lowering function: which Python function is being lowered, and
whether it is the kernel being launched (read off numba's internals by
coopgen.numba_internals.lowering_site); every answer is optional."""
import math

from numba.cuda import launchconfig
from numba.cuda.cudadrv import nvvm

from .errors import CoopgenTypeError
from .numba_internals import lowering_site as lowering_function

#: The launch whose compile is running, as primitives' typing reads it; the CPU link harness
#: (coopgen.lower.linkcheck) stands in a launch here. The lowering sites below read numba's.
current_launch_config = launchconfig.current_launch_config


def launch_config():
    return current_launch_config()


def _launched_site():
    """(site, whether it is in the kernel numba is launching) or (None, False)."""
    cfg, site = launchconfig.current_launch_config(), lowering_function()
    if cfg is None or site is None:
        return None, False
    return site, site[0].func_id.func is getattr(cfg.dispatcher, "py_func", None)


def kernel_lowering_site():
    """(func_ir, block label) when the call being lowered sits in the body of the kernel being
    launched (not a device function, which may be compiled once and called many times)."""
    site, in_kernel = _launched_site()
    return site if in_kernel else None


def check_not_in_device_function(p, r, tkws_given: bool) -> None:
    """A device function is compiled once and reused by every launch, whatever its block shape:
    its calls must say threads_per_block= (or be inlined)."""
    site, in_kernel = _launched_site()
    if site is not None and not in_kernel and not tkws_given and r.block_dims is not None:
        raise CoopgenTypeError(
            f"{p.name}: called in the device function {site[0].func_id.func.__name__!r} without "
            f"threads_per_block=: a device function is compiled once and not re-specialised "
            f"for each launch's block shape. Pass threads_per_block=, or declare it "
            f"@cuda.jit(device=True, inline='always')")


def _cfg(func_ir):
    from numba.cuda.core.analysis import compute_cfg_from_blocks
    if getattr(func_ir, "_coopgen_cfg", None) is None:
        func_ir._coopgen_cfg = compute_cfg_from_blocks(func_ir.blocks)
    return func_ir._coopgen_cfg


def runs_once(site) -> bool:
    """Whether the call runs once per kernel execution: in the kernel, outside every loop."""
    return site is not None and not any(
        site[1] in loop.body for loop in _cfg(site[0]).loops().values())


def may_precede(a, b) -> bool:
    """Whether the call at site ``a`` (func_ir, block label, lowering sequence number) may run
    before the one at ``b``; numba lowers a block in order. Unknown sites may."""
    if a is None or b is None or a[0] is not b[0]:
        return True
    if a[1] == b[1]:  # one block: in order, or in any order on the next trip through a loop
        return a[2] < b[2] or not runs_once(a[:2])
    return b[1] in _cfg(a[0]).descendents(a[1])


def bound_kernel_threads(builder, site) -> None:
    """Tell ptxas the block shape the kernel (where the call at ``site`` sits) is specialised on
    (``maxntid``, C++'s ``__launch_bounds__``): a 1024-thread block of a heavy primitive then
    gets its registers."""
    fn, cfg = builder.function, launch_config()
    if site is None or cfg is None or getattr(fn, "_coopgen_bounded", False):
        return
    nvvm.set_launch_bounds(fn, math.prod(cfg.blockdim))
    fn._coopgen_bounded = True


def use_short_shared_pointers(module) -> None:
    """nvcc's data layout, with 32-bit shared-memory pointers (``p3:32:32:32``): numba's 64-bit
    ones cost CUB's radix sort ~20 registers and ~10%. libnvvm and nvJitLink keep the first
    module's layout, the kernel's, so the shims' pointers narrow too; numba's ABI sizes come
    from its separate target data."""
    default = nvvm.NVVM().data_layout
    if module.data_layout == default and default.startswith("e-p:64:64:64-"):
        module.data_layout = default.replace("e-p:64:64:64-", "e-p:64:64:64-p3:32:32:32-", 1)
