"""Calls cuda.coop code and newcomers write, linked for sm_90 as a launch of 128 threads would
compile them: keywords and positionals cuda.coop accepts, an operator where cuda.coop's order
has items_per_thread, a lambda operator, two device functions of one body in one kernel; and
the errors cuda.coop raises for wrong ones, in its words where it has them."""
import numba
import numpy as np
import pytest
from numba import cuda

from coopgen import block_shape, coop
from coopgen.linkcheck import link_cubin
from numba.core.errors import TypingError

I32 = (numba.int32[::1], numba.int32[::1])


def link(fn, sig=I32, threads=128):
    with block_shape(threads):
        return link_cubin(cuda.jit(fn), sig)


def add(a, b):
    return a + b


def maximum(a, b):
    return a if a > b else b


def less(a, b):
    return a < b


def differ(a, b):
    return a != b


def test_an_operator_where_cuda_coops_order_has_items_per_thread():
    def k(d_in, d_out):
        items = coop.local.array(4, numba.int32)
        for i in range(4):
            items[i] = d_in[cuda.threadIdx.x * 4 + i]
        d_out[0] = coop.block.reduce(items, add)
        coop.block.exclusive_scan(items, items, add)
        coop.block.merge_sort_keys(items, less)
        d_out[1] = items[0]
    assert link(k).local_bytes == 0


def test_a_lambda_operator_compiles_as_a_def_does():
    def k(d_in, d_out):
        d_out[0] = coop.block.reduce(d_in[cuda.threadIdx.x], reduction_op=lambda a, b: a + b,
                                     threads_per_block=128)
    link(k)


@cuda.jit(device=True)
def larger_a(a, b):
    return a if a > b else b


@cuda.jit(device=True)
def larger_b(a, b):
    return a if a > b else b


WARP_MAX_B = coop.warp.reduce(numba.int32, larger_b)


def test_two_device_functions_of_one_body_make_two_shims():
    """A single-phase call with one and a two-phase object of the other, on one storage: their
    shims used to share a symbol (the key held the operator's signature, not its identity)."""
    def k(d_in, d_out):
        ts = coop.TempStorage()
        x = d_in[cuda.threadIdx.x]
        a = coop.warp.reduce(x, larger_a, temp_storage=ts)
        b = WARP_MAX_B(x, temp_storage=ts)
        d_out[cuda.threadIdx.x] = a + b
    link(k)


def test_keywords_and_positionals_cuda_coop_accepts():
    flags_type = coop.block.BlockDiscontinuityType.HEADS
    heads = coop.block.discontinuity(numba.int32, 128, 4, differ, block_discontinuity_type="HEADS")

    def k(d_in, d_out):
        items = coop.local.array(4, numba.int32)
        out = coop.local.array(4, numba.int32)
        flags = coop.local.array(4, numba.int32)
        for i in range(4):
            items[i] = d_in[cuda.threadIdx.x * 4 + i]
        coop.block.shuffle(items, out, block_shuffle_type="Up", distance=1)
        coop.block.shuffle(items, out, block_shuffle_type=coop.block.BlockShuffleType.Down,
                           distance=1)
        coop.block.discontinuity(items, head_flags=flags, flag_op=differ,
                                 block_discontinuity_type="TAILS")  # head_flags: the output
        heads(items, flags, block_discontinuity_type=flags_type)  # the enum of the object's name
        coop.warp.load(d_in, items, 4, 32, "direct", 50, -1)
        d_out[0] = out[0] + flags[0] + items[0]
    link(k)


def test_shuffle_up_takes_cuda_coops_distance_one_only():
    def k(d_in, d_out):
        items = coop.local.array(4, numba.int32)
        coop.block.shuffle(items, items, block_shuffle_type="Up", distance=2)
        d_out[0] = items[0]
    with pytest.raises(TypingError, match=r"distance=2 is not supported by CUB's "
                                               r"BlockShuffle::Up, which takes no distance"):
        link(k)


def test_a_threads_own_array_as_temp_storage_is_refused_naming_the_fix():
    def k(d_in, d_out):
        ts = cuda.local.array(4096, numba.uint8)
        d_out[0] = coop.block.sum(d_in[cuda.threadIdx.x], threads_per_block=128,
                                  temp_storage=ts)
    with pytest.raises(TypingError, match=r"(?s)thread.s own array.*cuda\.shared\.array"):
        link(k)


