"""float16, bfloat16, complex64/128 and numba-cuda's vector types compile and LTO-link for sm_90
without a GPU, wherever CUB takes them (issue 18's acceptance list); where CUB does not, the
error says so and why."""
import re

import numba
import numpy as np
import pytest
from numba import cuda
from numba.cuda import types
from numba.cuda.vector_types import vector_types

import coopgen
from coopgen import block, coop, local, warp
from coopgen.linkcheck import link_cubin

HALVES = ("float16", "bfloat16")
COMPLEX = ("complex64", "complex128")
NUMBA = {"float16": types.float16, "bfloat16": types.bfloat16, "complex64": types.complex64,
         "complex128": types.complex128}


@cuda.jit(device=True)
def less(a, b):
    return a < b


@cuda.jit(device=True)
def less_real(a, b):
    return a.real < b.real


@cuda.jit(device=True)
def add(a, b):
    return a + b


def _kernel(what):
    """Load a tile, apply ``what``, store it; results of reductions go to d_out[0]."""
    def k(d_in, d_out):
        items = local.array(4, d_in.dtype)
        base = cuda.blockIdx.x * 128 * 4
        block.load(d_in[base:], items)
        if what == "sum":
            d_out[0] = block.sum(items)
        elif what == "exclusive_sum":
            block.exclusive_sum(items, items)
        elif what == "radix":
            block.radix_sort_keys(items)
        elif what == "merge":
            block.merge_sort_keys(items, less)
        elif what == "merge_complex":
            block.merge_sort_keys(items, less_real)
        elif what == "reduce_fn":
            d_out[0] = block.reduce(items, 4, add)
        elif what == "max":
            d_out[0] = block.reduce(items, 4, "max")
        elif what == "warp_sum":
            d_out[0] = warp.sum(items[0])
        elif what == "warp_max":
            d_out[0] = warp.WarpReduce.Max(items[0])
        elif what == "faithful_scan":
            block.BlockScan.InclusiveScan(items, items, "+")
        block.store(d_out[base:], items)
    return k


def _link(name, what):
    arr = types.Array(NUMBA[name], 1, "C")
    with coopgen.block_shape(128):
        res = link_cubin(_kernel(what), (arr, arr))
    assert res.kernel.local_bytes == 0, (name, what)


LINKED = ([(t, w) for t in HALVES for w in ("sum", "exclusive_sum", "radix", "merge",
                                             "reduce_fn", "max", "warp_sum", "faithful_scan")]
          + [(t, w) for t in COMPLEX for w in ("sum", "exclusive_sum", "merge_complex",
                                                "reduce_fn", "warp_sum")])


@pytest.mark.parametrize("name,what", LINKED, ids=[f"{t}-{w}" for t, w in LINKED])
def test_links(name, what):
    _link(name, what)


REFUSED = [("complex64", "radix", "CUB's radix sort orders keys by their bits"),
           ("complex128", "max", "'max' is not defined for items of complex128: C++ does not "
                                 "order complex numbers"),
           ("complex64", "warp_max", "CUB's Max is not defined for items of complex64: C++ "
                                     "does not order complex numbers")]


@pytest.mark.parametrize("name,what,why", REFUSED, ids=[f"{t}-{w}" for t, w, _ in REFUSED])
def test_refused_with_the_reason(name, what, why):
    with pytest.raises(Exception, match=re.escape(why)):
        _link(name, what)


VECTORS = ("float32x2", "float32x4", "uint32x4", "int32x2")


@pytest.mark.parametrize("name", VECTORS)
def test_coop_make_load_store_of_vector_types(name):
    """``coop.block.make_load(numba.cuda.float32x2, 32, 1)`` and its store, on shared tiles."""
    vec = getattr(cuda, name)
    load = coop.block.make_load(vec, 32, 2)
    store = coop.block.make_store(vec, 32, 2)

    def k(d_out):
        tile = coopgen.shared.array(64, vec)
        items = coopgen.local.array(2, vec)
        load(tile, items)
        store(tile, items)
        d_out[cuda.threadIdx.x] = tile[cuda.threadIdx.x].x

    lane = vector_types[name].base_type
    res = link_cubin(k, (types.Array(lane, 1, "C"),))
    assert res.kernel.local_bytes == 0


def test_vector_types_have_no_sum():
    def k(d_out):
        items = local.array(2, numba.cuda.float32x2)
        d_out[0] = block.sum(items).x

    with coopgen.block_shape(64), pytest.raises(Exception, match="adds items with \\+, which "
                                                "items of float32x2 do not have"):
        link_cubin(k, (types.float32[::1],))


def test_host_dtypes():
    from coopgen.lower.describe import host_dtype
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert str(host_dtype(ml_dtypes.bfloat16)) == "bfloat16"
    assert str(host_dtype(numba.cuda.bfloat16)) == "bfloat16"
    assert str(host_dtype(np.float16)) == "float16"
    assert str(host_dtype(numba.cuda.uint32x4)) == "uint32x4"
