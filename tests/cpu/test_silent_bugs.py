"""cuda.coop's positional order on coopgen's Pythonic surface: the calls that used to bind a
positional argument to the wrong parameter (or drop it) now mean what cuda.coop means, and a
positional argument without a slot is an error. Checked on the resolver's answer (which C++
parameter gets which argument, which template arguments) and by compiling for sm_90."""
import numpy as np
import pytest
from numba import cuda
from numba.cuda import types

import coopgen
from coopgen import block, local, warp
from coopgen.lower import typing as calls
from coopgen.lower.arrays import SizedArray
from coopgen.lower.errors import CoopgenTypeError

I32 = types.int32[::1]
DIMS = (128, 1, 1)


def local_array(n, dtype=types.int32):
    return SizedArray(dtype, (n,), "local")


def resolved(prim, args, kws=None):
    return calls.resolve_call(prim, tuple(args), dict(kws or {}), block_dims=DIMS)


def template(r) -> dict:
    return {t.keyword: v for t, v in r.template_args}


def sources(r) -> dict:
    return {b.param.name: b.source for b in r.bindings}


def test_radix_sort_keys_second_positional_is_items_per_thread():
    r = resolved(block.radix_sort_keys, [local_array(4), types.literal(4)])
    assert template(r)["items_per_thread"] == "4"
    assert sources(r) == {"keys": "arg", "begin_bit": "default", "end_bit": "default"}
    with pytest.raises(CoopgenTypeError, match="items_per_thread=8 disagrees"):
        resolved(block.radix_sort_keys, [local_array(4), types.literal(8)])


def test_load_third_positional_is_items_per_thread_not_a_valid_count():
    r = resolved(block.load, [I32, local_array(4), types.literal(4)])
    assert template(r)["items_per_thread"] == "4"
    assert [p.name for p in r.method.params] == ["block_src_it", "dst_items"]
    # cuda.coop's fifth positional is the valid count, its keyword num_valid_items
    r = resolved(block.load, [I32, local_array(4), types.literal(4), types.literal("striped"),
                              types.int32])
    assert [p.name for p in r.method.params] == ["block_src_it", "dst_items", "block_items_end"]
    assert template(r)["algorithm"] == "cub::BLOCK_LOAD_STRIPED"
    r2 = resolved(block.load, [I32, local_array(4)], {"num_valid_items": types.int32,
                                                       "oob_default": types.int32})
    assert sources(r2)["oob_default"] == "arg"
    # CUB's own names stay keywords
    r3 = resolved(block.load, [I32, local_array(4)], {"block_items_end": types.int32})
    assert r3.method.params[-1].name == "block_items_end"


def test_a_non_constant_positional_in_a_template_slot_is_an_error():
    # Old coopgen code passed the valid count third: now that slot is items_per_thread.
    with pytest.raises(CoopgenTypeError, match="items_per_thread= must be a compile-time constant"):
        resolved(block.load, [I32, local_array(4), types.int32])


def test_extra_positional_is_an_error_never_dropped():
    with pytest.raises(CoopgenTypeError, match=r"block.store: takes at most 6 positional arguments"):
        resolved(block.store, [I32, local_array(4)] + [types.literal(4)] * 5)
    with pytest.raises(CoopgenTypeError, match=r"warp.sum: takes at most 4 positional"):
        resolved(warp.sum, [types.int32] * 5)


def test_same_argument_twice_is_an_error():
    with pytest.raises(CoopgenTypeError, match=r"argument 'block_src_it' is given both positionally and by keyword"):
        resolved(block.load, [I32, local_array(4)], {"block_src_it": I32})
    with pytest.raises(CoopgenTypeError, match=r"argument 'items_per_thread' is given both positionally and by keyword"):
        resolved(block.radix_sort_keys, [local_array(4), types.literal(4)],
                 {"items_per_thread": types.literal(4)})


