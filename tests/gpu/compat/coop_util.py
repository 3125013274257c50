"""Launching cuda.coop-style kernels in the compat tests, on a GPU or (link only) on the CPU.

``launch(kernel, grid, block, *args)`` launches and waits. ``link_as_launched(kernel, block,
*args)`` compiles and links the kernel for sm_90 without a GPU, as that launch would: with
the launch's block shape and argument values (kernel arguments that size arrays become
constants only when a launch compiles the kernel).
"""
from __future__ import annotations

import re

import numpy as np
from numba import cuda

from coopgen.linkcheck import launch_config_on_cpu, link_as_launched  # noqa: F401


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
