"""cuda.coop's group-first calls (``coop.sum(coop.this_block(), x)``) in CuTe DSL kernels,
without a GPU: the CuTe DSL twins of numba's group kernels (group_kernels.py) compile and link,
with every shim inlined and no local memory; each call resolves to the CUB overload the block
or warp call does; misuse is refused by name, as under numba."""
import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from group_kernels import CASES, ITEMS, TWINS, kernel_of, launcher, nthreads, pointers
from kernels import kernel_with, misuse, pointer

from coopgen import coop
from coopgen.cute import call
from coopgen.resolve.operators import key_order, ordered_key_bits

ARCHS = ("sm_90a", "sm_100a")


def _link(case, arch="sm_90a", dtype=None, block=None):
    dtype = dtype or case.dtypes[0]
    block = block or next((b for b in case.blocks if isinstance(b, tuple)), case.blocks[0])
    args = case.inputs(dtype, nthreads(block), np.random.default_rng(0))
    launch = launcher(kernel_of(case, dtype), args, block)
    return cute.compile[cute.GPUArch(arch), cute.KeepPTX, cute.KeepCUBIN](
        launch, *pointers(args))


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_each_group_case_links(case):
    """Every twin, on a 2-D block where the case has one (the block shape from the launch)."""
    compiled = _link(case)
    ptx = compiled.artifacts.PTX
    assert "call.uni" not in ptx and ".local" not in ptx
    assert compiled.artifacts.CUBIN[:4] == b"\x7fELF"


FIRSTS = [next(c for c in CASES if c.make is make) for make in TWINS]


@pytest.mark.parametrize("case", FIRSTS, ids=[c.name for c in FIRSTS])
def test_each_family_links_for_sm_100a(case):
    ptx = _link(case, "sm_100a").artifacts.PTX
    assert ".target sm_100a" in ptx and "call.uni" not in ptx and ".local" not in ptx


def test_group_calls_resolve_as_block_and_warp_calls_do():
    """A block's and a logical warp's calls become CUB's block and warp classes' calls."""
    def body(x):
        block, half = coop.this_block(), coop.this_warp().group_by(16)
        items = coop.ThreadData(ITEMS, dtype=cutlass.Int32)
        coop.load(block, x, items)
        ordered = coop.radix_sort_keys(block, items)
        x[0] = coop.sum(block, ordered) + coop.reduce(half, ordered[0], binary_op="max")
        coop.store(block, x, coop.inclusive_scan(block, ordered, scan_op="max"))
    call.RESOLVED.clear()
    ptx = cute.compile[cute.KeepPTX](kernel_with(body), pointer(np.int32)).artifacts.PTX
    assert set(call.RESOLVED) == {
        "BlockLoad::Load(RandomAccessIterator, T (&)[ItemsPerThread])",
        "BlockRadixSort::Sort(KeyT (&)[ItemsPerThread], int, int)",
        "BlockReduce::Sum(T (&)[ITEMS_PER_THREAD])", "WarpReduce::Reduce(T, ReductionOp)",
        "WarpScan::Broadcast(T, unsigned int)",
        "BlockScan::InclusiveScan(T (&)[ITEMS_PER_THREAD], T (&)[ITEMS_PER_THREAD], ScanOp)",
        "BlockStore::Store(OutputIteratorT, T (&)[ItemsPerThread])"}
    assert "call.uni" not in ptx and ".local" not in ptx


def _items(x, dtype=cutlass.Int32, n=ITEMS):
    items = cute.make_rmem_tensor(n, dtype)
    coop.load(coop.this_block(), x, items)
    return items


def test_a_group_the_call_cannot_take_is_refused():
    message = misuse(lambda x: coop.radix_sort_keys(coop.this_warp(), _items(x)))
    assert "coop.radix_sort_keys" in message and "this_warp()" in message
    assert "coop.this_block()" in message


def test_a_cluster_is_refused_as_unserved():
    message = misuse(lambda x: coop.sum(coop.this_cluster(), x[0]))
    assert "coop.sum" in message and "this_cluster()" in message and "cluster" in message


def test_the_first_argument_must_be_a_group():
    message = misuse(lambda x: coop.sum(_items(x)))
    assert "coop.sum" in message and "must be a group" in message


def test_an_unknown_keyword_is_named_with_the_allowed_ones():
    message = misuse(lambda x: coop.sum(coop.this_block(), _items(x), scan_op="+"))
    assert "coop.sum" in message and "'scan_op'" in message and "binary_op" not in message
    assert "valid_items" in message


def test_fragments_of_two_lengths_are_refused_by_name():
    def body(x):
        keys, values = _items(x), cute.make_rmem_tensor(8, cutlass.Int32)
        coop.radix_sort_pairs(coop.this_block(), keys, values)
    message = misuse(body)
    assert "radix_sort_pairs" in message and "8" in message and "4" in message


