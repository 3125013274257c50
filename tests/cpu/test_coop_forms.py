"""cuda.coop code's call forms and error paths, linked for sm_90 as a launch would compile them:
a radix sort object made for pairs and called for keys, scan objects made with
items_per_thread before the operator, a two-phase object's call picking another method of its
class, a ThreadData whose uses disagree on its dtype, an operator taking complex items through
pointers; and cuda.coop's words in the errors its code meets."""
import numba
import numpy as np
import pytest
from numba import cuda
from numba.core.errors import TypingError

from coopgen import block_shape, coop
from coopgen.linkcheck import link_cubin
from coopgen.lower import typing as calls
from coopgen.lower.arrays import SizedArray

I32 = (numba.int32[::1], numba.int32[::1])
KEYS = SizedArray(numba.int32, (2,), "local")


def link(fn, sig=I32, threads=128):
    with block_shape(threads):
        return link_cubin(cuda.jit(fn), sig)


def _value_type(plan) -> str:
    return dict((t.name, v) for t, v in plan.template_args)["ValueT"]


def test_a_radix_sort_object_called_without_values_sorts_keys_alone():
    # cuda.coop code passes the bit range where the order has value_dtype; numba's int32(0)
    # names int32 as a dtype, yet the call has no values: CUB's keys-only Sort needs NullType
    obj = coop.block.radix_sort_keys(numba.int32, 64, 2, numba.int32(0), numba.int32(32))
    keys_only = calls.resolve_call(obj, (KEYS,), {}, block_dims=(64, 1, 1))
    assert keys_only.method.signature.startswith("Sort(KeyT (&)[ItemsPerThread], int")
    assert _value_type(keys_only) == "NullType"
    values = SizedArray(numba.int32, (2,), "local")
    pairs = calls.resolve_call(obj, (KEYS,), {"values": values}, block_dims=(64, 1, 1))
    assert _value_type(pairs) == "int"
    made_for_pairs = coop.block.radix_sort_keys(numba.int32, 64, 2, value_dtype=np.float32)
    assert _value_type(calls.resolve_call(made_for_pairs, (KEYS,), {},
                                          block_dims=(64, 1, 1))) == "NullType"


@cuda.jit(device=True)
def add(a, b):
    return a + b


@pytest.mark.parametrize("name", ["exclusive_scan", "inclusive_scan", "reduce"])
def test_objects_made_with_items_per_thread_before_the_operator(name):
    make = getattr(coop.block, name)
    op_key = "reduction_op" if name == "reduce" else "scan_op"
    for args in ((numba.int32, 128, 4, add), (numba.int32, 128, add, 4),
                 (numba.int32, 128, 4, "max")):
        obj = make(*args)
        assert obj.fixed["items_per_thread"] == 4 and obj.call_fixed[op_key] in (add, "max")
    with pytest.raises(ValueError, match="items_per_thread=.*must be an integer"):
        make(numba.int32, 128, add, add)  # an operator for the count is still refused
    load = coop.block.load(np.int32, 128, 4, "direct")  # no operator slot: as before
    assert load.fixed["items_per_thread"] == 4 and load.fixed["algorithm"] == "direct"


def differ(a, b):
    return numba.int32(1 if a != b else 0)


def test_a_discontinuity_objects_call_picks_flag_tails():
    kinds = coop.block.BlockDiscontinuityType
    heads = coop.block.discontinuity(np.int32, 128, 4, flag_op=differ, flag_dtype=np.int32)
    tails = coop.block.discontinuity(np.int32, 128, 4, flag_op=differ, flag_dtype=np.int32,
                                     block_discontinuity_type="HEADS")

    def k(d_in, d_out):
        items = coop.local.array(4, numba.int32)
        flags = coop.local.array(4, numba.int32)
        coop.block.load(d_in, items)
        heads(items, flags, flag_op=differ, block_discontinuity_type=kinds.HEADS)
        tails(items, flags, flag_op=differ, block_discontinuity_type=kinds.TAILS)
        coop.block.store(d_out, flags)
    calls.RESOLVED.clear()
    link(k)
    chosen = [s.split("(")[0] for s in calls.RESOLVED if s.startswith("BlockDiscontinuity")]
    assert "BlockDiscontinuity::FlagTails" in chosen and "BlockDiscontinuity::FlagHeads" in chosen
    # the class's template arguments stay the object's
    with pytest.raises(TypingError, match="this object was made with"):
        link(lambda d_in, d_out: heads(coop.local.array(4, numba.int32),
                                       coop.local.array(4, numba.int32), flag_op=differ,
                                       threads_per_block=256))


def thread_data_stored_as_float(d_in, d_out):
    items = coop.ThreadData(4)
    coop.block.load(d_in, items)
    coop.block.store(d_out, items)


