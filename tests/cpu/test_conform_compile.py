"""The host side of cuda.coop's two-phase call shapes (tests/gpu/compat/conform_kernels.py,
whose kernels tests/cpu/test_coop_compile.py links for sm_90): what the objects keep, and
cuda.coop's submodules."""
import sys
from pathlib import Path

import numba
import pytest

import coopgen

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu" / "compat"))

from coopgen import coop
from conform_kernels import TILE_TOTAL  # noqa: E402


def test_a_declared_prefix_callback_is_passed_by_each_call():
    scan = coop.block.make_exclusive_sum(numba.int32, 64, 2, prefix_op=TILE_TOTAL)
    assert "block_prefix_callback_op" not in scan.call_fixed
    assert "prefix_op" in scan.shape.slots


def test_none_on_the_host_is_an_omitted_argument():
    scan = coop.block.make_exclusive_scan(numba.int32, 64, 2, scan_op="max",
                                          initial_value=None)
    assert "initial_value" not in scan.call_fixed


def test_submodules_import_as_cuda_coops():
    from coopgen.coop._types import Invocable
    from coopgen.coop.block import BlockAdjacentDifferenceType, make_load
    from coopgen.coop.warp import WarpExchangeType
    assert BlockAdjacentDifferenceType is coop.block.BlockAdjacentDifferenceType
    assert WarpExchangeType is coop.warp.WarpExchangeType
    assert isinstance(make_load(numba.int32, 64, 2), Invocable)


def test_warp_merge_sort_factory_takes_the_operator_third():
    def before(a, b):
        return a < b
    keys = coop.warp.make_merge_sort_keys(numba.int32, 3, before)
    assert keys.fixed["items_per_thread"] == 3 and "compare_op" in keys.call_fixed
    pairs = coop.warp.make_merge_sort_pairs(numba.int32, numba.float32, 2, before)
    assert pairs.fixed["items_per_thread"] == 2 and "compare_op" in pairs.call_fixed


def test_object_factories_have_their_methods_on_the_host():
    histo = coop.block.make_histogram(numba.uint8, numba.uint32, threads_per_block=64,
                                      items_per_thread=1)
    assert hasattr(histo, "init") and hasattr(histo, "composite")
    assert hasattr(coop.block.make_run_length(numba.int32, threads_per_block=64,
                                              runs_per_thread=1, decoded_items_per_thread=1),
                   "decode")
    assert not hasattr(histo, "decode")
    with pytest.raises(TypeError, match="block.histogram.init: call it inside a kernel"):
        histo.init()


@pytest.mark.parametrize("algorithm", ["atomic", "sort"])
def test_two_phase_object_methods_are_entries_of_their_own(algorithm):
    """cuda.coop's two-phase histogram: ``histo.init``/``histo.composite`` size their temp
    storage on the host and are called on their own in kernels (tests/gpu's
    test_two_phase_histogram_methods_on_their_own runs it)."""
    import numpy as np
    from numba import cuda

    from coopgen.linkcheck import link_as_launched
    histo = coop.block.make_histogram(numba.int32, numba.int32, threads_per_block=64,
                                      items_per_thread=2, bins=8, algorithm=algorithm)
    init, composite = histo.init, histo.composite
    assert init is histo.init and composite.temp_storage_bytes >= init.temp_storage_bytes >= 1
    size, alignment = composite.temp_storage_bytes, composite.temp_storage_alignment
    if algorithm == "sort":  # CUB's sorting histogram needs a radix sort's storage
        assert size > 64

    @cuda.jit
    def k(d_in, d_out):
        items = cuda.local.array(2, numba.int32)
        counters = cuda.shared.array(8, numba.int32)
        storage = coop.TempStorage(size, alignment)
        init(counters, temp_storage=storage)
        cuda.syncthreads()
        items[0] = d_in[2 * cuda.threadIdx.x]
        items[1] = d_in[2 * cuda.threadIdx.x + 1]
        composite(items, counters, temp_storage=storage)
        cuda.syncthreads()
        if cuda.threadIdx.x < 8:
            d_out[cuda.threadIdx.x] = counters[cuda.threadIdx.x]

    res = link_as_launched(k, 64, np.arange(128, dtype=np.int32) % 8, np.zeros(8, np.int32))
    assert res.kernel.local_bytes == 0


def test_items_per_thread_mismatch_says_it_as_cuda_coop_does():
    from coopgen.linkcheck import link_cubin

    def k(d_in, d_out):
        items = coop.local.array(2, dtype=d_in.dtype)
        coop.block.load(d_in, items, items_per_thread=2)
        coop.block.scan(items, items, items_per_thread=4)
    with coopgen.block_shape(32), pytest.raises(Exception) as info:
        link_cubin(k, (numba.int32[::1], numba.int32[::1]))
    assert "block.scan: items_per_thread=4 disagrees with array 'input' (2 items)" in \
        str(info.value)
    assert "coop.block.scan items_per_thread must match the array shape" in str(info.value)


@pytest.mark.parametrize("call", ["sum", "max_scan"])
def test_struct_items_get_no_cpp_arithmetic(call):
    """Struct items are opaque bytes to C++ (they sort with a Python comparison on pointers):
    CUB's sums and built-in operators cannot work on them, which is said, not left to NVRTC."""
    from coopgen.linkcheck import link_cubin
    from conform_kernels import TILE_TOTAL_STATE, TileTotal

    def k(d_in, d_out):
        items = coop.local.array(2, TILE_TOTAL_STATE)
        items[0] = TileTotal(d_in[0])
        items[1] = TileTotal(d_in[1])
        if call == "sum":
            d_out[0] = coop.block.sum(items).total
        else:
            coop.block.inclusive_scan(items, items, scan_op="max")
    with coopgen.block_shape(64), pytest.raises(Exception, match="struct to C"):
        link_cubin(k, (numba.int32[::1], numba.int32[::1]))
