"""cuda.coop's group-first API (``coop.sum(coop.this_block(), x)``): the groups, and one table
mapping each call, per group family, to the Pythonic entry point it becomes
(coopgen.resolve.groups says how a row reads; the IR rewrite carries it out).

Keywords, defaults and return conventions follow NVIDIA's stubs (docs/coop.md names the commit):
results that cuda.coop returns are new per-thread arrays and the inputs stay as they were; a
scalar in gives a scalar out. Beyond NVIDIA's profile, block calls take arrays where NVIDIA's take
scalars (``coop.sum(block, items)``), and every dtype coopgen binds goes through.
"""
import dataclasses

from ..resolve.groups import (Group, GroupCall, Route, decoded_window, full_tile,
                              histogram_shape, load_keeps_unloaded, mapped_group, prefix_callback,
                              radix_rank_bits, sort_order,
                              store_keeps_items)

#: NVIDIA's algorithm spellings -> coopgen's (the rest are the same lower-case enum names).
LOAD_ALGORITHMS = {a: a for a in ("direct", "striped", "vectorize", "transpose",
                                  "warp_transpose", "warp_transpose_timesliced")}
WARP_LOAD_ALGORITHMS = {a: a for a in ("direct", "striped", "vectorize", "transpose")}
REDUCE_OPERATORS = {k: k for k in ("sum", "+", "add", "plus", "min", "minimum", "max", "maximum",
                                   "*", "mul", "multiplies", "prod", "&", "bit_and", "|",
                                   "bit_or", "^", "bit_xor")}
REDUCE_OPERATORS["prod"] = "*"

_STORAGE = ("temp_storage", "temp_storage")
#: cuda.coop traps on a run-time valid_items outside the group's tile (coopgen.resolve.groups)
_VALID_SRC = (("valid_items", "items", "src"),)

#: A reduction over a block's groups of warps: each warp's, then its group's warps' (a
#: composed call of the rewrite's, of the warp reduction the route names)
_MAPPED = dict(width=None, hook=mapped_group, special="mapped_reduce")

#: A block scan's prefix callback (its state array the optional positional after the value)
#: and aggregate; a warp scan's valid lanes and aggregate.
_PREFIX = (("prefix_op", "prefix_op"), ("block_prefix_callback_op", "prefix_op"),
           ("aggregate_output", "block_aggregate"))
_PARTIAL = (("valid_items", "valid_items"), ("aggregate_output", "warp_aggregate"))
#: cuda.coop traps on a warp scan's run-time valid_items outside 1 to the warp's lanes
_LANES = (("valid_items", "lanes", None),)


def _block_scan(target: str, *extra) -> Route:
    """A block scan (of scan_op "+" where the call takes one and none is given)."""
    return Route(target, (("value", "src"), ("state", None), *extra, *_PREFIX,
                          ("algorithm", "algorithm"), _STORAGE),
                 positional=2, optional=1, result="new", output="dst", hook=prefix_callback,
                 defaults={"scan_op": "+"} if _SCAN_OP in extra and "mode" not in dict(extra)
                 else {})


def _warp_scan(target: str, *extra, **kws) -> Route:
    return Route(target, (("value", "src"), *extra, *_PARTIAL, ("algorithm", None),
                          ("temp_storage", None)), bounds=_LANES, **kws)


def _warp_sum(target: str) -> Route:
    """A warp sum; of the first ``valid_items`` lanes: a scan of "+" (CUB has no partial
    sums)."""
    partial = _warp_scan(target.replace("_sum", "_scan"), fixed={"scan_op": "+"})
    return _warp_scan(target, choose=("valid_items", {None: _warp_scan(target), True: partial,
                                                      False: partial}))


_SCAN_OP = ("scan_op", "scan_op")
_INITIAL = ("initial_value", "initial_value")


def _sort(target: str, pairs: bool, *extra) -> Route:
    params = (("keys", "keys"),) + ((("values", "values"),) if pairs else ()) + extra
    return Route(target, params + (_STORAGE,), positional=2 if pairs else 1, result="copy",
                 inputs=("keys", "values") if pairs else ("keys",), scalar_result="items")


def _radix(name: str, pairs: bool) -> Route:
    bits = (("begin_bit", "begin_bit"), ("end_bit", "end_bit"), ("descending", None))
    plain, down = f"block.{name}", f"block.{name.replace('_keys', '_keys_descending')}"
    if pairs:
        down = "block.radix_sort_pairs_descending"
    base = _sort(plain, pairs, *bits)
    return dataclasses.replace(base, choose=("descending", {
        None: base, False: base, True: dataclasses.replace(base, target=down)}))