def thread_data_exchanged_into_float(d_in, d_out):
    items = coop.ThreadData(4)
    out = cuda.local.array(4, numba.float32)
    coop.block.load(d_in, items, items_per_thread=4)
    coop.block.exchange(items, out, items_per_thread=4,
                        block_exchange_type=coop.block.BlockExchangeType.StripedToBlocked)
    coop.block.store(d_out, out)


@pytest.mark.parametrize("kernel", [thread_data_stored_as_float,
                                    thread_data_exchanged_into_float])
def test_a_thread_datas_uses_must_agree_on_its_dtype(kernel):
    with pytest.raises(TypingError, match=r"has dtype float32, but the ThreadData passed as "
                                          r"\w+ holds int32.*consistent dtype for ThreadData"):
        link(kernel, (numba.int32[::1], numba.float32[::1]))


def thread_data_of_other_dtypes_elsewhere(d_keys, d_values, d_hist):
    keys = coop.ThreadData(4)
    values = coop.ThreadData(4)
    flags = coop.local.array(4, numba.int32)
    hist = coop.shared.array(256, numba.int32)
    coop.block.load(d_keys, keys)
    coop.block.load(d_values, values)
    coop.block.discontinuity(keys, flags, flag_op=differ)  # flags: int32, keys: uint8
    h = coop.block.histogram(keys, hist)  # counters: int32
    h.init()
    h.composite(keys)
    coop.block.radix_sort_pairs(keys, values)  # values: float32
    coop.block.store(d_values, values)
    d_hist[0] = hist[0] + flags[0]


def test_a_thread_data_beside_arrays_of_other_roles_is_no_mismatch():
    link(thread_data_of_other_dtypes_elsewhere,
         (numba.uint8[::1], numba.float32[::1], numba.int32[::1]))
    # a dtype given is the user's choice: CUB converts as it stores
    link(lambda d_in, d_out: coop.block.store(d_out, coop.ThreadData(4, dtype=numba.int32)),
         (numba.int32[::1], numba.float32[::1]))


@cuda.jit(device=True)
def by_value(a, b):
    return a.real > b.real


@cuda.jit(device=True)
def by_pointer(a, b):
    return a[0].real > b[0].real


@cuda.jit(device=True)
def neither(a, b):
    return a.no_such_field > b


def sort_complex_with(op):
    def k(d_in, d_out):
        items = coop.local.array(3, numba.complex128)
        for i in range(3):
            items[i] = d_in[cuda.threadIdx.x * 3 + i]
        coop.block.merge_sort_keys(items, 3, op)
        for i in range(3):
            d_out[cuda.threadIdx.x * 3 + i] = items[i]
    return k


def test_an_operator_of_complex_items_may_take_them_by_value_or_through_pointers():
    sig = (numba.complex128[::1], numba.complex128[::1])
    for op in (by_value, by_pointer):
        assert link(sort_complex_with(op), sig).local_bytes == 0
    with pytest.raises(Exception, match=r"(?s)compare_op=neither must work as a CompareOp "
                                        r"\(complex128\*, complex128\*\).*no_such_field"):
        link(sort_complex_with(neither), sig)


def histogram_of_global_items(d_items, d_hist):
    coop.block.histogram(d_items, d_hist, temp_storage=coop.TempStorage())


def run_length_without_total(d_in, d_out):
    values = coop.local.array(2, numba.uint32)
    lengths = coop.local.array(2, numba.uint32)
    coop.block.run_length(values, lengths, 2, 4)


def run_length_total_none(d_in, d_out):
    values = coop.local.array(2, numba.uint32)
    lengths = coop.local.array(2, numba.uint32)
    coop.block.run_length(values, lengths, 2, 4, total_decoded_size=None)


@pytest.mark.parametrize("kernel,words", [
    # the refusal comes before what the call lacks otherwise (items_per_thread, bins)
    (histogram_of_global_items, r"Explicit temp_storage is not supported for histogram\. "
                                r".*coopgen.block.histogram takes one"),
    (run_length_without_total, r"coop.block.run_length requires at least 5 positional "
                               r"arguments.*total_decoded_size must be a device array"),
    (run_length_total_none, r"total_decoded_size must be a device array"),
])
def test_errors_in_cuda_coops_words(kernel, words):
    with pytest.raises(TypingError, match=words):
        link(kernel, (numba.uint8[::1], numba.uint32[::1]))


def test_coopgen_block_run_length_keeps_its_own_words():
    from coopgen import block

    def k(d_in, d_out):
        block.run_length(coop.local.array(2, numba.uint32), coop.local.array(2, numba.uint32),
                         2, 4)
    with pytest.raises(TypingError, match="cannot infer the C\\+\\+ type 'TotalDecodedSizeT'"):
        link(k, (numba.uint8[::1], numba.uint32[::1]))
