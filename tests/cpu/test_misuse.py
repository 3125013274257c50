"""Wrong calls get coopgen's compile-time error, naming the primitive and the parameter."""
import numpy as np
import pytest
from numba import cuda
from numba.core.errors import TypingError
from numba.cuda.core.errors import TypingError as CudaTypingError
from numba.cuda import types

from coopgen import block, block_shape, local, shared, warp

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


def test_method_keyword_after_template_keywords_lowers():
    """A method's keyword after template keywords reaches its own argument in lowering
    (it used to take the template keyword's slot: 'Cannot cast Literal[int](128)')."""
    def k(d_in, d_out, n):
        items = local.array(4, np.int32)
        aggregate = local.array(1, np.int32)
        block.exclusive_sum(items, items, threads_per_block=128, block_aggregate=aggregate)
    compile_ltoir(k)


def test_two_spellings_of_one_template_parameter():
    def k(d_in, d_out, n):
        items = local.array(4, np.int32)
        block.load(d_in, items, threads_per_block=128, block_dim_x=64)
    assert "threads_per_block= and block_dim_x= both give the block shape" in coopgen_error(k)

    def k2(d_in, d_out, n):
        d_out[0] = warp.sum(d_in[0], threads_in_warp=16, logical_warp_threads=8)
    assert ("warp.sum: threads_in_warp=16 and logical_warp_threads=8 name the same template "
            "parameter" in coopgen_error(k2))


summer_128 = block.sum(np.int32, 128)


def test_call_contradicting_a_two_phase_object():
    def k(d_in, d_out, n):
        d_out[0] = summer_128(d_in[0], threads_per_block=256)
    assert ("block.sum: threads_per_block=256, but this object was made with "
            "threads_per_block=128" in coopgen_error(k))


def test_scalar_output_must_be_an_array():
    def k(d_in, d_out, n):
        total = np.int32(0)
        block.exclusive_sum(d_in[0], total)  # an output must be an array to write into
    msg = coopgen_error(k)
    assert "block.exclusive_sum: no overload matches" in msg
    assert "'output' is an output: pass a 1-element array" in msg


def test_strided_device_array():
    def k(d_in, d_out, n):
        items = local.array(4, np.int32)
        block.load(d_in[::2], items)
    assert ("block.load: block_src_it must be a contiguous array (CUB reads it through a "
            "pointer)" in coopgen_error(k))


def test_two_dimensional_items():
    def k(d_in, d_out, n):
        items = local.array((2, 2), np.int32)
        block.load(d_in, items)
    assert "block.load: dst_items must be a 1-D array" in coopgen_error(k)


RECORD = np.dtype([("a", np.int32), ("b", np.float32)], align=True)


def test_decomposer_field_is_checked_in_typing():
    def k(d_in, d_out, n):
        keys = local.array(4, RECORD)
        block.radix_sort_keys(keys, decomposer=("a", "nope"))
    msg = coopgen_error(k)
    assert "block.radix_sort_keys: decomposer: the key record has no field 'nope'" in msg
    assert "lowering" not in msg


@pytest.mark.parametrize("make, message", [
    (lambda: block.sum(np.int32, 128, items_per_thread=0),
     "block.sum: items_per_thread=0"),
    (lambda: block.load(np.int32, 128, items_per_thread=4, algorithm="nope"),
     "block.load: unknown algorithm='nope'; allowed: 'direct'"),
    (lambda: block.BlockLoad(np.int32, threads_per_block=2048),
     "block.BlockLoad: threads_per_block=(2048, 1, 1) has 2048 threads"),
    (lambda: block.exchange(kind="sideways", dtype=np.int32, threads_per_block=128),
     "block.exchange: unknown block_exchange_type='sideways'; allowed:"),
    (lambda: warp.sum(np.int32, 64),
     "warp.sum: logical_warp_threads=64 is not allowed; it takes an integer from 1 to 32"),
    (lambda: block.sum(np.dtype("datetime64[ns]"), 128), "is an unsupported dtype; supported"),
    (lambda: block.sum(np.int32, 128, bogus=1), "block.sum: unexpected argument 'bogus'"),
    (lambda: block.sum((np.int32, -1), 128), "block.sum: dtype=(<class 'numpy.int32'>, -1) "
                                             "is not a dtype"),
], ids=["items_per_thread", "algorithm", "threads", "kind", "logical_warp", "dtype", "keyword",
        "numpy refuses"])
def test_two_phase_objects_check_their_keywords_on_the_host(make, message):
    """As in cuda.coop: a wrong two-phase argument is a ValueError (TypeError for an argument
    that does not exist) where the object is made."""
    with pytest.raises((ValueError, TypeError)) as e:
        make()
    assert message in str(e.value) and "\x1b" not in str(e.value)
