"""Wrong calls get coopgen's compile-time error, naming the primitive and the parameter."""
import numpy as np
import pytest
from numba import cuda
from numba.core.errors import TypingError
from numba.cuda.core.errors import TypingError as CudaTypingError
from numba.cuda import types

from coopgen import block, block_shape, local, shared

I32 = types.int32[::1]
SIG = (I32, I32, types.int32)


def compile_ltoir(kernel, threads=128, sig=SIG):
    with block_shape(threads):
        return cuda.compile_all(kernel, sig, device=False, abi="numba", cc=(9, 0),
                                output="ltoir")


def coopgen_error(kernel, threads=128, sig=SIG) -> str:
    """The CoopgenTypeError message numba reports for ``kernel``."""
    with pytest.raises((TypingError, CudaTypingError)) as e:
        compile_ltoir(kernel, threads, sig)
    msg = str(e.value)
    assert "CoopgenTypeError" in msg, msg
    return msg


def test_partial_tile_load_by_keywords_compiles():
    """Keywords that exist on some overloads only (oob_default=) pick the overload that has
    them instead of escaping the resolver."""
    def k(d_in, d_out, n):
        items = local.array(4, np.int32)
        block.load(d_in, items, block_items_end=n, oob_default=0)
        block.store(d_out, items, valid_items=n)

    compile_ltoir(k)


def test_keyword_of_a_longer_overload_alone_names_what_is_missing():
    def k(d_in, d_out, n):
        items = local.array(4, np.int32)
        block.load(d_in, items, oob_default=0)
    assert "block.load: missing required argument 'block_items_end'" in coopgen_error(k)


def test_argument_given_positionally_and_by_keyword():
    def k(d_in, d_out, n):
        items = local.array(4, np.int32)
        block.load(d_in, items, dst_items=items)
    assert ("block.load: argument 'dst_items' is given both positionally and by keyword"
            in coopgen_error(k))


def test_explicit_shared_array_too_small_for_temp_storage():
    need = block.BlockRadixSort(np.int32, threads_per_block=128,
                                items_per_thread=16).temp_storage_bytes

    def k(d_in, d_out, n):
        items = local.array(16, np.int32)
        block.radix_sort_keys(items, temp_storage=shared.array(8, np.uint8))
    msg = coopgen_error(k)
    assert ("block.radix_sort_keys: temp_storage=shared.array(uint8, (8,)) holds 8 bytes, but "
            "the TempStorage of cub::BlockRadixSort<int, 128, 16" in msg)
    assert f"needs {need} bytes" in msg


def test_explicit_shared_array_that_fits_compiles():
    need = block.BlockScan(np.int32, threads_per_block=128).temp_storage_bytes

    def k(d_in, d_out, n):
        items = local.array(4, np.int32)
        block.BlockScan.ExclusiveSum(items, items, temp_storage=shared.array(need, np.uint8))
    compile_ltoir(k)