def test_run_length_without_its_total_names_the_argument():
    def k(d_in, d_out):
        values = coop.local.array(2, numba.int32)
        lengths = coop.local.array(2, numba.int32)
        coop.block.run_length(values, lengths, 2, 4)
    with pytest.raises(TypingError, match="total_decoded_size"):
        link(k)


def test_single_phase_histogram_refuses_temp_storage_in_cuda_coops_words():
    def k(d_in, d_out):
        items = coop.local.array(4, numba.uint8)
        hist = coop.shared.array(256, numba.int32)
        coop.block.histogram(items, hist, temp_storage=coop.TempStorage())
    with pytest.raises(TypingError,
                       match="Explicit temp_storage is not supported for histogram"):
        link(k)


def test_host_combinations_no_cub_overload_takes_are_value_errors():
    class Running:
        def __call__(self, aggregate):
            return aggregate

    state = coop.StatefulFunction(Running, numba.int64)
    with pytest.raises(ValueError, match="takes scan_op, initial_value, "
                                         "block_prefix_callback_op together"):
        coop.block.exclusive_scan(np.int32, 128, "+", 4, 0, state)
    with pytest.raises(TypeError, match="unexpected argument 'initial_value'"):
        coop.block.exclusive_sum(np.int32, 128, initial_value=1)


class RunningTotalOfUint16:
    def __call__(state, block_aggregate):
        old = state[0]
        state[0] = old + block_aggregate
        return old


def test_a_stateful_function_is_found_by_its_states_dtype_however_named():
    """Registered with numpy's uint16, its state is numba's uint16 array (one dtype, as
    numba-cuda-mlir's would be)."""
    coop.StatefulFunction(RunningTotalOfUint16, np.uint16)

    def k(d_in, d_out):
        state = coop.local.array(1, numba.uint16)
        state[0] = 0
        items = coop.local.array(4, numba.int32)
        coop.block.load(d_in, items)
        coop.block.exclusive_sum(items, items, prefix_op=state)
        coop.block.store(d_out, items)
    assert link(k).local_bytes == 0


def test_cuda_coops_make_reduce_takes_the_operator_third():
    """cuda.coop's documented example: ``make_reduce(numba.int32, threads_per_block, op)``, its
    block reduce's (dtype, threads_per_block, binary_op, items_per_thread); the scans' other
    order (items_per_thread, then the operator) still works."""
    reduce = coop.block.make_reduce(numba.int32, 128, maximum)
    assert "items_per_thread" not in repr(reduce)  # the operator did not take its slot
    assert coop.block.make_reduce(numba.int32, 128, maximum, 4).class_template_kws()[
        "items_per_thread"] == 4
    assert coop.block.make_exclusive_scan(numba.int32, 128, 2, add).class_template_kws()[
        "items_per_thread"] == 2

    def k(d_in, d_out):
        d_out[cuda.threadIdx.x] = reduce(d_in[cuda.threadIdx.x])
    assert link(k).cubin


def test_a_number_literal_takes_the_dtype_the_object_was_made_for():
    """``block_exclusive_sum(1)`` of an int32 object (cuda.coop's example): the literal is an
    int64 to numba, converted at the call as C++ converts it, not a second dtype of T; two
    arrays of different dtypes are still refused."""
    scan = coop.block.make_exclusive_sum(numba.int32, 128, 1)

    def k(d_in, d_out):
        d_out[cuda.threadIdx.x] = scan(1)
    assert link(k).cubin

    def mixed(d_in, d_out):
        items = coop.local.array(4, numba.int64)
        coop.block.exclusive_sum(d_in[:4], items)
    with pytest.raises(TypingError, match="all T arguments must share one dtype"):
        link(mixed)


def test_complex_keys_merge_sort_reports_its_temp_storage():
    """The TempStorage size of a merge sort of complex128 keys (cuda.coop's user-defined-type
    example): CUB's ``keys_shared[ITEMS_PER_TILE + 1]``, computed with the complex header."""
    def real_greater(a, b):
        return a[0].real > b[0].real

    sort = coop.block.make_merge_sort_keys(dtype=numba.complex128, threads_per_block=128,
                                           items_per_thread=3, compare_op=real_greater)
    assert sort.temp_storage_bytes == (128 * 3 + 1) * 16
