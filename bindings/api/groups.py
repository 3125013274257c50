"""cuda.coop's group-first API (``coop.sum(coop.this_block(), x)``): the groups, and one table
mapping each call, per group family, to the Pythonic entry point it becomes
(coopgen.resolve.groups says how a row reads; the IR rewrite carries it out).

Keywords, defaults and return conventions follow NVIDIA's stubs (docs/coop.md names the commit):
results that cuda.coop returns are new per-thread arrays and the inputs stay as they were; a
scalar in gives a scalar out. Beyond NVIDIA's profile, block calls take arrays where NVIDIA's take
scalars (``coop.sum(block, items)``), and every dtype coopgen binds goes through.
"""
from ..resolve.groups import Group, GroupCall, Route

#: NVIDIA's algorithm spellings -> coopgen's (the rest are the same lower-case enum names).
LOAD_ALGORITHMS = {a: a for a in ("direct", "striped", "vectorize", "transpose",
                                  "warp_transpose", "warp_transpose_timesliced")}
WARP_LOAD_ALGORITHMS = {a: a for a in ("direct", "striped", "vectorize", "transpose")}
REDUCE_OPERATORS = {k: k for k in ("sum", "+", "add", "plus", "min", "minimum", "max", "maximum",
                                   "*", "mul", "multiplies", "prod", "&", "bit_and", "|",
                                   "bit_or", "^", "bit_xor")}
REDUCE_OPERATORS["prod"] = "*"

_STORAGE = ("temp_storage", "temp_storage")


def _block_scan(target: str, *extra) -> Route:
    return Route(target, (("value", "src"), *extra, ("algorithm", "algorithm"), _STORAGE),
                 result="new", output="dst")


def _warp_scan(target: str, *extra) -> Route:
    return Route(target, (("value", "src"), *extra, ("algorithm", None), ("temp_storage", None)))


_SCAN_OP = ("scan_op", "scan_op")
_INITIAL = ("initial_value", "initial_value")


def _sort(target: str, pairs: bool, *extra) -> Route:
    params = (("keys", "keys"),) + ((("values", "values"),) if pairs else ()) + extra
    return Route(target, params + (_STORAGE,), positional=2 if pairs else 1, result="copy",
                 inputs=("keys", "values") if pairs else ("keys",))


def _radix(name: str, pairs: bool) -> Route:
    bits = (("begin_bit", "begin_bit"), ("end_bit", "end_bit"), ("descending", None))
    plain, down = f"block.{name}", f"block.{name.replace('_keys', '_keys_descending')}"
    if pairs:
        down = "block.radix_sort_pairs_descending"
    base = _sort(plain, pairs, *bits)
    return Route(plain, base.params, base.positional, "copy", inputs=base.inputs,
                 choose=("descending", {None: base, False: base,
                                        True: Route(down, base.params, base.positional, "copy",
                                                    inputs=base.inputs)}))


def _merge(scope: str, pairs: bool) -> Route:
    name = f"{scope}.merge_sort_{'pairs' if pairs else 'keys'}"
    extra = (("compare_op", "compare_op"),)
    if scope == "block":
        extra += (("valid_items", "valid_items"), ("oob_default", "oob_default"))
    return _sort(name, pairs, *extra)


ROUTES = {
    "sum": {
        "block": Route("block.sum", (("value", "src"), ("broadcast", None),
                                     ("valid_items", "num_valid"), ("algorithm", "algorithm"),
                                     _STORAGE), broadcast=True),
        "warp": Route("warp.sum", (("value", "src"), ("broadcast", None),
                                   ("valid_items", "valid_items"), ("algorithm", None),
                                   ("temp_storage", None)), broadcast=True),
        "thread": Route("helper:thread_sum", (("value", "src"), ("broadcast", None)),
                        broadcast=True),
    },
    "reduce": {
        "block": Route("block.reduce", (("value", "src"), ("binary_op", "binary_op"),
                                        ("broadcast", None), ("valid_items", "num_valid"),
                                        ("algorithm", "algorithm"), _STORAGE),
                       defaults={"binary_op": "+"}, broadcast=True),
        "warp": Route("warp.reduce", (("value", "src"), ("binary_op", "binary_op"),
                                      ("broadcast", None), ("valid_items", "valid_items"),
                                      ("algorithm", None), ("temp_storage", None)),
                      defaults={"binary_op": "+"}, broadcast=True),
    },
    "exclusive_sum": {"block": _block_scan("block.exclusive_sum"),
                      "warp": _warp_scan("warp.exclusive_sum")},
    "inclusive_sum": {"block": _block_scan("block.inclusive_sum"),
                      "warp": _warp_scan("warp.inclusive_sum")},
    "exclusive_scan": {"block": _block_scan("block.exclusive_scan", _SCAN_OP, _INITIAL),
                       "warp": _warp_scan("warp.exclusive_scan", _SCAN_OP, _INITIAL)},
    "inclusive_scan": {"block": _block_scan("block.inclusive_scan", _SCAN_OP, _INITIAL),
                       "warp": _warp_scan("warp.inclusive_scan", _SCAN_OP, _INITIAL)},
    "scan": {
        "block": _block_scan("block.scan", ("mode", "mode"), _SCAN_OP, _INITIAL),
        "warp": Route("warp.exclusive_scan", (("value", "src"), ("mode", None), _SCAN_OP,
                                              _INITIAL, ("algorithm", None),
                                              ("temp_storage", None)),
                      choose=("mode", {
                          None: "warp.exclusive_scan", "exclusive": "warp.exclusive_scan",
                          "inclusive": "warp.inclusive_scan"}),
                      defaults={"scan_op": "+"}),
    },
    "load": {
        "block": Route("block.load", (("source", "src"), ("output", "dst"),
                                      ("algorithm", "algorithm"),
                                      ("valid_items", "num_valid_items"),
                                      ("oob_default", "oob_default"), ("offset", None), _STORAGE),
                       positional=2, result="none"),
        "warp": Route("warp.load", (("source", "src"), ("output", "dst"),
                                    ("algorithm", "algorithm"),
                                    ("valid_items", "num_valid_items"),
                                    ("oob_default", "oob_default"), ("offset", None), _STORAGE),
                      positional=2, result="none"),
    },
    "store": {
        "block": Route("block.store", (("destination", "dst"), ("value", "src"),
                                       ("algorithm", "algorithm"),
                                       ("valid_items", "num_valid_items"), ("offset", None),
                                       _STORAGE),
                       positional=2, result="none", wrap=("value", "destination")),
        "warp": Route("warp.store", (("destination", "dst"), ("value", "src"),
                                     ("algorithm", "algorithm"),
                                     ("valid_items", "num_valid_items"), ("offset", None),
                                     _STORAGE),
                      positional=2, result="none", wrap=("value", "destination")),
    },
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
