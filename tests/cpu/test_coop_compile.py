"""The cuda.coop-style kernels of tests/gpu/compat compile and link for sm_90 without a GPU, as
their launches would compile them, with no local memory; and the compile-time rules of
``from coopgen import coop``: kernel-argument sizes, in-kernel TempStorage, ThreadData."""
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda
from numba.cuda import types

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu" / "compat"))

import coopgen  # noqa: E402
from coopgen import block_shape, coop
from coopgen.linkcheck import link_cubin  # noqa: E402
from coop_kernels import CASES  # noqa: E402
from coop_util import link_as_launched  # noqa: E402
from conform_kernels import CASES as TWO_PHASE_CASES  # noqa: E402


@pytest.mark.parametrize("make_case", CASES + TWO_PHASE_CASES, ids=lambda c: c.__name__[5:])
def test_kernel_links_as_launched(make_case):
    case = make_case(np.random.default_rng())
    res = link_as_launched(case.kernel, case.block, *case.args)
    assert res.kernel.local_bytes == 0 and res.kernel.spill_stores == 0


def test_sizes_from_arguments_specialise_the_kernel():
    """The dispatcher keys its kernels on the argument values the kernel was compiled with."""
    from coopgen.lower.rewrite import depends_on

    class Dispatcher:
        _launch_config_key = staticmethod(lambda cfg: (cfg.blockdim,))

        def mark_launch_config_sensitive(self):
            self.marked = True

    class Cfg:
        blockdim = (128, 1, 1)

        def __init__(self, *args):
            self.args = args

    d = Dispatcher()
    depends_on(d, [(2, ()), (0, ("shape",))])
    x = np.zeros((4, 8))
    assert d.marked
    assert d._launch_config_key(Cfg(x, None, 4)) == ((128, 1, 1), 4, (4, 8))
    assert d._launch_config_key(Cfg(x, None, 4)) != d._launch_config_key(Cfg(x, None, 8))


def sized_by_argument(d_in, n):
    items = coop.local.array(n, d_in.dtype)
    items[0] = d_in[0]


def test_argument_size_without_a_launch_is_reported():
    with block_shape(128), pytest.raises(Exception, match=r"shape=int64 must be a "
                                         r"compile-time constant"):
        link_cubin(sized_by_argument, (types.int32[::1], types.int64))


def bad_array_keyword(d_in):
    items = coop.local.array(4, d_in.dtype, align=16)
    items[0] = d_in[0]


def test_array_keywords_are_checked():
    with pytest.raises(Exception, match="unknown keyword 'align'; parameters are shape, "
                                               "dtype, alignment"):
        link_cubin(bad_array_keyword, (types.int32[::1],))


def storage_too_small(d_in):
    temp = coop.TempStorage(64)
    items = coop.local.array(4, d_in.dtype)
    coop.block.radix_sort_keys(items, temp_storage=temp)


def storage_underaligned(d_in):
    temp = coop.TempStorage(None, 4)
    items = coop.local.array(4, d_in.dtype)
    coop.block.exclusive_sum(items, items, temp_storage=temp)


def test_in_kernel_storage_size_and_alignment_are_checked():
    with block_shape(128), pytest.raises(Exception, match="size_in_bytes is smaller than "
                                                          "required"):
        link_cubin(storage_too_small, (types.int32[::1],))
    with block_shape(128), pytest.raises(Exception, match="alignment is smaller than "
                                                          "required"):
        link_cubin(storage_underaligned, (types.int32[::1],))


def bad_sharing(d_in):
    temp = coop.TempStorage(sharing="both")
    items = coop.local.array(4, d_in.dtype)
    coop.block.radix_sort_keys(items, temp_storage=temp)


def exclusive_auto_sync(d_in):
    temp = coop.TempStorage(sharing="exclusive", auto_sync=True)
    items = coop.local.array(4, d_in.dtype)
    coop.block.radix_sort_keys(items, temp_storage=temp)


def test_in_kernel_storage_arguments_are_checked():
    with block_shape(128), pytest.raises(ValueError, match="sharing must be 'shared' or "
                                                            "'exclusive'"):
        link_cubin(bad_sharing, (types.int32[::1],))
    with block_shape(128), pytest.raises(ValueError, match="sharing='exclusive'.*"
                                                            "auto_sync=True"):
        link_cubin(exclusive_auto_sync, (types.int32[::1],))
    assert coop.TempStorage(sharing=" Exclusive ").sharing == "exclusive"


def storage_twice(d_in):
    temp = coop.TempStorage()
    items = coop.local.array(4, d_in.dtype)
    coop.block.radix_sort_keys[temp](items, temp_storage=temp)


def test_storage_given_twice_is_an_error():
    with block_shape(128), pytest.raises(Exception, match="cannot use both getitem "
                                         "temp_storage syntax and temp_storage keyword"):
        link_cubin(storage_twice, (types.int32[::1],))


