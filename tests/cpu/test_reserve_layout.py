"""cuda.coop's layout of ``storage.reserve(...)`` under each numba compiler installed: a "shared"
TempStorage's reservations share its bytes (it holds the largest), an "exclusive" one's get
slices of their own, each call site is one array (also read as ``reserve = storage.reserve``),
and a storage past the static limit moves to dynamic shared memory."""
import importlib
import importlib.util

import numpy as np
import pytest

from coopgen import coop
from coopgen.codegen.placement import STATIC_SHARED_LIMIT, dynamic_requirement

COMPILERS = [c for c in ("numba", "numba_cuda_mlir") if importlib.util.find_spec(c)]


def _reservations(cuda, sharing):
    @cuda.jit
    def k(d_out):
        storage = coop.TempStorage(sharing=sharing)
        wide = storage.reserve(256, np.int32)  # 1024 bytes
        t = cuda.threadIdx.x
        for phase in range(2):
            reserve = storage.reserve  # one array, whichever trip round the loop
            narrow = reserve(128, np.int32)  # 512 bytes
            wide[t] = t + phase
            narrow[t] = 2 * t
            cuda.syncthreads()
            d_out[t] = wide[127 - t] + narrow[t]
    return k


def _link(compiler, make, *args):
    from coopgen.linkcheck import link_as_launched
    return link_as_launched(make(importlib.import_module(compiler).cuda, *args), 128,
                            np.zeros(128, np.int32))


@pytest.mark.parametrize("compiler", COMPILERS)
def test_shared_reservations_share_their_bytes(compiler):
    res = _link(compiler, _reservations, "shared")
    assert 1024 <= res.smem < 1536


@pytest.mark.parametrize("compiler", COMPILERS)
def test_exclusive_reservations_get_slices(compiler):
    res = _link(compiler, _reservations, "exclusive")
    assert res.smem >= 1536


def _large(cuda):
    @cuda.jit
    def k(d_out):
        storage = coop.TempStorage(sharing="exclusive")
        big = storage.reserve(13 * 1024, np.int32)
        t = cuda.threadIdx.x
        for i in range(t, 13 * 1024, 128):
            big[i] = i
        cuda.syncthreads()
        d_out[t] = coop.sum(coop.this_block(), big[t], temp_storage=storage)
    return k


@pytest.mark.parametrize("compiler", COMPILERS)
def test_a_large_reservation_is_dynamic(compiler):
    res = _link(compiler, _large)
    assert res.smem < STATIC_SHARED_LIMIT
    assert dynamic_requirement(res.cubin)[0] >= 13 * 1024 * 4


def _alignment_without_dtype(cuda):
    @cuda.jit
    def k(d_out):
        storage = coop.TempStorage()
        a = storage.reserve(128, alignment=16)  # no dtype: alignment must not take its slot
        a[cuda.threadIdx.x] = 1
        d_out[cuda.threadIdx.x] = a[cuda.threadIdx.x]
    return k


@pytest.mark.parametrize("compiler", COMPILERS)
def test_a_later_keyword_without_the_dtype_is_refused(compiler):
    with pytest.raises(Exception, match=r"TempStorage.reserve: takes \(num_elems, dtype"):
        _link(compiler, _alignment_without_dtype)