def test_cuda_coop_keywords_and_cub_aliases():
    r = resolved(block.reduce, [local_array(4)], {"binary_op": types.literal("max")})
    assert r.bindings[1].operator.builtin == "::cuda::maximum<>{}"
    r = resolved(block.reduce, [local_array(4)], {"reduction_op": types.literal("min")})
    assert r.bindings[1].operator.builtin == "::cuda::minimum<>{}"
    r = resolved(block.sum, [types.int32], {"num_valid": types.int32})
    assert [p.name for p in r.method.params] == ["input", "num_valid"]
    # src is BlockReduce's `input` (scalar) or `inputs` (array): each overload's own name
    assert resolved(block.sum, [], {"src": local_array(4)}).method.params[0].name == "inputs"
    assert resolved(block.sum, [], {"src": types.int32}).method.params[0].name == "input"
    r = resolved(block.store, [I32, local_array(4)], {"num_valid_items": types.int32})
    assert r.method.params[-1].name == "valid_items"
    r = resolved(block.merge_sort_keys, [local_array(4), types.literal(4), types.literal("<")],
                 {"values": local_array(4, types.float32)})
    assert [p.name for p in r.method.params] == ["keys", "items", "compare_op"]
    r = resolved(block.radix_sort_keys, [local_array(4)], {"values": local_array(4)})
    assert [p.name for p in r.method.params][:2] == ["keys", "values"]
    r = resolved(block.radix_sort_keys, [local_array(4)], {"blocked_to_striped": types.literal(True)})
    assert r.method.name == "SortBlockedToStriped"


def test_in_place_exchange_and_type_keywords():
    items = local_array(4)
    r = resolved(block.exchange, [items])
    assert r.method.name == "StripedToBlocked"
    assert [b.arg_index for b in r.bindings] == [0, 0]  # the same array in and out
    for value in ("BlockedToStriped", "blocked_to_striped", 2):
        r = resolved(block.exchange, [items], {"block_exchange_type": types.literal(value)})
        assert r.method.name == "BlockedToStriped"
    r = resolved(block.discontinuity, [items, local_array(4, types.boolean)],
                 {"flag_op": types.literal("!=")})
    assert r.method.name == "FlagHeads"
    assert [p.name for p in r.method.params][:2] == ["head_flags", "input"]
    assert [r.bindings[i].arg_index for i in range(2)] == [1, 0]  # items come first
    r = resolved(block.shuffle, [types.int32])
    assert r.method.name == "Offset"
    r = resolved(block.shuffle, [items, local_array(4)])
    assert r.method.name == "Up"
    r = resolved(block.adjacent_difference, [items, local_array(4)],
                 {"difference_op": types.literal("-"), "valid_items": types.int32})
    assert r.method.name == "SubtractLeftPartialTile"


def test_host_two_phase_keeps_every_positional():
    load = block.load(np.int32, 128, 4, "warp_transpose")
    assert load.fixed == {"dtype": np.int32, "threads_per_block": 128, "items_per_thread": 4,
                          "algorithm": "warp_transpose"}
    assert (load.temp_storage_bytes, load.temp_storage_alignment) == (2048, 16)
    reduce = block.reduce(np.int32, 128, "max", 4, "raking")
    assert reduce.fixed["items_per_thread"] == 4 and reduce.fixed["algorithm"] == "raking"
    assert reduce.call_fixed == {"reduction_op": "max"}
    assert block.load(np.int32, dim=(16, 8), items_per_thread=2).fixed["threads_per_block"] \
        == (16, 8)
    wl = warp.load(np.int32, 8, 16, "striped")
    assert wl.fixed == {"dtype": np.int32, "items_per_thread": 8, "threads_in_warp": 16,
                        "algorithm": "striped"}
    with pytest.raises(TypeError, match="at most 4 positional"):
        block.load(np.int32, 128, 4, "direct", 7)
    with pytest.raises(TypeError, match="unexpected argument 'bogus'"):
        block.sum(np.int32, 128, bogus=1)


