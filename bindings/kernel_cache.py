"""Whole-kernel disk caching: let numba-cuda's ``@cuda.jit(cache=True)`` keep kernels that
link coopgen's LTO-IR.

numba-cuda 0.30.4 refuses to pickle a code library that has linking files ("Cannot pickle
CUDACodeLibrary with linking files"), so kernels calling primitives could not use its cache.
coopgen's linking files are in-memory LTO-IR objects (the kernel's shim bundle, compiled
operators): this module stores their bytes with the library and restores them on load, which
is all the linker needs. A second process then loads the kernel without typing, lowering,
NVVM or NVRTC work. Other linking files keep numba's behaviour.
"""
from __future__ import annotations

import numba_cuda
from numba.cuda.codegen import CUDACodeLibrary
from numba.cuda.cudadrv.linkable_code import LTOIR

SUPPORTED_NUMBA_CUDA = "0.30.4"  # the patch follows this version's CUDACodeLibrary

_original_reduce = CUDACodeLibrary._reduce_states
_original_rebuild = CUDACodeLibrary._rebuild.__func__


def _reduce_states(self):
    ours = [f for f in self._linking_files if isinstance(f, LTOIR)]
    if not ours:
        return _original_reduce(self)
    if self._entry_name is not None:
        # Link now (the first launch would, in this process) so the cache holds the cubin and
        # a later process skips the link-time optimisation too.
        try:
            self.get_cubin()
        except Exception:  # no device to pick the arch: the loader links instead
            pass
    saved = self._linking_files
    self._linking_files = {f for f in saved if not isinstance(f, LTOIR)}
    try:
        state = _original_reduce(self)
    finally:
        self._linking_files = saved
    state["coopgen_ltoir"] = tuple((f.name, bytes(f.data)) for f in
                                   sorted(ours, key=lambda f: str(f.name)))
    return state


def _rebuild(cls, coopgen_ltoir=(), **state):
    instance = _original_rebuild(cls, **state)
    for name, data in coopgen_ltoir:
        instance._linking_files.add(LTOIR(data, name=name))
    return instance


def install() -> bool:
    if numba_cuda.__version__ != SUPPORTED_NUMBA_CUDA:
        return False  # another numba-cuda: leave its cache as it is
    if getattr(CUDACodeLibrary, "_coopgen_cache", False):
        return True
    CUDACodeLibrary._reduce_states = _reduce_states
    CUDACodeLibrary._rebuild = classmethod(_rebuild)
    CUDACodeLibrary._coopgen_cache = True
    return True
