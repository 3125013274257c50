"""Every positional slot of a ``coopgen.coop`` entry point binds what cuda.coop's signature has
there: the in-kernel call, the two-phase host call and the calls of the object it returns.

The table below is cuda.coop's side, written from its documented signatures. A parameter CCCL
added later (``valid_items`` of CCCL 3.5.0's ``*ScanPartial``) may follow cuda.coop's slots but
never take one that cuda.coop code fills with something else: that is how ``ws(x, 0)`` once
passed the initial value as the valid count. Objects are made with the host arguments cuda.coop
code passes, since what the host call fixes leaves the object's slots.
"""
import numpy as np
import pytest
from numba.cuda import types

from coopgen import coop
from coopgen.api.primitives import Primitive
from coopgen.lower import typing as calls
from coopgen.lower.arrays import SizedArray

I32 = np.int32
# name: (kernel slots, host slots, (host args, host kws), object slots)
CUDA_COOP = {
    "block.load": (["src", "dst", "items_per_thread", "algorithm", "num_valid_items",
                    "oob_default", "temp_storage"],
                   ["dtype", "threads_per_block", "items_per_thread", "algorithm"],
                   ((I32, 128, 4, "direct"), {}), ["src", "dst", "num_valid_items", "oob_default"]),
    "block.store": (["dst", "src", "items_per_thread", "algorithm", "num_valid_items",
                     "temp_storage"],
                    ["dtype", "threads_per_block", "items_per_thread", "algorithm"],
                    ((I32, 128, 4, "direct"), {}), ["dst", "src", "num_valid_items"]),
    "block.reduce": (["src", "items_per_thread", "binary_op", "num_valid", "algorithm",
                      "temp_storage"],
                     ["dtype", "threads_per_block", "binary_op", "items_per_thread", "algorithm"],
                     ((I32, 128, "max", 4), {}), ["src", "num_valid"]),
    "block.sum": (["src", "items_per_thread", "num_valid", "algorithm", "temp_storage"],
                  ["dtype", "threads_per_block", "items_per_thread", "algorithm"],
                  ((I32, 128, 4), {}), ["src", "num_valid"]),
    "block.scan": (["src", "dst", "items_per_thread", "initial_value", "mode", "scan_op",
                    "prefix_op", "block_aggregate", "algorithm", "temp_storage"],
                   ["dtype", "threads_per_block", "items_per_thread", "mode", "scan_op",
                    "initial_value", "prefix_op", "block_aggregate", "algorithm"],
                   ((I32, 128, 4, "exclusive", "max"), {}), ["src", "dst", "initial_value"]),
    "block.exclusive_sum": (["src", "dst", "items_per_thread", "prefix_op", "block_aggregate",
                             "algorithm", "temp_storage"],
                            ["dtype", "threads_per_block", "items_per_thread", "prefix_op",
                             "algorithm"], ((I32, 128, 4), {}), ["src", "dst"]),
    "block.inclusive_sum": (["src", "dst", "items_per_thread", "prefix_op", "block_aggregate",
                             "algorithm", "temp_storage"],
                            ["dtype", "threads_per_block", "items_per_thread", "prefix_op",
                             "algorithm"], ((I32, 128, 4), {}), ["src", "dst"]),
    "block.exclusive_scan": (["src", "dst", "items_per_thread", "scan_op", "initial_value",
                              "prefix_op", "block_aggregate", "algorithm", "temp_storage"],
                             ["dtype", "threads_per_block", "scan_op", "items_per_thread",
                              "initial_value", "prefix_op", "algorithm"],
                             ((I32, 128, "max", 4), {"initial_value": 0}),
                             ["src", "dst", "initial_value"]),
    "block.inclusive_scan": (["src", "dst", "items_per_thread", "scan_op", "initial_value",
                              "prefix_op", "block_aggregate", "algorithm", "temp_storage"],
                             ["dtype", "threads_per_block", "scan_op", "items_per_thread",
                              "initial_value", "prefix_op", "algorithm"],
                             ((I32, 128, "max", 4), {}), ["src", "dst", "initial_value"]),
    "block.exchange": (["items", "output_items", "items_per_thread", "ranks", "valid_flags",
                        "block_exchange_type", "warp_time_slicing", "temp_storage"],
                       ["block_exchange_type", "dtype", "threads_per_block", "items_per_thread",
                        "warp_time_slicing"],
                       (("ScatterToStriped", I32, 128, 4), {}),
                       ["items", "output_items", "ranks", "valid_flags"]),
    "block.merge_sort_keys": (["keys", "items_per_thread", "compare_op", "values",
                               "valid_items", "oob_default", "temp_storage"],
                              ["dtype", "threads_per_block", "items_per_thread", "compare_op",
                               "value_dtype"], None, None),
    "block.merge_sort_pairs": (["keys", "values", "items_per_thread", "compare_op",
                                "valid_items", "oob_default", "temp_storage"], None, None, None),
    "block.radix_sort_keys": (["keys", "items_per_thread", "begin_bit", "end_bit", "values",
                               "decomposer", "blocked_to_striped", "temp_storage"],
                              ["dtype", "threads_per_block", "items_per_thread", "value_dtype",
                               "begin_bit", "end_bit"], ((I32, 128, 4), {}),
                              ["keys", "items_per_thread", "begin_bit", "end_bit"]),
    "block.radix_sort_keys_descending": (["keys", "items_per_thread", "begin_bit", "end_bit",
                                          "values", "decomposer", "blocked_to_striped",
                                          "temp_storage"], None, ((I32, 128, 4), {}),
                                         ["keys", "items_per_thread", "begin_bit", "end_bit"]),
    "block.radix_rank": (["items", "ranks", "items_per_thread", "begin_bit", "end_bit",
                          "descending", "temp_storage", "exclusive_digit_prefix"],
                         ["dtype", "threads_per_block", "items_per_thread", "begin_bit",
                          "end_bit", "descending"], None, None),
    "block.run_length": (["run_values", "run_lengths", "runs_per_thread",
                          "decoded_items_per_thread", "total_decoded_size",
                          "decoded_offset_dtype", "temp_storage"], None, None, None),
    "block.shuffle": (["items", "output_items", "items_per_thread", "block_shuffle_type",
                       "distance", "temp_storage", "block_prefix", "block_suffix"],
                      ["block_shuffle_type", "dtype", "threads_per_block", "items_per_thread",
                       "distance"], None, None),
    "block.discontinuity": (["items", "head_flags", "tail_flags", "items_per_thread",
                             "flag_op", "block_discontinuity_type", "tile_predecessor_item",
                             "tile_successor_item", "temp_storage"],
                            ["dtype", "threads_per_block", "items_per_thread", "flag_op",
                             "flag_dtype", "block_discontinuity_type"], None, None),
    "block.adjacent_difference": (["items", "output_items", "items_per_thread",
                                   "difference_op", "block_adjacent_difference_type",
                                   "valid_items", "tile_predecessor_item",
                                   "tile_successor_item", "temp_storage"],
                                  ["block_adjacent_difference_type", "dtype",
                                   "threads_per_block", "items_per_thread", "difference_op"],
                                  None, None),
    "block.histogram": (["items", "histogram", "algorithm"], None, None, None),
    "warp.load": (["src", "dst", "items_per_thread", "threads_in_warp", "algorithm",
                   "num_valid_items", "oob_default", "temp_storage"],
                  ["dtype", "items_per_thread", "threads_in_warp", "algorithm",
                   "num_valid_items", "oob_default"], ((I32, 4, 32, "direct", 50), {}),
                  ["src", "dst", "num_valid_items", "oob_default"]),
    "warp.store": (["dst", "src", "items_per_thread", "threads_in_warp", "algorithm",
                    "num_valid_items", "temp_storage"],
                   ["dtype", "items_per_thread", "threads_in_warp", "algorithm",
                    "num_valid_items"], ((I32, 4, 32, "direct", 50), {}),
                   ["dst", "src", "num_valid_items"]),
    "warp.reduce": (["src", "binary_op", "threads_in_warp", "valid_items", "temp_storage"],
                    ["dtype", "binary_op", "threads_in_warp", "valid_items"],
                    ((I32, "max", 32, 20), {}), ["src", "valid_items"]),
    "warp.sum": (["src", "threads_in_warp", "valid_items", "temp_storage"],
                 ["dtype", "threads_in_warp"], ((I32, 32), {}), ["src", "valid_items"]),
    "warp.max": (["src", "threads_in_warp", "valid_items", "temp_storage"],
                 ["dtype", "threads_in_warp"], ((I32, 32), {}), ["src", "valid_items"]),
    "warp.min": (["src", "threads_in_warp", "valid_items", "temp_storage"],
                 ["dtype", "threads_in_warp"], ((I32, 32), {}), ["src", "valid_items"]),
    "warp.exclusive_sum": (["src", "threads_in_warp", "warp_aggregate", "temp_storage"],
                           ["dtype", "threads_in_warp"], ((I32, 32), {}),
                           ["src", "warp_aggregate"]),
    "warp.inclusive_sum": (["src", "threads_in_warp", "warp_aggregate", "temp_storage"],
                           ["dtype", "threads_in_warp"], ((I32, 32), {}),
                           ["src", "warp_aggregate"]),
    "warp.exclusive_scan": (["src", "scan_op", "initial_value", "threads_in_warp",
                             "valid_items", "warp_aggregate", "temp_storage"],
                            ["dtype", "scan_op", "initial_value", "threads_in_warp"],
                            ((), {"dtype": I32, "scan_op": "max", "initial_value": 0}),
                            ["src", "initial_value"]),
    "warp.inclusive_scan": (["src", "scan_op", "initial_value", "threads_in_warp",
                             "valid_items", "warp_aggregate", "temp_storage"],
                            ["dtype", "scan_op", "initial_value", "threads_in_warp"],
                            ((I32, "max"), {}), ["src", "initial_value"]),
    "warp.exchange": (["items", "output_items", "items_per_thread", "ranks",
                       "warp_exchange_type", "threads_in_warp", "offset_dtype", "temp_storage"],
                      ["dtype", "items_per_thread", "threads_in_warp", "warp_exchange_type",
                       "offset_dtype"], ((I32, 4, 32, "ScatterToStriped"), {}),
                      ["items", "output_items", "ranks"]),
    "warp.merge_sort_keys": (["keys", "items_per_thread", "compare_op", "threads_in_warp",
                              "values", "temp_storage"],
                             ["dtype", "items_per_thread", "compare_op", "value_dtype",
                              "threads_in_warp"], None, None),
    "warp.merge_sort_pairs": (["keys", "values", "items_per_thread", "compare_op",
                               "threads_in_warp", "temp_storage"],
                              ["dtype", "value_dtype", "items_per_thread", "compare_op",
                               "threads_in_warp"], None, None),
}