def thread_data_without_source(d_in):
    items = coop.ThreadData(4)
    coop.block.radix_sort_keys(items)


def test_thread_data_dtype_needs_a_source():
    with block_shape(128), pytest.raises(Exception, match="cannot infer the dtype"):
        link_cubin(thread_data_without_source, (types.int32[::1],))


def sort_with_decomposer(d_in):
    items = coop.local.array(4, d_in.dtype)
    coop.block.radix_sort_keys(items, decomposer=DECOMPOSER)


DECOMPOSER = coop.Decomposer(lambda x: x, np.int32)


def test_decomposer_is_refused():
    with block_shape(128), pytest.raises(ValueError, match="decomposer"):
        link_cubin(sort_with_decomposer, (types.int32[::1],))


def test_module_surface():
    assert coop.block.load is coopgen.block.load and coop.warp.sum is coopgen.warp.sum
    for scope, ns in (("block", coop.block), ("warp", coop.warp)):
        assert callable(ns.make_load) and callable(ns.make_sum), scope
    load = coop.block.make_load(np.int32, threads_per_block=128, items_per_thread=4)
    assert load.files == [] and load.temp_storage_bytes == 1
    with pytest.raises(NotImplementedError, match="Explicit temp_storage is not supported for "
                                                  "histogram."):
        coop.block.make_histogram(np.uint8, np.uint32, 128, 4, temp_storage=coop.TempStorage())
    for name in ("local", "shared", "TempStorage", "ThreadData", "Decomposer", "NoAlgorithm"):
        assert hasattr(coop, name)
    assert cuda.jit(link=load.files)  # old code passes .files to link=


def test_gpu_dataclass_sizes():
    from coop_kernels import SCAN_PARAMS
    load, scan, store = SCAN_PARAMS.load, SCAN_PARAMS.scan, SCAN_PARAMS.store
    sizes = [p.temp_storage_bytes for p in (load, scan, store)]
    assert SCAN_PARAMS.temp_storage_bytes_sum == sum(sizes)
    assert SCAN_PARAMS.temp_storage_bytes_max == max(sizes)
    assert SCAN_PARAMS.temp_storage_alignment == max(p.temp_storage_alignment
                                                     for p in (load, scan, store))
    with pytest.raises(TypeError, match="expected a dataclass instance"):
        coop.gpu_dataclass(object())


def test_two_phase_objects_of_struct_types():
    """Records and numba struct types are dtypes of two-phase objects too (C++ sees an opaque
    struct of their size and alignment)."""
    from coop_kernels import float2
    rec = np.dtype([("a", np.int32), ("b", np.float64)], align=True)
    for dtype, size in ((float2, 8), (rec, 16)):
        load = coop.block.make_load(dtype, threads_per_block=128, items_per_thread=2,
                                    algorithm="warp_transpose")
        assert load.temp_storage_bytes == 128 * 2 * size


def test_factories_take_cuda_coop_positional_order():
    """make_* put items_per_thread third (block) and the operator second (warp reduce/scans),
    whatever the order of the function's own host call."""
    red = coop.block.make_reduce(np.int32, 128, 4, binary_op="max")
    assert red.fixed["items_per_thread"] == 4 and red.fixed["threads_per_block"] == 128
    pairs = coop.block.make_merge_sort_pairs(np.int32, np.float32, 64, 2, compare_op="<")
    assert pairs.fixed["items_per_thread"] == 2 and pairs.fixed["threads_per_block"] == 64
    assert coop.warp.make_exclusive_scan(np.int32, "max", 16).fixed["threads_in_warp"] == 16
    # warp merge sorts: (dtype, items_per_thread, compare_op, value_dtype, threads_in_warp),
    # as cuda.coop's own tests call make_merge_sort_keys(T, items_per_thread, op)
    sort = coop.warp.make_merge_sort_keys(np.int32, 4, "<", None, 16)
    assert sort.fixed["items_per_thread"] == 4 and sort.fixed["threads_in_warp"] == 16
    assert sort.call_fixed["compare_op"] == "<"
    # then the function's own host order: make_load(dtype, tpb, ipt, algorithm)
    load = coop.block.make_load(np.int32, 32, 4, "striped")
    assert load.fixed["algorithm"] == "striped" and load.fixed["items_per_thread"] == 4
    assert coop.block.make_reduce(np.int32, 64, 2, "max").call_fixed["reduction_op"] == "max"
    assert isinstance(load, coop.Invocable) and load.files  # old code asserts it has files
    with pytest.raises(TypeError, match="make_sum: takes at most 4 positional"):
        coop.block.make_sum(np.int32, 128, 4, "raking", 1)


def test_enums():
    assert int(coop.BlockLoadAlgorithm.DIRECT) == 1  # cuda.coop's values: CUB's + 1
    assert str(coop.BlockScanAlgorithm.RAKING) == "::cub::BLOCK_SCAN_RAKING"
    assert coop.block.BlockExchangeType.StripedToBlocked and coop.warp.WarpExchangeType