def _merge(scope: str, pairs: bool) -> Route:
    name = f"{scope}.merge_sort_{'pairs' if pairs else 'keys'}"
    extra = (("descending", None), ("compare_op", "compare_op"),
             ("valid_items", "valid_items"), ("oob_default", "oob_default"))
    return dataclasses.replace(_sort(name, pairs, *extra), hook=sort_order)


def _topk(name: str, pairs: bool) -> Route:
    keys = (("keys", "keys"),) + ((("values", "values"),) if pairs else ())
    return Route(f"block.block_topk.{name}", keys + (
        ("k", "k"), ("valid_items", "num_valid"), ("begin_bit", "begin_bit"),
        ("end_bit", "end_bit"), ("is_full_tile", "is_full_tile"), _STORAGE),
        positional=len(keys) + 1, result="copy", inputs=tuple(n for n, _ in keys),
        hook=full_tile)


_DISCONTINUITY = (("values", "items"), ("mode", None), ("flag_op", "flag_op"),
                  ("tile_predecessor_item", "tile_predecessor_item"),
                  ("tile_successor_item", "tile_successor_item"), _STORAGE)


def _flags(mode: str) -> Route:
    """discontinuity's flags (int32): heads, tails, or both (a pair)."""
    return Route("block.discontinuity", _DISCONTINUITY, result="new", output_dtype="int32",
                 output=("head_flags", "tail_flags") if mode == "heads_and_tails"
                 else "head_flags", defaults={"flag_op": "!="},
                 fixed={"block_discontinuity_type": mode.upper()})


_EXCHANGE_MODES = {"striped_to_blocked": "StripedToBlocked",
                   "blocked_to_striped": "BlockedToStriped"}
_BLOCK_EXCHANGE_MODES = dict(_EXCHANGE_MODES, **{
    m: "".join(w.capitalize() for w in m.split("_")) for m in (
        "warp_striped_to_blocked", "blocked_to_warp_striped", "scatter_to_blocked",
        "scatter_to_striped", "scatter_to_striped_guarded", "scatter_to_striped_flagged")})


def _decode(special: str, positional: int, *params, **kws) -> Route:
    """run_length_decode and _into: CUB's decoder on the runs, its decoded offsets (uint32 by
    default) in 64 bits unless given, so that 64-bit run lengths and window offsets neither wrap
    nor send CUB's run search out of its table. Runs CUB cannot decode and a negative window
    or destination offset trap before decoding."""
    offset = next(name for name, _ in params if name.endswith("_offset"))
    return Route("block.run_length", (("run_values", "run_values"),
                                      ("run_lengths", "run_lengths")) + params + (
        ("decoded_items_per_thread", "decoded_items_per_thread"),
        ("relative_offsets", "relative_offsets"), ("decoded_offset_dtype", "decoded_offset"),
        _STORAGE), positional, hook=decoded_window, special=special,
        defaults={"decoded_offset_dtype": "uint64"}, bounds=(
            ("run_lengths", "runs", "decoded_offset_dtype"), (offset, "offset", None)), **kws)