# Same call shapes as their siblings in cuda.coop's table.
for _scope in ("block", "warp"):
    for _kind in ("keys", "pairs"):
        CUDA_COOP[f"{_scope}.stable_merge_sort_{_kind}"] = CUDA_COOP[f"{_scope}.merge_sort_{_kind}"]
CUDA_COOP["block.radix_sort_pairs"] = (
    ["keys", "values", "items_per_thread", "begin_bit", "end_bit", "decomposer",
     "blocked_to_striped", "temp_storage"],
    ["dtype", "value_dtype", "threads_per_block", "items_per_thread", "begin_bit", "end_bit"],
    ((I32, I32, 128, 4), {}), ["keys", "values", "items_per_thread", "begin_bit", "end_bit"])
CUDA_COOP["block.radix_sort_pairs_descending"] = CUDA_COOP["block.radix_sort_pairs"]


def entry(name):
    scope, fn = name.split(".")
    return getattr(getattr(coop, scope), fn)


def assert_slots(where, ours, theirs):
    """cuda.coop's slots come first, in its order; coopgen's may continue only with parameters
    cuda.coop's own signature has (never one CCCL added that cuda.coop code does not pass)."""
    ours = list(ours)
    assert ours[:len(theirs)] == theirs, f"{where}: coopgen {ours} vs cuda.coop {theirs}"