def test_a_counter_dtype_that_is_no_integer_is_refused():
    message = misuse(lambda x: coop.histogram(coop.this_block(), _items(x), bins=64,
                                               counter_dtype=np.float32))
    assert "coop.histogram" in message and "counter_dtype=float32" in message


def test_a_bit_range_past_the_keys_is_refused():
    def body(x):
        keys = cute.make_rmem_tensor(ITEMS, cutlass.Int8)
        for i in range(ITEMS):
            keys[i] = cutlass.Int8(x[i])
        coop.radix_sort_keys(coop.this_block(), keys, end_bit=16)
    message = misuse(body)
    assert "coop.radix_sort_keys" in message and "end_bit=16" in message and "int8" in message


def test_a_known_valid_items_past_the_warp_is_refused():
    message = misuse(lambda x: coop.exclusive_sum(coop.this_warp(), x[0], valid_items=40))
    assert "coop.exclusive_sum" in message and "valid_items=40" in message and "32" in message


def test_thread_data_needs_a_dtype():
    message = misuse(lambda x: coop.ThreadData(ITEMS))
    assert "coop.ThreadData" in message and "dtype" in message


def test_run_length_decoding_is_not_provided_yet():
    def body(x):
        runs = _items(x, n=2)
        coop.run_length_decode(coop.this_block(), runs, runs, decoded_items_per_thread=4)
    message = misuse(body)
    assert "coop.run_length_decode" in message and "CuTe DSL" in message


def test_group_calls_outside_a_kernel_say_where_they_work():
    with pytest.raises(NotImplementedError, match="inside a kernel"):
        coop.sum(coop.this_block(), 1)
    with pytest.raises(NotImplementedError, match="inside a kernel"):
        coop.this_block().rank()


ORDERED = [c for c in CASES if c.name.startswith("radix_rank_ordered")]


@pytest.mark.parametrize("case,dtype", [(c, d) for c in ORDERED for d in c.dtypes],
                         ids=[f"{c.name}-{np.dtype(d).name}" for c in ORDERED for d in c.dtypes])
def test_ordered_radix_rank_links_for_every_key_type(case, dtype):
    """Signed and floating keys ranked by their order: the digit extractor bit-casts the key to
    the unsigned number of its width and twiddles it (a float's bits do not shift)."""
    ptx = _link(case, dtype=dtype).artifacts.PTX
    assert "call.uni" not in ptx and ".local" not in ptx


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64", "float32", "float64"])
def test_ordered_key_bits_order_as_the_values(dtype):
    """The twiddle the CuTe DSL digit extractor traces, computed by numpy on the host: the
    ordered bits of distinct values rise with them (-0.0 is +0.0), and the top eight bits of
    the GPU test's keys rank them as their values do."""
    kind, width = key_order(dtype)
    unsigned, rng = getattr(np, f"uint{width}"), np.random.default_rng(1)
    if kind == "f":
        x = np.concatenate([rng.standard_normal(500) * 10.0 ** rng.integers(-30, 30, 500),
                            [0.0, -0.0, np.inf, -np.inf]]).astype(dtype)
    else:
        info = np.iinfo(dtype)
        x = np.concatenate([rng.integers(info.min, info.max, 500, dtype=dtype, endpoint=True),
                            np.array([info.min, info.max, 0, -1], dtype=dtype)])
    x = np.unique(x)  # sorted; -0.0 and 0.0 are one value
    bits = ordered_key_bits(x.view(unsigned), kind, width, unsigned, np.where)
    assert (np.diff(bits.astype(object)) > 0).all()
    zero = np.array([-0.0, 0.0], dtype) if kind == "f" else np.zeros(2, dtype)
    assert len(set(ordered_key_bits(zero.view(unsigned), kind, width, unsigned, np.where))) == 1
    case = next(c for c in ORDERED if np.dtype(dtype) in map(np.dtype, c.dtypes)
                and c.params["width"] == width) if width in (32, 64) else None
    if case is not None:
        keys = case.inputs(np.dtype(dtype), 128, rng)[0]
        digits = ordered_key_bits(keys.view(unsigned), kind, width, unsigned, np.where) >> \
            unsigned(width - 8)
        assert (np.argsort(digits, kind="stable") ==
                np.argsort(keys.astype(np.float64), kind="stable")).all()


def test_digit_extractors_of_ordered_keys_are_apart():
    """One extractor per key order: raw bits for unsigned keys, ordered bits for the others."""
    assert call._digits(24, 8, "uint32").__name__ == "bit_field"
    assert call._digits(24, 8, None).__name__ == "bit_field"
    assert call._digits(24, 8, "int32").__name__ == "ordered_bit_field"
    assert call._digits(56, 8, "float64").__name__ == "ordered_bit_field"
