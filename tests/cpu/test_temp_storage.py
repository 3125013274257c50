"""coopgen.TempStorage: one __shared__ object sized from all its uses, shared or exclusive."""
import numpy as np
import pytest
from numba import cuda
from numba.core.errors import TypingError
from numba.cuda.core.errors import TypingError as CudaTypingError
from numba.cuda import types

import coopgen
from coopgen import block, block_shape, local
from coopgen.linkcheck import link_cubin

SIG = (types.int32[::1], types.int32[::1])
shared_ts = coopgen.TempStorage()
exclusive_ts = coopgen.TempStorage("exclusive")
small_ts = coopgen.TempStorage(size=16)


def load_sort_store(d_in, d_out):
    items = local.array(4, np.int32)
    block.load(d_in, items, algorithm="warp_transpose", temp_storage=shared_ts)
    cuda.syncthreads()
    block.radix_sort_keys(items, temp_storage=shared_ts)
    cuda.syncthreads()
    block.store(d_out, items, algorithm="warp_transpose", temp_storage=shared_ts)


def two_sums(d_in, d_out):
    items = local.array(4, np.int32)
    d_out[0] = block.sum(items, temp_storage=exclusive_ts) + block.sum(items,
                                                                       temp_storage=exclusive_ts)


def too_small(d_in, d_out):
    items = local.array(4, np.int32)
    block.radix_sort_keys(items, temp_storage=small_ts)


def test_shared_uses_overlap():
    with block_shape(128):
        res = link_cubin(load_sort_store, SIG)
    # the largest use (radix sort, 4640 bytes) and not the sum of the three
    assert 4640 <= res.smem < 4640 + 2048


def test_exclusive_uses_get_slices():
    with block_shape(128):
        res = link_cubin(two_sums, SIG)
    assert res.smem >= 2 * 24


def test_declared_size_is_checked():
    """A use that does not fit the declared size is a compile-time error (before any NVRTC
    compile of the kernel)."""
    need = block.BlockRadixSort(np.int32, threads_per_block=128,
                                items_per_thread=4).temp_storage_bytes
    with block_shape(128), pytest.raises((TypingError, CudaTypingError)) as e:
        link_cubin(too_small, SIG)
    assert (f"block.radix_sort_keys: temp_storage=coopgen.TempStorage('shared', size=16) holds "
            f"16 bytes, but the TempStorage of cub::BlockRadixSort<int, 128, 4" in str(e.value))
    assert f"needs {need} bytes" in str(e.value)


def test_kernel_traits_before_launch():
    load = block.BlockLoad(np.int32, threads_per_block=128, items_per_thread=4,
                           algorithm="warp_transpose")
    sort = block.BlockRadixSort(np.int32, threads_per_block=128, items_per_thread=4)
    assert coopgen.kernel_temp_storage(load, sort) == (4640, 16)
    assert coopgen.kernel_temp_storage(load, sort, sharing="exclusive") == (2048 + 4640, 16)


def test_bad_arguments():
    with pytest.raises(ValueError, match="sharing must be 'shared' or 'exclusive', got sharing='both'"):
        coopgen.TempStorage("both")
    with pytest.raises(ValueError, match="alignment=12 must be a power of two"):
        coopgen.TempStorage(alignment=12)


reserved_ts = coopgen.TempStorage(size=6000)
exclusive_short_ts = coopgen.TempStorage("exclusive", size=2 * 24 - 4)


def sum_in_reserved_storage(d_in, d_out):
    items = local.array(4, np.int32)
    d_out[0] = block.sum(items, temp_storage=reserved_ts)


def two_sums_short_of_room(d_in, d_out):
    items = local.array(4, np.int32)
    d_out[0] = block.sum(items, temp_storage=exclusive_short_ts) + block.sum(
        items, temp_storage=exclusive_short_ts)


def test_declared_size_is_reserved():
    """size_in_bytes is what the storage holds (as cuda.coop's TempStorage(size_in_bytes)),
    even where its uses need less."""
    need = block.BlockReduce(np.int32, threads_per_block=128).temp_storage_bytes
    with block_shape(128):
        res = link_cubin(sum_in_reserved_storage, SIG)
    assert need < 6000 <= res.smem < 6000 + 64


def test_exclusive_slices_must_fit_the_declared_size():
    with block_shape(128), pytest.raises(Exception, match="size_in_bytes=44 is too small for "
                                                          "its uses"):
        link_cubin(two_sums_short_of_room, SIG)


SORT = coopgen.coop.block.make_radix_sort_keys(np.int32, 128, 4)


def sort_in_storage_sized_from_the_object(d_in, d_out):
    # computed in the kernel from the object's size: the host computes it (kernel_ir), and
    # nothing of it is left for numba to type (an object's .temp_storage_bytes has no type)
    nbytes = SORT.temp_storage_bytes
    ts = coopgen.coop.TempStorage(nbytes + 64, SORT.temp_storage_alignment)
    items = local.array(4, np.int32)
    block.load(d_in, items, temp_storage=ts)
    SORT[ts](items)
    block.store(d_out, items, temp_storage=ts)


def test_in_kernel_storage_sized_by_an_expression_of_an_objects_size():
    with block_shape(128):
        res = link_cubin(sort_in_storage_sized_from_the_object, SIG)
    assert SORT.temp_storage_bytes + 64 <= res.smem < SORT.temp_storage_bytes + 128
    assert res.local_bytes == 0