@pytest.mark.parametrize("name", sorted(CUDA_COOP))
def test_kernel_and_host_slots_are_cuda_coops(name):
    kernel, host, _, _ = CUDA_COOP[name]
    prim = entry(name)
    assert list(prim.shape.slots) == kernel, name
    if host is not None:
        assert list(prim.host) == host, name


@pytest.mark.parametrize("name", sorted(n for n, row in CUDA_COOP.items() if row[2]))
def test_object_slots_are_cuda_coops(name):
    kernel, _, (args, kws), instance = CUDA_COOP[name]
    obj = entry(name)(*args, **kws)
    assert_slots(f"{name} object", obj.shape.slots, instance)
    extra = [s for s in obj.shape.slots[len(instance):] if s not in kernel]
    assert not extra, f"{name} object: slots {extra} are not cuda.coop parameters"


def test_every_cuda_coop_function_is_in_the_table():
    """A Pythonic function with cuda.coop's call shape (an ``args`` row) is checked here."""
    for scope in ("block", "warp"):
        ns = getattr(coop, scope)
        for attr in dir(ns):
            prim = getattr(ns, attr)
            if isinstance(prim, Primitive) and prim.shape is not None \
                    and prim.shape.slots is not None and prim.host is not None:
                assert prim.name in CUDA_COOP, f"{prim.name} has no cuda.coop row here"


