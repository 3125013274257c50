"""What numba does not tell a lowering function: which Python function is being lowered, and
whether it is the kernel being launched (read off numba's internals by
coopgen.numba_internals.lowering_site); every answer is optional."""
from __future__ import annotations

from numba.cuda import launchconfig

from .errors import CoopgenTypeError
from .numba_internals import lowering_site as lowering_function

#: The launch whose compile is running, as primitives' typing reads it; the CPU link harness
#: (coopgen.lower.linkcheck) stands in a launch here. The lowering sites below read numba's.
current_launch_config = launchconfig.current_launch_config


def launch_config():
    return current_launch_config()


def kernel_lowering_site():
    """(func_ir, block label) when the call being lowered sits in the body of the kernel being
    launched (not a device function, which may be compiled once and called many times)."""
    cfg = launchconfig.current_launch_config()
    site = lowering_function()
    if cfg is None or site is None:
        return None
    if site[0].func_id.func is not getattr(cfg.dispatcher, "py_func", None):
        return None
    return site


def check_not_in_device_function(p, r, tkws_given: bool) -> None:
    """A device function is compiled once per signature and reused by every kernel launch,
    whatever its block shape: a block shape taken from one launch would be wrong for the next.
    Such calls must say threads_per_block= (or live in the kernel / an inline device function)."""
    cfg = launchconfig.current_launch_config()
    site = lowering_function()
    if cfg is None or site is None or tkws_given or r.block_dims is None:
        return
    func = site[0].func_id.func
    if func is not getattr(cfg.dispatcher, "py_func", None):
        raise CoopgenTypeError(
            f"{p.name}: called in the device function {func.__name__!r} without "
            f"threads_per_block=: a device function is compiled once and not re-specialised "
            f"for each launch's block shape. Pass threads_per_block=, or declare it "
            f"@cuda.jit(device=True, inline='always')")


def _cfg(func_ir):
    from numba.cuda.core.analysis import compute_cfg_from_blocks

    cfg = getattr(func_ir, "_coopgen_cfg", None)
    if cfg is None:
        cfg = compute_cfg_from_blocks(func_ir.blocks)
        func_ir._coopgen_cfg = cfg
    return cfg


def runs_once(site) -> bool:
    """Whether the call runs once per kernel execution: in the kernel, outside every loop."""
    if site is None:
        return False
    func_ir, offset = site
    return not any(offset in loop.body for loop in _cfg(func_ir).loops().values())


def may_precede(a, b) -> bool:
    """Whether the call lowered at ``a`` may run before the one at ``b`` in the same kernel
    execution. Sites are (func_ir, block label, lowering sequence number); within a block numba
    lowers statements in order. Unknown sites may."""
    if a is None or b is None or a[0] is not b[0]:
        return True
    if a[1] == b[1]:  # one block: in order, or in any order on the next trip through a loop
        return a[2] < b[2] or not runs_once(a[:2])
    return b[1] in _cfg(a[0]).descendents(a[1])


def bound_kernel_threads(builder, site, dims) -> None:
    """The kernel is specialised on its block shape: tell ptxas (``maxntid``), as
    ``__launch_bounds__`` does in C++, so it may budget registers for exactly that many threads
    (a 1024-thread block with a heavy primitive launches instead of running out of registers)."""
    from numba.cuda.cudadrv import nvvm

    fn = builder.function
    if site is None or dims is None or getattr(fn, "_coopgen_bounded", False):
        return
    nvvm.set_launch_bounds(fn, dims[0] * dims[1] * dims[2])
    fn._coopgen_bounded = True


def use_short_shared_pointers(module) -> None:
    """Give the module being lowered nvcc's data layout, in which shared-memory pointers are 32
    bits wide (``p3:32:32:32``); numba's default layout makes them 64 bits.

    With 64-bit shared pointers every shared-memory index turns into ``mul.wide``/``add.s64``
    pairs: CUB's radix sort needs about 20 more registers and runs ~10% slower than nvcc's
    build. libnvvm and nvJitLink keep the layout of the first module they are given, which is
    the kernel's, so this also narrows the pointers in the NVRTC-compiled shims it links with.
    Shared addresses always fit in 32 bits, so the narrower layout only changes code quality;
    numba's own ABI sizes come from its separate target data and are unaffected."""
    from numba.cuda.cudadrv import nvvm

    default = nvvm.NVVM().data_layout
    if module.data_layout == default and default.startswith("e-p:64:64:64-"):
        module.data_layout = default.replace("e-p:64:64:64-", "e-p:64:64:64-p3:32:32:32-", 1)
