"""Launching cuda.coop-style kernels in the compat tests, on a GPU or (link only) on the CPU.

``launch(kernel, grid, block, *args)`` launches and waits. ``link_as_launched(kernel, block,
*args)`` compiles and links the kernel for sm_90 without a GPU, as that launch would: with
the launch's block shape and argument values (kernel arguments that size arrays become
constants only when a launch compiles the kernel).
"""
from __future__ import annotations

import contextlib
import re

import numpy as np
from numba import cuda


class _CpuDispatcher:
    """The launching dispatcher, as the compile sees it: the kernel's function."""

    _launch_config_key = staticmethod(lambda cfg: (cfg.blockdim,))

    def __init__(self, py_func):
        self.py_func = py_func

    def mark_launch_config_sensitive(self):
        pass


class _CpuLaunchConfig:
    def __init__(self, py_func, block, args):
        block = block if isinstance(block, tuple) else (block,)
        self.blockdim = tuple(block) + (1,) * (3 - len(block))
        self.args = args
        self.dispatcher = _CpuDispatcher(py_func)


@contextlib.contextmanager
def launch_config_on_cpu(kernel, block, args):
    from coopgen import calls
    saved = calls.current_launch_config
    cfg = _CpuLaunchConfig(getattr(kernel, "py_func", kernel), block, args)
    calls.current_launch_config = lambda: cfg
    try:
        yield cfg
    finally:
        calls.current_launch_config = saved


def link_as_launched(kernel, block, *args):
    """Link ``kernel`` for sm_90 as ``kernel[grid, block](*args)`` would compile it."""
    from numba.cuda.typing.typeof import typeof  # the kernel dispatcher's typeof
    from coopgen.linkcheck import link_cubin
    sig = tuple(typeof(a) for a in args)
    with launch_config_on_cpu(kernel, block, args):
        return link_cubin(kernel, sig)


def launch(kernel, grid, block, *args):
    kernel[grid, block](*args)
    cuda.synchronize()


def assert_no_local_memory(kernel):
    """No LDL/STL in any compiled specialisation's SASS (cuda.coop code checks this)."""
    # the kernel and the specialisations its launches made (per block shape, per size)
    specialised = getattr(kernel, "_launch_config_specializations", {})
    for dispatcher in [kernel, *specialised.values()]:
        for sig in dispatcher.overloads:
            sass = dispatcher.inspect_sass(sig)
            found = sorted(set(re.findall(r"\b(LDL|STL)(?:\.\w+)*\b", sass)))
            assert not found, f"{kernel.__name__}{sig}: local memory traffic {found}"


def rng():
    return np.random.default_rng()
