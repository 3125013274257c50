"""cuda.coop.numba_mlir's single-phase calls in NVIDIA's suite's forms link for sm_90 under
each numba compiler installed (tests/gpu/single_phase_cases.py: one kernel per case), and the
forms' argument rules name what they bind."""
import importlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from single_phase_cases import CASES, THREADS  # noqa: E402

from coopgen import coop  # noqa: E402
from coopgen.model.errors import CoopgenError  # noqa: E402
from coopgen.types.desc import Array, Literal, Scalar  # noqa: E402

COMPILERS = [c for c in ("numba", "numba_cuda_mlir") if importlib.util.find_spec(c)]
ITEMS = Array(Scalar("int32"), length=2, space="local")


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_single_phase_call_links(case, compiler):
    from coopgen.linkcheck import link_as_launched
    cuda = importlib.import_module(compiler).cuda
    res = link_as_launched(case.make(cuda), THREADS, *case.inputs(np.random.default_rng(0)))
    assert res.kernel.spill_stores == 0


def _named(prim, *args, **kws):
    return {(n if isinstance(n, str) else n[0]): origin
            for n, _, origin in prim.shape.name_arguments(args, kws)}


def test_declared_values_take_the_last_positionals():
    ad = coop.numba_mlir._block.adjacent_difference
    named = _named(ad, ITEMS, ITEMS, Scalar("int64"), Scalar("int32"),
                   items_per_thread=Literal(2, Scalar("int64")), valid_items=Literal(True),
                   tile_predecessor_item=Literal(True))
    assert named == {"input": 0, "output": 1, "valid_items": 2, "tile_predecessor_item": 3,
                     "items_per_thread": 4}
    # coop.block keeps Python's rules: a keyword never moves a positional
    with pytest.raises(CoopgenError, match="given both positionally and by keyword"):
        coop.block.load.shape.name_arguments((ITEMS, ITEMS, Scalar("int32")),
                                             {"items_per_thread": Literal(2)})
    with pytest.raises(CoopgenError, match="declare 2 trailing positional arguments"):
        ad.shape.name_arguments((ITEMS,), {"valid_items": Literal(True),
                                           "tile_predecessor_item": Literal(True)})


def test_keywords_name_dtypes_and_skip_their_slots():
    load = coop.numba_mlir._warp.load
    assert _named(load, ITEMS, ITEMS, Scalar("int32"), Scalar("int32"),
                  items_per_thread=Literal(2), threads_in_warp=Literal(32),
                  algorithm=Literal("striped")) == {
        "block_itr": 0, "items": 1, "valid_items": 2, "oob_default": 3, "items_per_thread": 4,
        "threads_in_warp": 5, "algorithm": 6}
    pairs = coop.numba_mlir._block.merge_sort_pairs
    assert _named(pairs, ITEMS, ITEMS, keys=Literal("int32"), values=Literal("int32")) == {
        "keys": 0, "items": 1, "dtype": 2, "value": 3}


def test_two_phase_radix_calls_take_bits_or_values():
    bits = coop.numba_mlir._block.make_radix_sort_keys(np.uint32, 32, 2)
    assert _named(bits, ITEMS, Literal(0, Scalar("int64")), Literal(4, Scalar("int64"))) == {
        "keys": 0, "begin_bit": 1, "end_bit": 2}
    assert _named(bits, ITEMS, Literal(2, Scalar("int64")), Literal(0, Scalar("int64")),
                  Literal(4, Scalar("int64"))) == {
        "keys": 0, "items_per_thread": 1, "begin_bit": 2, "end_bit": 3}
    assert _named(bits, ITEMS, ITEMS) == {"keys": 0, "values": 1}


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("count", [1.5, True, 0])
def test_a_per_thread_count_is_a_positive_integer(compiler, count):
    """cuda.coop's error (its class is coopgen's compile-time error) and words for a count
    that is not a positive int, raised by the rewrite before typing."""
    from coopgen.linkcheck import link_as_launched
    cuda = importlib.import_module(compiler).cuda
    _block = coop.numba_mlir._block

    @cuda.jit
    def kernel(d_values, d_lengths):
        values = coop.local.array(1, dtype=np.uint32)
        lengths = coop.local.array(1, dtype=np.uint32)
        size = coop.local.array(1, dtype=np.uint32)
        items = coop.local.array(1, dtype=np.uint32)
        values[0] = d_values[cuda.threadIdx.x]
        lengths[0] = d_lengths[cuda.threadIdx.x]
        rld = _block.run_length(values, lengths, count, 1, size, decoded_offset_dtype="uint32")
        rld.decode(items, 0)

    with pytest.raises(CoopgenError, match="block.run_length: runs_per_thread must be a "
                                           "compile-time positive integer"):
        link_as_launched(kernel, THREADS, np.zeros(THREADS, np.uint32),
                         np.ones(THREADS, np.uint32))


def test_fused_decode_on_the_host():
    """rld.decode(...) made on the host: its call's slots follow its with_ flags, its storage
    is the decoder's, and what it is given is checked."""
    rld = coop.numba_mlir._block.run_length(np.uint32, THREADS, 2, 4,
                                            decoded_offset_dtype=np.uint32)
    full = rld.decode(np.uint32, np.uint32, with_relative_offsets=True,
                      with_decoded_window_offset=True, relative_offset_dtype=np.uint32)
    assert full.slots == ("run_values", "run_lengths", "total_decoded_size", "decoded_items",
                          "relative_offsets", "decoded_window_offset")
    assert rld.decode().slots[3:] == ("decoded_items",)
    assert (full.temp_storage_bytes, full.temp_storage_alignment) == \
        (rld.temp_storage_bytes, rld.temp_storage_alignment) != (0, 0)
    with pytest.raises(ValueError, match="argument 1=.*is not a dtype"):
        rld.decode("no such type")
    with pytest.raises(TypeError, match="unexpected keyword 'with_items'"):
        rld.decode(with_items=True)
    with pytest.raises(TypeError, match="call it inside a kernel"):
        full(1, 2, 3)