@pytest.mark.parametrize("call, match", [
    (lambda: block.load(np.int32, 128, 0), "items_per_thread=0 must be an integer >= 1"),
    (lambda: block.sum(np.int32, 128, -2), "items_per_thread=-2"),
    (lambda: block.store(np.int32, 128, 4, "sideways"), "unknown algorithm='sideways'"),
    (lambda: block.exchange("diagonal", np.int32, 128, 4), "unknown block_exchange_type"),
    (lambda: warp.load(np.int32, 4, 32, "bogus"), "unknown algorithm='bogus'"),
    (lambda: block.load("no such dtype", 128, 4), "dtype"),
])
def test_host_value_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_instance_calls_use_cuda_coops_positionals():
    load = block.load(np.int32, 128, 4, "striped")
    assert load.shape.slots == ("src", "dst", "num_valid_items", "oob_default")
    r = resolved(load, [I32, local_array(4), types.int32, types.int32])
    assert [p.name for p in r.method.params][2:] == ["block_items_end", "oob_default"]
    reduce = block.reduce(np.int32, 128, "max", 4)
    assert reduce.shape.slots == ("src", "num_valid")
    sort = block.radix_sort_keys(np.int32, 128, 4)
    assert sort.shape.slots[:4] == ("keys", "items_per_thread", "begin_bit", "end_bit")
    ex = block.exchange("BlockedToStriped", np.int32, 128, 4)
    assert ex.shape.slots == ("items", "output_items", "ranks", "valid_flags")
    assert resolved(ex, [local_array(4)]).method.name == "BlockedToStriped"


def test_the_fixed_calls_compile_for_sm90():
    load = block.load(np.int32, 128, 4, "warp_transpose")
    reduce = block.reduce(np.int32, 128, "max", 4)

    def k(d_in, d_out):
        keys = local.array(4, np.int32)
        block.load(d_in, keys, 4, "striped", 300, -1)
        block.radix_sort_keys(keys, 4)
        block.store(d_out, keys, 4, "direct", 300)
        items = local.array(4, np.int32)
        load(d_in, items, 300, 0)
        block.exchange(items, block_exchange_type="BlockedToStriped")
        d_out[0] = reduce(items) + block.sum(items, 4) + warp.max(items[0]) + warp.min(items[1])

    with coopgen.block_shape(128):
        cuda.compile_all(k, (I32, I32), device=False, abi="numba", cc=(9, 0), output="ltoir")


def test_warp_scan_valid_items_uses_cubs_hidden_partial_scans():
    from coopgen.model import registry
    if registry.package().CCCL != "3.5.0":
        pytest.skip("CCCL 3.5.0 bindings only")
    r = resolved(warp.exclusive_scan, [types.int32, types.literal("+"), types.int32,
                                       types.literal(32), types.int32])
    assert r.method.name == "ExclusiveScanPartial"
    assert [b.param.name for b in r.bindings if b.source == "arg"] == [
        "input", "initial_value", "scan_op", "valid_items"]
    r = resolved(warp.inclusive_scan, [types.int32, types.literal("max")],
                 {"valid_items": types.int32})
    assert r.method.name == "InclusiveScanPartial"
    assert resolved(warp.inclusive_scan, [types.int32, types.literal("max")]).method.name == \
        "InclusiveScan"


def test_warp_scan_valid_items_names_the_cccl_it_needs(monkeypatch):
    from coopgen.api import namespaces
    from coopgen.model import registry
    monkeypatch.setenv("COOPGEN_CCCL", "3.0.1")
    registry.package.cache_clear()
    registry.enums.cache_clear()
    try:
        old_warp = namespaces.build("warp")
        with pytest.raises(CoopgenTypeError, match=r"valid_items= needs CCCL 3.5.0 or newer"):
            calls.resolve_call(old_warp["exclusive_scan"], (types.int32, types.literal("+")),
                               {"valid_items": types.int32}, block_dims=DIMS)
    finally:
        monkeypatch.delenv("COOPGEN_CCCL")
        registry.package.cache_clear()
        registry.enums.cache_clear()


