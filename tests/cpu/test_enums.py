"""cuda.coop's enums: built from the model and the Pythonic table, mapped by name (their values
are CUB's + 1), accepted on the host and inside kernels (globals, attribute chains)."""
import numpy as np
import pytest
from numba import cuda
from numba.cuda import types

import coopgen
from coopgen import block, enums, local, warp
from coopgen.lower import typing as calls
from coopgen.model import registry
from coopgen.lower.arrays import SizedArray
from coopgen.enums import BlockLoadAlgorithm
from coopgen.lower.arrays import EnumMemberLiteral

I32 = types.int32[::1]


def test_algorithm_enums_follow_cubs_enums_plus_one():
    for spec in registry.package().ENUMS:
        cls = getattr(enums, spec.name)
        cub = [n for n, _ in sorted(spec.values, key=lambda nv: nv[1])]
        assert [str(m) for m in cls] == [f"::cub::{n}" for n in cub]
        assert [int(m) for m in cls] == list(range(1, len(cub) + 1))
        assert all(n.endswith(m.name) for n, m in zip(cub, cls))
    assert BlockLoadAlgorithm.DIRECT == 1 and str(BlockLoadAlgorithm.DIRECT) == \
        "::cub::BLOCK_LOAD_DIRECT"
    assert enums.BlockHistogramAlgorithm.SORT == 1 and enums.BlockHistogramAlgorithm.ATOMIC == 2
    assert [m.name for m in enums.BlockScanAlgorithm] == ["RAKING", "RAKING_MEMOIZE", "WARP_SCANS"]


def test_type_enums_in_the_namespaces():
    assert [m.name for m in block.BlockExchangeType] == [
        "StripedToBlocked", "BlockedToStriped", "WarpStripedToBlocked", "BlockedToWarpStriped",
        "ScatterToBlocked", "ScatterToStriped", "ScatterToStripedGuarded",
        "ScatterToStripedFlagged"]
    assert [m.name for m in block.BlockDiscontinuityType] == ["HEADS", "TAILS", "HEADS_AND_TAILS"]
    assert [m.name for m in block.BlockShuffleType] == ["Offset", "Rotate", "Up", "Down"]
    assert [m.name for m in block.BlockAdjacentDifferenceType] == ["SubtractLeft", "SubtractRight"]
    assert [m.name for m in warp.WarpExchangeType] == ["StripedToBlocked", "BlockedToStriped",
                                                      "ScatterToStriped"]
    assert int(block.BlockShuffleType.Up) == 3


def _template(prim, args, kws=None):
    r = calls.resolve_call(prim, tuple(args), dict(kws or {}), block_dims=(128, 1, 1))
    return {t.keyword: v for t, v in r.template_args}, r.method.name


@pytest.mark.parametrize("value", [BlockLoadAlgorithm.WARP_TRANSPOSE, "warp_transpose",
                                   "WARP_TRANSPOSE", "BLOCK_LOAD_WARP_TRANSPOSE", 5])
def test_algorithm_by_member_name_string_or_coop_int(value):
    ty = (EnumMemberLiteral(value) if isinstance(value, BlockLoadAlgorithm)
          else types.literal(value))
    got, _ = _template(block.load, [I32, SizedArray(types.int32, (4,), "local")],
                       {"algorithm": ty})
    assert got["algorithm"] == "cub::BLOCK_LOAD_WARP_TRANSPOSE"


def test_by_name_not_by_value():
    # BlockHistogramAlgorithm.SORT == 1 == CUB's BLOCK_HISTO_ATOMIC: the name decides
    h = block.BlockHistogram(np.uint8, threads_per_block=128, items_per_thread=4, bins=256,
                             algorithm=enums.BlockHistogramAlgorithm.SORT)
    assert h.temp_storage_bytes == block.BlockHistogram(
        np.uint8, threads_per_block=128, items_per_thread=4, bins=256,
        algorithm="sort").temp_storage_bytes
    two_phase = block.load(np.int32, 128, 4, BlockLoadAlgorithm.WARP_TRANSPOSE)
    assert (two_phase.temp_storage_bytes, two_phase.temp_storage_alignment) == (2048, 16)
    ex = block.exchange(block.BlockExchangeType.BlockedToStriped, np.int32, 128, 4)
    items = SizedArray(types.int32, (4,), "local")
    assert calls.resolve_call(ex, (items,), {}, block_dims=(128, 1, 1)).method.name == \
        "BlockedToStriped"


def test_selector_members_in_kernels_resolve_by_name():
    items = SizedArray(types.int32, (4,), "local")
    for member in block.BlockExchangeType:
        if member.name.startswith("Scatter"):
            continue
        _, method = _template(block.exchange, [items],
                              {"block_exchange_type": EnumMemberLiteral(member)})
        assert method == member.name


WT = BlockLoadAlgorithm.WARP_TRANSPOSE


def test_members_compile_as_globals_and_attribute_chains():
    def k(d_in, d_out):
        items = local.array(4, np.int32)
        block.load(d_in, items, 4, WT)
        block.exchange(items, block_exchange_type=block.BlockExchangeType.BlockedToStriped)
        block.store(d_out, items, 4, enums.BlockStoreAlgorithm.STRIPED)
        d_out[0] = WT + enums.BlockScanAlgorithm.WARP_SCANS

    before = len(calls.RESOLVED)
    with coopgen.block_shape(128):
        cuda.compile_all(k, (I32, I32), device=False, abi="numba", cc=(9, 0), output="ltoir")
    assert any("BlockedToStriped" in s for s in list(calls.RESOLVED)[before:])


def test_unknown_enum_value_on_the_host_is_a_value_error():
    with pytest.raises(ValueError, match="unknown algorithm=7"):
        block.load(np.int32, 128, 4, 7)
    with pytest.raises(ValueError, match="unknown algorithm"):
        block.store(np.int32, 128, 4, enums.BlockScanAlgorithm.RAKING)