ROUTES = {
    "sum": {
        "block": Route("block.sum", (("value", "src"), ("broadcast", None),
                                     ("valid_items", "num_valid"), ("algorithm", "algorithm"),
                                     _STORAGE), broadcast=True, bounds=_VALID_SRC),
        "warp": Route("warp.sum", (("value", "src"), ("broadcast", None),
                                   ("valid_items", "valid_items"), ("algorithm", None),
                                   ("temp_storage", None)), broadcast=True,
                      bounds=_VALID_SRC),
        "thread": Route("helper:thread_sum", (("value", "src"), ("broadcast", None)),
                        broadcast=True),
        "warps_within_block": Route("warp.sum", (("value", "src"), ("broadcast", None)),
                                    **_MAPPED),
    },
    "reduce": {
        "block": Route("block.reduce", (("value", "src"), ("binary_op", "binary_op"),
                                        ("broadcast", None), ("valid_items", "num_valid"),
                                        ("algorithm", "algorithm"), _STORAGE),
                       defaults={"binary_op": "+"}, broadcast=True, bounds=_VALID_SRC),
        "warp": Route("warp.reduce", (("value", "src"), ("binary_op", "binary_op"),
                                      ("broadcast", None), ("valid_items", "valid_items"),
                                      ("algorithm", None), ("temp_storage", None)),
                      defaults={"binary_op": "+"}, broadcast=True, bounds=_VALID_SRC),
        "warps_within_block": Route("warp.reduce", (("value", "src"), ("binary_op", "binary_op"),
                                                    ("broadcast", None)),
                                    defaults={"binary_op": "+"}, **_MAPPED),
    },
    "exclusive_sum": {"block": _block_scan("block.exclusive_sum"),
                      "warp": _warp_sum("warp.exclusive_sum")},
    "inclusive_sum": {"block": _block_scan("block.inclusive_sum"),
                      "warp": _warp_sum("warp.inclusive_sum")},
    "exclusive_scan": {"block": _block_scan("block.exclusive_scan", _SCAN_OP, _INITIAL),
                       "warp": _warp_scan("warp.exclusive_scan", _SCAN_OP, _INITIAL,
                                          defaults={"scan_op": "+"})},
    "inclusive_scan": {"block": _block_scan("block.inclusive_scan", _SCAN_OP, _INITIAL),
                       "warp": _warp_scan("warp.inclusive_scan", _SCAN_OP, _INITIAL,
                                          defaults={"scan_op": "+"})},
    "scan": {
        "block": _block_scan("block.scan", ("mode", "mode"), _SCAN_OP, _INITIAL),
        "warp": Route("warp.exclusive_scan", (("value", "src"), ("mode", None), _SCAN_OP,
                                              _INITIAL, *_PARTIAL, ("algorithm", None),
                                              ("temp_storage", None)),
                      choose=("mode", {
                          None: "warp.exclusive_scan", "exclusive": "warp.exclusive_scan",
                          "inclusive": "warp.inclusive_scan"}),
                      defaults={"scan_op": "+"}, bounds=_LANES),
    },
    "load": {
        "block": Route("block.load", (("source", "src"), ("output", "dst"),
                                      ("algorithm", "algorithm"),
                                      ("valid_items", "num_valid_items"),
                                      ("oob_default", "oob_default"), ("offset", None), _STORAGE),
                       positional=2, result="output", output="dst",
                       bounds=(("valid_items", "items", "dst"),), hook=load_keeps_unloaded),
        "warp": Route("warp.load", (("source", "src"), ("output", "dst"),
                                    ("algorithm", "algorithm"),
                                    ("valid_items", "num_valid_items"),
                                    ("oob_default", "oob_default"), ("offset", None), _STORAGE),
                      positional=2, result="output", output="dst", warp_tile="dst",
                      bounds=(("valid_items", "items", "dst"),), hook=load_keeps_unloaded),
    },
    "store": {
        "block": Route("block.store", (("destination", "dst"), ("value", "src"),
                                       ("algorithm", "algorithm"),
                                       ("valid_items", "num_valid_items"), ("offset", None),
                                       _STORAGE),
                       positional=2, result="none", wrap=("value", "destination"),
                       hook=store_keeps_items, bounds=_VALID_SRC),
        "warp": Route("warp.store", (("destination", "dst"), ("value", "src"),
                                     ("algorithm", "algorithm"),
                                     ("valid_items", "num_valid_items"), ("offset", None),
                                     _STORAGE),
                      positional=2, result="none", wrap=("value", "destination"),
                      hook=store_keeps_items, warp_tile="src", bounds=_VALID_SRC),
    },
    "exchange": {
        "block": Route("block.exchange", (("value", "items"), ("mode", "block_exchange_type"),
                                          ("ranks", "ranks"), ("valid_flags", "valid_flags"),
                                          ("warp_time_slicing", "warp_time_slicing"), _STORAGE),
                       result="new", output="output_items", defaults={"mode": "striped_to_blocked"},
                       values={"mode": _BLOCK_EXCHANGE_MODES}),
        "warp": Route("warp.exchange", (("value", "items"), ("mode", "warp_exchange_type"),
                                        ("ranks", "ranks"), ("temp_storage", None)),
                      result="new", output="output_items", defaults={"mode": "striped_to_blocked"},
                      values={"mode": dict(_EXCHANGE_MODES, scatter_to_striped="ScatterToStriped")}),
    },
    "shuffle": {
        "block": Route("block.shuffle", (("value", "items"), ("mode", "block_shuffle_type"),
                                         ("distance", "distance"), _STORAGE),
                       result="new", output="output_items", defaults={"mode": "down"},
                       values={"mode": {"down": "Down", "up": "Up", "offset": "Offset",
                                        "rotate": "Rotate"}},
                       bounds=(("distance", "distance", None),)),
    },
    "adjacent_difference": {
        "block": Route("block.adjacent_difference", (
            ("values", "items"), ("direction", "block_adjacent_difference_type"),
            ("difference_op", "difference_op"), ("valid_items", "valid_items"),
            ("tile_predecessor_item", "tile_predecessor_item"),
            ("tile_successor_item", "tile_successor_item"), _STORAGE),
            result="new", output="output_items",
            defaults={"direction": "left", "difference_op": "-"},
            bounds=(("valid_items", "items", "items"),),
            values={"direction": {"left": "SubtractLeft", "right": "SubtractRight"}}),
    },
    "discontinuity": {"block": Route("block.discontinuity", _DISCONTINUITY, choose=(
        "mode", {None: _flags("heads"), **{m: _flags(m) for m in ("heads", "tails",
                                                                    "heads_and_tails")}}))},
    "radix_rank": {
        "block": Route("block.radix_rank", (("keys", "items"), ("begin_bit", "begin_bit"),
                                            ("end_bit", "end_bit"), ("radix_bits", None),
                                            ("descending", "descending"), _STORAGE,
                                            ("exclusive_digit_prefix", "exclusive_digit_prefix")),
                       result="new", output="ranks", output_dtype="int32", hook=radix_rank_bits),
    },
    "histogram": {
        "block": Route("block.BlockHistogram.Histogram", (
            ("samples", "items"), ("bins", None), ("bins_per_thread", None),
            ("counter_dtype", None), ("algorithm", "algorithm")),
            defaults={"algorithm": "atomic"}, hook=histogram_shape, special="histogram",
            size_from="bins_per_thread"),
    },
    "run_length_decode": {"block": _decode(
        "run_length", 2, ("decoded_window_offset", "decoded_window_offset"),
        ("total_decoded_size", "total_decoded_size"), size_from="decoded_items_per_thread")},
    "run_length_decode_into": {"block": _decode(
        "run_length_into", 3, ("destination", "destination"),
        ("destination_offset", "destination_offset"))},
    "reduce_batched": {
        "warp": Route("warp.WarpReduceBatched.ReduceToStriped", (
            ("value", "inputs"), ("binary_op", "reduction_op"), ("output_layout", None)),
            result="new", output="outputs", output_size="batched", width="logical_warp_threads",
            defaults={"binary_op": "+"},
            choose=("output_layout", {None: "warp.WarpReduceBatched.ReduceToStriped",
                                      "striped": "warp.WarpReduceBatched.ReduceToStriped",
                                      "blocked": "warp.WarpReduceBatched.ReduceToBlocked"})),
    },
    "topk_max_keys": {"block": _topk("max_keys", False)},
    "topk_min_keys": {"block": _topk("min_keys", False)},
    "topk_max_pairs": {"block": _topk("max_pairs", True)},
    "topk_min_pairs": {"block": _topk("min_pairs", True)},
    "radix_sort_keys": {"block": _radix("radix_sort_keys", False)},
    "radix_sort_pairs": {"block": _radix("radix_sort_pairs", True)},
    "merge_sort_keys": {"block": _merge("block", False), "warp": _merge("warp", False)},
    "merge_sort_pairs": {"block": _merge("block", True), "warp": _merge("warp", True)},
}

#: cuda.coop's group factories.
GROUPS = {kind: Group(kind) for kind in ("thread", "warp", "block", "cluster", "grid")}


def _factory(kind: str):
    group = GROUPS[kind]

    def this_group():
        return group

    this_group.__name__ = this_group.__qualname__ = f"this_{kind}"
    this_group.__module__ = "coopgen.coop"
    this_group.__doc__ = f"The current {kind} as a group (resolved when the kernel compiles)."
    this_group._coopgen_group_factory = True
    return this_group


def build(entries) -> dict:
    """{name: object}: the group factories and the group calls, targets from ``entries(name)``
    (a Pythonic entry point by its scoped name)."""
    out = {f"this_{kind}": _factory(kind) for kind in GROUPS}
    out.update({name: GroupCall(name, routes, entries) for name, routes in ROUTES.items()})
    return out