def binding_of(obj, args, dims=(32, 1, 1)):
    r = calls.resolve_call(obj, tuple(args), {}, block_dims=dims)
    return r


def test_warp_scan_object_second_positional_is_the_initial_value():
    """ws(x, 0): cuda.coop's initial value, never CCCL 3.5.0's valid_items (no lane valid)."""
    ws = coop.warp.exclusive_scan(dtype=np.int32, scan_op="max", initial_value=0)
    r = binding_of(ws, (types.int32, types.literal(5)))
    names = [b.param.name for b in r.bindings]
    assert r.method.name == "ExclusiveScan" and "valid_items" not in names
    r = calls.resolve_call(ws, (types.int32, types.literal(5)), {"valid_items": types.int32},
                           block_dims=(32, 1, 1))
    assert r.method.name == "ExclusiveScanPartial"


def test_warp_load_object_third_positional_is_the_valid_count():
    wl = coop.warp.load(np.int32, 4, 32, "direct", 50)
    arr = SizedArray(types.int32, (4,), "local")
    r = binding_of(wl, (types.int32[::1], arr, types.int32, types.int32))
    assert [b.param.name for b in r.bindings][-2:] == ["valid_items", "oob_default"]


def test_coop_scans_of_python_operators_start_from_zero_coopgen_block_keeps_cubs():
    """cuda.coop seeds an exclusive scan with a Python operator and no initial value with 0;
    coopgen.block and coopgen.warp leave CUB's first output as CUB does (no seed)."""
    from numba import cuda as nbcuda

    from coopgen import block, warp

    @nbcuda.jit(device=True)
    def larger(a, b):
        return max(a, b)

    op = types.Dispatcher(larger)
    arr = SizedArray(types.int32, (4,), "local")
    for prim, args in ((coop.block.exclusive_scan, (arr, arr)),
                       (coop.block.exclusive_scan, (types.int32,)),
                       (coop.warp.exclusive_scan, (types.int32,))):
        constants = calls.split_call(prim, args, {"scan_op": op}).constants
        assert [v for _, v in constants] == [np.int32(0)], prim
    for prim, args in ((block.exclusive_scan, (arr, arr)), (warp.exclusive_scan, (types.int32,))):
        assert not calls.split_call(prim, args, {"scan_op": op}).constants, prim
    # inclusive scans need no seed, and built-in operators keep their identity
    assert not calls.split_call(coop.block.inclusive_scan, (arr, arr),
                                {"scan_op": op}).constants
    constants = calls.split_call(coop.block.exclusive_scan, (arr, arr),
                                 {"scan_op": types.literal("max")}).constants
    assert [v for _, v in constants] == [np.iinfo(np.int32).min]