def test_run_length_decode_takes_cuda_coops_names():
    def k(d_in, d_out):
        values = local.array(2, np.int32)
        lengths = local.array(2, np.int32)
        total = local.array(1, np.uint32)
        decoded = local.array(4, np.int32)
        offsets = local.array(4, np.uint32)
        for i in range(2):
            values[i] = d_in[2 * cuda.threadIdx.x + i]
            lengths[i] = 1
        rld = block.run_length(values, lengths, 2, 4, total)
        rld.decode(decoded, 0)
        rld.decode(decoded, decoded_window_offset=4, relative_offsets=offsets)
        d_out[cuda.threadIdx.x] = decoded[0] + offsets[0]

    before = len(calls.RESOLVED)
    with coopgen.block_shape(128):
        cuda.compile_all(k, (I32, I32), device=False, abi="numba", cc=(9, 0), output="ltoir")
    decodes = [s for s in list(calls.RESOLVED)[before:] if "::RunLengthDecode(" in s]
    # decode(items, window offset) and decode(items, window offset, relative offsets) reach
    # CUB's (items, from_decoded_offset) and (items, item_offsets, from_decoded_offset)
    assert sorted({s.count(",") for s in decodes}) == [1, 2], decodes


def test_radix_rank_takes_a_key_bit_range():
    keys, ranks = local_array(4, types.uint32), local_array(4)
    r = resolved(block.radix_rank, [keys, ranks, types.literal(4), types.literal(3),
                                    types.literal(8)], {"descending": types.literal(True)})
    assert template(r)["radix_bits"] == "5" and template(r)["is_descending"] == "true"
    assert r.bindings[2].operator.function.ref.py_func(np.uint32(0b1011000)) == 0b1011
    with pytest.raises(CoopgenTypeError, match="missing required argument 'end_bit'"):
        resolved(block.radix_rank, [keys, ranks, types.literal(4)])
    host = block.radix_rank(np.uint32, 128, 4, 2, 7, True)
    assert host.fixed["radix_bits"] == 5 and host.call_fixed == {"begin_bit": 2, "end_bit": 7}
    with pytest.raises(ValueError, match="not a bit range"):
        block.radix_rank(np.uint32, 128, 4, 5, 3)


@cuda.jit(device=True)
def times(a, b):
    return a * b


def test_scan_identity_only_for_built_in_operators():
    items = local_array(4)
    r = resolved(block.exclusive_scan, [items, items], {"scan_op": types.literal("*")})
    init = [b for b in r.bindings if b.param.name == "initial_value"][0]
    assert init.source == "arg"  # the injected 1
    assert np.int32(1) in [v for _, v in calls.split_call(
        block.exclusive_scan, (items, items), {"scan_op": types.literal("*")}).constants]
    # a Python function's identity is unknown (0 would zero a product): nothing is injected;
    # CUB's own exclusive scan without an initial value runs (thread 0's first item undefined)
    r = resolved(block.exclusive_scan, [items, items], {"scan_op": types.Dispatcher(times)})
    assert [b.param.name for b in r.bindings if b.source == "arg"] == ["input", "output",
                                                                        "scan_op"]
    assert not calls.split_call(block.exclusive_scan, (items, items),
                                {"scan_op": types.Dispatcher(times)}).constants


def test_inclusive_scans_get_no_injected_initial_value():
    """CUB scans arrays inclusively without one; the dtype's max is no identity of a float min
    (an +inf item would come out as the max), so nothing is injected there."""
    items = types.Array(types.float64, 1, "C")
    for prim, kws in ((block.inclusive_scan, {"scan_op": types.literal("min")}),
                      (block.scan, {"scan_op": types.literal("min"),
                                    "mode": types.literal("inclusive")})):
        r = resolved(prim, [local_array(4, types.float64)] * 2, kws)
        assert "initial_value" not in {b.param.name for b in r.bindings}, prim.name
        assert not calls.split_call(prim, (items, items), kws).constants
    r = resolved(block.scan, [local_array(4, types.float64)] * 2, {"scan_op": types.literal("min")})
    assert "initial_value" in {b.param.name for b in r.bindings}  # exclusive: CUB needs it
