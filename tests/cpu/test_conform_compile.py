"""The host side of cuda.coop's two-phase call shapes (tests/gpu/compat/conform_kernels.py,
whose kernels tests/cpu/test_coop_compile.py links for sm_90): what the objects keep, and
cuda.coop's submodules."""
import sys
from pathlib import Path

import numba

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu" / "compat"))

from coopgen import coop  # noqa: E402
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
