"""numpy references, one per operation family, and what each family may be drawn with.

A reference sees the configuration, its inputs and the kernel's outputs, each as a numpy
array: per-thread values ``(groups, group_threads, items)``, per-group scalars ``(groups,)``,
global tiles and histograms ``(groups, n)``. A group is the set of threads of one call: the
thread block, or one logical warp. It returns ``Check``s: the output it expects, where the
result is defined (``mask``), and how to compare (exactly, or as a floating-point sum).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

try:  # numpy's bfloat16 (np.dtype("bfloat16") once imported); without it none is drawn
    import ml_dtypes
except ImportError:  # pragma: no cover
    ml_dtypes = None

INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
FLOATS = ("float32", "float64")
ALL = INTS + FLOATS
#: Half precision and complex numbers: ``--dtypes`` limits a run to them (or to any others).
HALVES = ("float16",) + (("bfloat16",) if ml_dtypes is not None else ())
COMPLEX = ("complex64", "complex128")
ML = HALVES + COMPLEX
#: What a family draws unless it says otherwise (refused combinations are left out when drawn).
DRAWN = ALL + ML
IPTS = (1, 2, 3, 4, 5, 7, 8, 9, 11, 12, 13, 16)
#: The record dtype (user-defined type) drawn where a primitive allows one; "record" in a
#: configuration. Fields compare in order (numpy's structured comparison, and py_rec_less).
RECORD = np.dtype([("a", np.int32), ("b", np.float32)], align=True)


def np_dtype(name: str) -> np.dtype:
    return RECORD if isinstance(name, str) and name == "record" else np.dtype(name)


def kind(dtype) -> str:
    """numpy's kind, with bfloat16 (ml_dtypes: "V") a float."""
    dt = np_dtype(dtype)
    return "f" if dt.name == "bfloat16" else dt.kind


def unit_roundoff(dtype) -> float:
    """u of a float or complex type (of its parts): half the distance from 1 to the next."""
    dt = np_dtype(dtype)
    if dt.name == "bfloat16":
        return float(ml_dtypes.finfo(dt).eps) / 2
    return float(np.finfo(dt).eps) / 2


def l1(x: np.ndarray) -> np.ndarray:
    """|x| in float64; |re| + |im| for complex numbers (each part's error is bounded by it)."""
    if kind(x.dtype) == "c":
        return np.abs(x.real).astype(np.float64) + np.abs(x.imag).astype(np.float64)
    return np.abs(x.astype(np.float64)) if kind(x.dtype) == "f" else np.zeros(x.shape)


def wide(dtype):
    """The type a sum of ``dtype`` is computed in by the references."""
    return np.complex128 if kind(dtype) == "c" else np.float64

#: Built-in and Python operators, and the numpy ufunc each one computes.
UFUNC = {"+": np.add, "py_add": np.add, "min": np.minimum, "py_min": np.minimum,
         "max": np.maximum, "py_max": np.maximum, "&": np.bitwise_and, "|": np.bitwise_or,
         "^": np.bitwise_xor, "-": np.subtract, "py_sub": np.subtract, "!=": np.not_equal,
         "py_ne": np.not_equal, "py_ne_at": np.not_equal, "==": np.equal}
IDENTITY_SUM = 0
#: Float edge values a family's result is defined for, whatever the order of evaluation.
EDGES_SUM = ("0.0", "-0.0", "inf", "-inf", "nan")  # max/min overflow depends on the order
EDGES_ORDER = ("0.0", "-0.0", "inf", "-inf", "max", "lowest", "tiny")  # no NaN: no total order
EDGES_ALL = EDGES_SUM + ("max", "lowest", "tiny")


@dataclass(frozen=True)
class Check:
    name: str  # the parameter (or "return")
    want: np.ndarray
    mask: np.ndarray | None = None  # where the result is defined; None: everywhere
    mode: str = "exact"  # "exact" (NaN equals NaN) or "sum" (floating-point tolerance)
    note: str = ""  # what the difference looks like, when the reference can tell
    # "sum" checks: the sum of |term| of each output (float64), for the worst-case bound of
    # any summation order (runner.compare); None: the older tolerance of float32/float64
    magnitude: np.ndarray | None = None


@dataclass(frozen=True)
class Family:
    reference: Callable  # (cfg, ins, got) -> [Check]
    dtypes: tuple = DRAWN
    ops: Callable = lambda method, dtype: []  # operator names to draw from
    threads: str = "any"  # "any" | "warp_multiple" | "power_of_two"
    enum_values: dict = field(default_factory=dict)  # keyword -> allowed enum values
    bools: tuple = ()  # bool template keywords to draw
    int_tkw: dict = field(default_factory=dict)  # int template keyword -> choices
    fixed_tkw: tuple = ()  # template keywords left at their defaults
    valid: Callable = lambda cfg: True  # rejects combinations CUB does not allow
    edges: tuple = EDGES_ALL  # float edge values allowed in the data
    inputs: Callable | None = None  # (cfg, rng, groups) -> {param: array} of special inputs
    skip: Callable = lambda cls, method: ""  # why an overload is not drawn ("" = drawn)
    records: bool = False  # the record dtype may be drawn as T / KeyT


# --- helpers -------------------------------------------------------------------------------

def tkw(cfg) -> dict:
    return dict(cfg.tkw)


def flat(a: np.ndarray) -> np.ndarray:
    """(groups, threads, items) -> (groups, threads * items): the tile in blocked order."""
    return a.reshape(a.shape[0], -1)


def positions(arrangement: str, threads: int, items: int) -> np.ndarray:
    """Tile position held by (thread, item) in an arrangement, as a (threads, items) array."""
    t = np.arange(threads)[:, None]
    i = np.arange(items)[None, :]
    if arrangement == "blocked":
        return t * items + i
    if arrangement == "striped":
        return i * threads + t
    if arrangement == "warp_striped":  # 32-thread warps, each striped over its own segment
        return (t // 32) * 32 * items + i * 32 + t % 32
    raise ValueError(arrangement)


def arrange(tile: np.ndarray, arrangement: str, threads: int, items: int) -> np.ndarray:
    """(groups, n) tiles -> (groups, threads, items) as held in ``arrangement``."""
    return tile[:, positions(arrangement, threads, items)]


def scatter(values: np.ndarray, arrangement: str, n: int) -> np.ndarray:
    """(groups, threads, items) held in ``arrangement`` -> (groups, n) tiles."""
    g, threads, items = values.shape
    out = np.empty((g, n), values.dtype)
    out[:, positions(arrangement, threads, items)] = values
    return out


def accumulate(op: str, x: np.ndarray, dtype) -> np.ndarray:
    """Inclusive scan along the last axis, in ``dtype`` (wrapping integers), float and complex
    sums in float64/complex128; bfloat16's exact operators (min, max) in float32."""
    dt = np_dtype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):  # inf - inf is NaN, on the GPU too
        if kind(dt) in "fc" and op in ("+", "py_add"):
            return np.add.accumulate(x.astype(wide(dt)), axis=-1)
        if dt.name == "bfloat16":
            return UFUNC[op].accumulate(x.astype(np.float32), axis=-1).astype(dt)
        return UFUNC[op].accumulate(x, axis=-1, dtype=dt)


def combine(op: str, a, b, dtype):
    dt = np_dtype(dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if kind(dt) in "fc" and op in ("+", "py_add"):
            return np.add(np.asarray(a, wide(dt)), np.asarray(b, wide(dt)))
        if dt.name == "bfloat16":  # one operation in float32, rounded once: bfloat16's result
            out = UFUNC[op](np.asarray(a, dt).astype(np.float32), np.asarray(b, dt).astype(np.float32))
            return out if out.dtype == np.bool_ else out.astype(dt)
        return UFUNC[op](np.asarray(a, dt), np.asarray(b, dt), dtype=dt)


def value_mode(op: str, dtype) -> str:
    return "sum" if kind(dtype) in "fc" and op in ("+", "py_add") else "exact"


def magnitude(op: str, x: np.ndarray, dtype) -> np.ndarray | None:
    """Sums of |term| of an inclusive scan along the last axis, for the new types' sums; per
    part for complex numbers (their real and imaginary sums are independent)."""
    if value_mode(op, dtype) != "sum" or np_dtype(dtype).name not in ML:
        return None
    if np.iscomplexobj(x):
        return (np.add.accumulate(np.abs(x.real), axis=-1)
                + 1j * np.add.accumulate(np.abs(x.imag), axis=-1))
    return np.add.accumulate(l1(x), axis=-1)


def per_thread(value, threads: int) -> np.ndarray:
    """(groups,) -> (groups, threads, 1): a group-wide result every thread holds."""
    v = np.asarray(value)
    return np.repeat(v[:, None], threads, axis=1)[:, :, None]


def only_first_thread(shape) -> np.ndarray:
    mask = np.zeros(shape, bool)
    mask[:, 0, :] = True
    return mask


def arith_ops(method, dtype) -> list[str]:
    if kind(dtype) == "c":  # C++ and numba do not order complex numbers
        return ["+", "py_add"]
    ops = ["+", "py_add", "min", "max", "py_max"]
    if kind(dtype) in "iu":
        ops += ["&", "|", "^"]
    return ops


def alg(cfg, keyword="algorithm", default="") -> str:
    return str(tkw(cfg).get(keyword, default)).lower()


# --- reduce --------------------------------------------------------------------------------

#: Methods whose name says the operator.
NAMED_OPS = {"Sum": "+", "Max": "max", "Min": "min"}


def op_of(cfg) -> str:
    return next((op for word, op in NAMED_OPS.items() if word in cfg.method.name), cfg.op)


def ref_reduce(cfg, ins, got):
    x = ins.get("inputs", ins.get("input"))
    tile = flat(x)
    n = ins.get("num_valid", ins.get("valid_items"))
    op = op_of(cfg)
    want = np.zeros(x.shape[:2] + (1,), got["return"].dtype)
    mag = np.zeros(want.shape, complex if np.iscomplexobj(want) else float)  # per part
    for g in range(tile.shape[0]):
        k = tile.shape[1] if n is None else int(n[g])
        want[g, 0, 0] = accumulate(op, tile[g, :k], cfg.dtype)[-1]
        m = magnitude(op, tile[g, :k], cfg.dtype)
        mag[g, 0, 0] = m[-1] if m is not None and k else 0.0
    return [Check("return", want, only_first_thread(want.shape), value_mode(op, cfg.dtype),
                  magnitude=mag if magnitude(op, tile[:, :1], cfg.dtype) is not None else None)]


def reduce_ops(method, dtype):
    return [] if any(w in method.name for w in NAMED_OPS) else arith_ops(method, dtype)


# --- scan ----------------------------------------------------------------------------------

def ref_scan(cfg, ins, got):
    """Block and warp scans: inclusive/exclusive, sums or an operator, an initial value or a
    prefix callback, aggregates."""
    x = ins["input"]
    tile = flat(x)
    op = op_of(cfg)
    name = cfg.method.name
    incl = accumulate(op, tile, cfg.dtype)
    seed = ins.get("initial_value", ins.get("block_prefix_callback_op"))
    mag = magnitude(op, tile, cfg.dtype)  # per prefix (None: exact, or float32/64's tolerance)
    if seed is not None:
        incl_seeded = combine(op, seed[:, None], incl, cfg.dtype)
    else:
        incl_seeded = incl
    mag_incl = mag_excl = None
    if mag is not None:
        first = l1(seed)[:, None] if seed is not None else np.zeros((tile.shape[0], 1))
        mag_incl = mag + first
        mag_excl = np.concatenate([first, mag_incl[:, :-1]], axis=1)
    excl = np.empty_like(incl_seeded)
    excl[:, 1:] = incl_seeded[:, :-1]
    excl_mask = np.ones(tile.shape, bool)
    if seed is not None:
        excl[:, 0] = seed
    elif "Sum" in name:
        excl[:, 0] = IDENTITY_SUM
    else:
        excl[:, 0] = 0
        excl_mask[:, 0] = False  # CUB leaves the first exclusive output undefined
    shape = x.shape
    mode = value_mode(op, cfg.dtype)
    # *ScanPartial: the first valid_items lanes scan (a prefix does not see later lanes);
    # the others' outputs are left as they were (undefined when the call returns them)
    n = ins.get("valid_items", np.full(tile.shape[0], tile.shape[1]))
    valid = np.arange(tile.shape[1])[None, :] < n[:, None]
    checks = []
    for pname, want, mask, mg in (("output", None, None, None),
                                  ("inclusive_output", incl_seeded, None, mag_incl),
                                  ("exclusive_output", excl, excl_mask, mag_excl)):
        if pname not in got:
            continue
        if pname == "output":
            want, mask, mg = (incl_seeded, None, mag_incl) if "Inclusive" in name else \
                (excl, excl_mask, mag_excl)
        mask = np.ones(tile.shape, bool) if mask is None else mask
        if pname in cfg.omit:
            mask = mask & valid
        else:
            want = np.where(valid, want, flat(ins[pname]))
        checks.append(Check(pname, want.reshape(shape), mask.reshape(shape), mode,
                            magnitude=None if mg is None else mg.reshape(shape)))
    aggregate = incl[np.arange(tile.shape[0]), n - 1]
    agg_mag = None if mag is None else per_thread(mag[np.arange(tile.shape[0]), n - 1], shape[1])
    for agg in ("block_aggregate", "warp_aggregate"):
        if agg in got:
            checks.append(Check(agg, per_thread(aggregate, shape[1]), None, mode,
                                magnitude=agg_mag))
    return checks


# --- load and store ------------------------------------------------------------------------

#: The arrangement of each free function's direct load or store (by its name).
DIRECT = {"LoadDirectBlocked": "blocked", "LoadDirectStriped": "striped",
          "LoadDirectWarpStriped": "warp_striped", "StoreDirectBlocked": "blocked",
          "StoreDirectStriped": "striped", "StoreDirectWarpStriped": "warp_striped"}


def load_arrangement(cfg) -> str:
    if cfg.cls in DIRECT:
        return DIRECT[cfg.cls]
    return "striped" if alg(cfg).endswith("striped") else "blocked"


def ref_load(cfg, ins, got):
    out = "dst_items" if "dst_items" in got else "items"
    src = ins["block_src_it"] if "block_src_it" in ins else ins["block_itr"]
    shape = got[out].shape
    pos = positions(load_arrangement(cfg), shape[1], shape[2])
    want = src[:, pos]
    n = ins.get("block_items_end", ins.get("valid_items"))
    mask = None
    if n is not None:
        valid = pos[None, :, :] < n[:, None, None]
        if "oob_default" in ins:
            want = np.where(valid, want, ins["oob_default"][:, None, None])
        else:
            mask = np.broadcast_to(valid, shape)
    return [Check(out, want, mask)]


def ref_store(cfg, ins, got):
    items = ins["items"]
    before = ins["block_itr"]
    g, threads, k = items.shape
    pos = positions(load_arrangement(cfg), threads, k)
    want = before.copy()
    n = ins.get("valid_items")
    for gi in range(g):
        keep = pos < (int(n[gi]) if n is not None else threads * k)
        want[gi, pos[keep]] = items[gi][keep]
    return [Check("block_itr", want)]  # untouched beyond valid_items, too


def warp_transpose_ok(cfg) -> bool:
    return "warp_transpose" not in alg(cfg) or cfg.threads % 32 == 0


# --- exchange ------------------------------------------------------------------------------

EXCHANGES = {  # method -> (input arrangement, output arrangement)
    "StripedToBlocked": ("striped", "blocked"), "BlockedToStriped": ("blocked", "striped"),
    "WarpStripedToBlocked": ("warp_striped", "blocked"),
    "BlockedToWarpStriped": ("blocked", "warp_striped"),
    "ScatterToBlocked": ("ranks", "blocked"), "ScatterToStriped": ("ranks", "striped"),
    "ScatterToStripedGuarded": ("ranks", "striped"), "ScatterToStripedFlagged": ("ranks", "striped"),
}


def ref_exchange(cfg, ins, got):
    src_name = "input_items" if "input_items" in ins else "items"
    out_name = "output_items" if "output_items" in got else "items"
    x = ins[src_name]
    g, threads, k = x.shape
    n = threads * k
    src_arr, dst_arr = EXCHANGES[cfg.method.name]
    if src_arr == "ranks":
        ranks = ins["ranks"]
        keep = ranks >= 0
        if "is_valid" in ins:
            keep &= ins["is_valid"] != 0
        tile = np.zeros((g, n), x.dtype)
        filled = np.zeros((g, n), bool)
        for gi in range(g):
            tile[gi, ranks[gi][keep[gi]]] = x[gi][keep[gi]]
            filled[gi, ranks[gi][keep[gi]]] = True
        return [Check(out_name, arrange(tile, dst_arr, threads, k),
                      arrange(filled, dst_arr, threads, k))]
    tile = scatter(x, src_arr, n)
    return [Check(out_name, arrange(tile, dst_arr, threads, k))]


def exchange_inputs(cfg, rng, groups):
    if "ranks" not in {p.name for p in cfg.method.params}:
        return {}
    n = cfg.group_threads * cfg.ipt
    ranks = np.stack([rng.permutation(n) for _ in range(groups)]).astype(np.int32)
    out = {}
    if cfg.method.name == "ScatterToStripedGuarded":
        ranks[rng.random(ranks.shape) < 0.1] = -1
    if cfg.method.name == "ScatterToStripedFlagged":
        out["is_valid"] = (rng.random(ranks.shape) < 0.8).astype(np.int32)
    out["ranks"] = ranks
    return out


def exchange_valid(cfg) -> bool:
    if "Warp" in cfg.method.name and cfg.cls == "BlockExchange":
        return cfg.threads % 32 == 0
    if alg(cfg, "warp_exchange_algorithm") == "warp_exchange_shuffle":
        # CUB's shuffle exchange: items_per_thread == logical warp threads, no scatter
        return cfg.ipt == cfg.warp and "Scatter" not in cfg.method.name
    return True


# --- radix sort ----------------------------------------------------------------------------

def ordered_bits(keys: np.ndarray) -> np.ndarray:
    """CUB's bit-ordered form of keys (unsigned, ordered like the keys); -0.0 is taken as +0.0."""
    dt = keys.dtype
    if dt.names:  # a record through a decomposer: its fields' bits, the first field highest
        out = np.zeros(keys.shape, np.uint64)
        for name in dt.names:
            field = np.ascontiguousarray(keys[name])
            out = (out << np.uint64(field.dtype.itemsize * 8)) | ordered_bits(field)
        return out
    bits = dt.itemsize * 8
    u = keys.view(np.dtype(f"u{dt.itemsize}")).astype(np.uint64)
    sign = np.uint64(1) << np.uint64(bits - 1)
    if dt.kind == "u":
        return u
    if dt.kind == "i":
        return u ^ sign
    assert kind(dt) == "f", dt  # floats, float16 and bfloat16: sign-magnitude bits
    full = np.uint64((1 << bits) - 1)
    tw = np.where(u & sign, (~u) & full, u | sign)
    minus_zero = (~sign) & full  # twiddled -0.0
    return np.where(tw == minus_zero, sign, tw)


def digits(keys, begin: int, end: int) -> np.ndarray:
    width = max(0, end - begin)
    mask = np.uint64((1 << width) - 1) if width < 64 else np.uint64(2**64 - 1)
    return (ordered_bits(keys) >> np.uint64(begin)) & mask


def stable_order(d: np.ndarray, descending: bool) -> np.ndarray:
    if descending:
        d = d.max() - d if d.size else d
    return np.argsort(d, kind="stable")


def ref_radix_sort(cfg, ins, got):
    keys = ins["keys"]
    g, threads, k = keys.shape
    bits = key_bits(cfg)
    tile = flat(keys)
    desc = "Descending" in cfg.method.name
    out_arr = "striped" if "BlockedToStriped" in cfg.method.name else "blocked"
    want_k = np.empty_like(tile)
    vals = flat(ins["values"]) if "values" in ins else None
    want_v = np.empty_like(vals) if vals is not None else None
    for gi in range(g):
        begin = int(ins["begin_bit"][gi]) if "begin_bit" in ins else 0
        end = int(ins["end_bit"][gi]) if "end_bit" in ins else bits
        order = stable_order(digits(tile[gi], begin, end), desc)
        want_k[gi] = tile[gi][order]
        if vals is not None:
            want_v[gi] = vals[gi][order]
    checks = [Check("keys", arrange(want_k, out_arr, threads, k))]
    if vals is not None:
        checks.append(Check("values", arrange(want_v, out_arr, threads, k)))
    return checks


def key_bits(cfg) -> int:
    """Bits of a key as CUB sorts it (a record's: its fields' together)."""
    dt = np_dtype(cfg.dtype)
    return sum(dt.fields[n][0].itemsize for n in dt.names) * 8 if dt.names else dt.itemsize * 8


def radix_inputs(cfg, rng, groups):
    if "begin_bit" not in {p.name for p in cfg.method.params}:
        return {}
    bits = key_bits(cfg)
    begin = rng.integers(0, bits, groups)
    end = np.array([rng.integers(b + 1, bits + 1) for b in begin])
    return {"begin_bit": begin.astype(np.int32), "end_bit": end.astype(np.int32)}


def decomposer_valid(cfg) -> bool:
    """Record keys go through a decomposer (its fields by name), and only they do."""
    return (cfg.dtype == "record") == any(p.base == "DecomposerT" for p in cfg.method.params)


# --- merge sort ----------------------------------------------------------------------------

def sort_rank(keys: np.ndarray, descending: bool) -> np.ndarray:
    """Equal keys get equal ranks (so -0.0 == +0.0); descending order reverses the ranks."""
    if keys.dtype.name == "bfloat16":  # exactly, as float32 (numpy's unique on its own order)
        keys = keys.astype(np.float32)
    _, inv = np.unique(keys, return_inverse=True)
    inv = inv.reshape(keys.shape)
    return -inv if descending else inv


def ref_merge_sort(cfg, ins, got):
    keys = ins["keys"]
    g, threads, k = keys.shape
    tile = flat(keys).copy()
    vals = flat(ins["items"]).copy() if "items" in ins else None
    desc = cfg.op in (">", "py_greater")
    stable = cfg.method.name == "StableSort"
    n = ins.get("valid_items")
    want_k, want_v = np.empty_like(tile), None if vals is None else np.empty_like(vals)
    got_k = flat(got["keys"])
    got_v = flat(got["items"]) if vals is not None else None
    # Partial tiles: CUB sorts the valid items into the first valid_items places when
    # oob_default is ordered after every valid key (the driver passes the dtype's last key);
    # what follows them is CUB's filler, not defined.
    defined = np.ones(tile.shape, bool)
    for gi in range(g):
        if n is not None:
            tile[gi, int(n[gi]):] = ins["oob_default"][gi]
            defined[gi, int(n[gi]):] = False
        rank = sort_rank(tile[gi], desc)
        order = np.argsort(rank, kind="stable")
        want_k[gi] = tile[gi][order]
        if vals is None:
            continue
        want_v[gi] = vals[gi][order]
        if not stable:  # equal keys may come in any order: compare (key, value) multisets
            same_keys = np.array_equal(want_k[gi], got_k[gi])
            pairs = lambda kk, vv: sorted(zip(sort_rank(kk, desc).tolist(), vv.view(
                np.dtype(f"u{vv.dtype.itemsize}")).tolist()))
            if same_keys and pairs(want_k[gi], want_v[gi]) == pairs(got_k[gi], got_v[gi]):
                want_v[gi] = got_v[gi]
    checks = [Check("keys", want_k.reshape(keys.shape), defined.reshape(keys.shape))]
    if vals is not None:
        # a valid key equal to oob_default ties with the filler: its value's place is open
        ties = want_k == ins["oob_default"][:, None] if n is not None else False
        checks.append(Check("items", want_v.reshape(keys.shape),
                            (defined & ~ties).reshape(keys.shape)))
    return checks


def merge_sort_inputs(cfg, rng, groups):
    if "oob_default" not in {p.name for p in cfg.method.params}:
        return {}
    dt = np_dtype(cfg.dtype)
    desc = cfg.op in (">", "py_greater")
    if cfg.dtype == "record":
        last = np.array([(np.iinfo(np.int32).max, np.inf)], dt)[0]
    elif kind(dt) == "c":  # ordered by (real, imag): py_cplx_less
        last = complex(np.inf, np.inf)
    elif kind(dt) == "f":
        last = -np.inf if desc else np.inf
    else:
        last = np.iinfo(dt).min if desc else np.iinfo(dt).max
    return {"oob_default": np.full(groups, last, dt)}


def compare_ops(method, dtype):
    if dtype == "record":
        return ["py_rec_less"]
    if kind(dtype) == "c":  # C++ does not order complex numbers: by (real, imag), as numpy sorts
        return ["py_cplx_less"]
    return ["<", ">", "py_less", "py_greater"]


# --- adjacent difference and discontinuity -------------------------------------------------

def ref_adjacent_difference(cfg, ins, got):
    x = ins["input"]
    g, threads, k = x.shape
    tile = flat(x)
    n_items = threads * k
    op = cfg.op
    left = "Left" in cfg.method.name
    want = tile.copy()
    with np.errstate(over="ignore", invalid="ignore"):
        for gi in range(g):
            n = int(ins["valid_items"][gi]) if "valid_items" in ins else n_items
            if left:
                if n > 1:
                    want[gi, 1:n] = combine(op, tile[gi, 1:n], tile[gi, :n - 1], cfg.dtype)
                if "tile_predecessor_item" in ins and n > 0:
                    want[gi, 0] = combine(op, tile[gi, 0], ins["tile_predecessor_item"][gi],
                                          cfg.dtype)
            else:
                if n > 1:
                    want[gi, :n - 1] = combine(op, tile[gi, :n - 1], tile[gi, 1:n], cfg.dtype)
                if "tile_successor_item" in ins:
                    want[gi, n_items - 1] = combine(op, tile[gi, -1], ins["tile_successor_item"][gi],
                                                    cfg.dtype)
    return [Check("output", want.astype(got["output"].dtype).reshape(x.shape))]


def ref_discontinuity(cfg, ins, got):
    x = ins["input"]
    g, threads, k = x.shape
    tile = flat(x)
    f = UFUNC[cfg.op]
    checks = []
    if "head_flags" in got:
        heads = np.ones_like(tile, dtype=bool)
        heads[:, 1:] = f(tile[:, :-1], tile[:, 1:])
        if "tile_predecessor_item" in ins:
            heads[:, 0] = f(ins["tile_predecessor_item"], tile[:, 0])
        checks.append(Check("head_flags", heads.astype(got["head_flags"].dtype).reshape(x.shape)))
    if "tail_flags" in got:
        tails = np.ones_like(tile, dtype=bool)
        tails[:, :-1] = f(tile[:, :-1], tile[:, 1:])
        if "tile_successor_item" in ins:
            tails[:, -1] = f(tile[:, -1], ins["tile_successor_item"])
        checks.append(Check("tail_flags", tails.astype(got["tail_flags"].dtype).reshape(x.shape)))
    return checks


# --- shuffle -------------------------------------------------------------------------------

def ref_shuffle(cfg, ins, got):
    x = ins["input"]
    g, threads, k = x.shape
    name = cfg.method.name
    if name in ("Offset", "Rotate"):
        want = ins.get("output", np.zeros_like(x)).copy()
        defined = np.zeros(x.shape, bool)
        for gi in range(g):
            d = int(ins["distance"][gi])
            src = np.arange(threads) + d
            if name == "Rotate":
                src %= threads
            ok = (src >= 0) & (src < threads)
            want[gi, ok, 0] = x[gi, src[ok], 0]
            defined[gi] = ok[:, None] if "output" in cfg.omit else True
        return [Check("output", want, defined)]
    tile = flat(x)
    prev = flat(ins["prev"]).copy()
    if name == "Up":
        prev[:, 1:] = tile[:, :-1]
    else:
        prev[:, :-1] = tile[:, 1:]
    checks = [Check("prev", prev.reshape(x.shape))]
    if "block_suffix" in got:
        checks.append(Check("block_suffix", per_thread(tile[:, -1], threads)))
    if "block_prefix" in got:
        checks.append(Check("block_prefix", per_thread(tile[:, 0], threads)))
    return checks


def shuffle_inputs(cfg, rng, groups):
    nt = cfg.threads
    if cfg.method.name == "Offset":
        return {"distance": rng.integers(-nt + 1, nt, groups).astype(np.int32)}
    if cfg.method.name == "Rotate":
        return {"distance": rng.integers(0, nt, groups).astype(np.uint32)}
    return {}


# --- free functions: thread loads and stores, warp shuffles ------------------------------------

def ref_thread_load(cfg, ins, got):
    """Every thread loads the group's first tile item (with the drawn cache modifier)."""
    g, threads, _ = got["return"].shape
    return [Check("return", np.broadcast_to(ins["itr"][:, :1, None], (g, threads, 1)))]


def ref_thread_store(cfg, ins, got):
    """Every thread stores the group's value into the tile's first item; the rest stays."""
    want = ins["itr"].copy()
    want[:, 0] = ins["val"]
    return [Check("itr", want)]


def ref_warp_shuffle(cfg, ins, got):
    """CUB's ShuffleUp/Down/Index within each 32-thread warp of the block: a lane whose source
    falls outside [first_thread, last_thread] keeps its own value."""
    x = ins["input"]
    g, threads, _ = x.shape
    lane = np.arange(threads) % 32
    want = np.empty_like(x)
    for gi in range(g):
        if cfg.cls == "ShuffleIndex":
            src = np.arange(threads) - lane + int(ins["src_lane"][gi])
        else:
            d = int(ins["src_offset"][gi])
            if cfg.cls == "ShuffleUp":
                ok = lane - d >= int(ins["first_thread"][gi])
                src = np.where(ok, np.arange(threads) - d, np.arange(threads))
            else:
                ok = lane + d <= int(ins["last_thread"][gi])
                src = np.where(ok, np.arange(threads) + d, np.arange(threads))
        want[gi] = x[gi, src]
    return [Check("return", want)]


def warp_shuffle_inputs(cfg, rng, groups):
    """Whole warps take part (member_mask); offsets and lanes inside the warp."""
    out = {"member_mask": np.full(groups, 0xffffffff, np.uint32)}
    if cfg.cls == "ShuffleIndex":
        out["src_lane"] = rng.integers(0, 32, groups).astype(np.int32)
    else:
        out["src_offset"] = rng.integers(0, 32, groups).astype(np.int32)
        out["first_thread"] = rng.integers(0, 8, groups).astype(np.int32)
        out["last_thread"] = rng.integers(24, 32, groups).astype(np.int32)
    return out


# --- histogram -----------------------------------------------------------------------------

def bins_of(cfg) -> int:
    return int(tkw(cfg)["bins"])


def ref_histogram(cfg, ins, got):
    bins = bins_of(cfg)
    before = ins["histogram"]
    if cfg.method.name == "InitHistogram":
        return [Check("histogram", np.zeros_like(before))]
    tile = flat(ins["items"])
    counts = np.stack([np.bincount(t.astype(np.int64), minlength=bins)[:bins] for t in tile])
    if cfg.method.name == "Composite":
        counts = counts + before
    return [Check("histogram", counts.astype(before.dtype))]


def histogram_inputs(cfg, rng, groups):
    out = {"histogram": rng.integers(0, 1000, (groups, bins_of(cfg))).astype(np.uint32)}
    if "items" in {p.name for p in cfg.method.params}:
        out["items"] = rng.integers(0, bins_of(cfg), (groups, cfg.threads, cfg.ipt)).astype(cfg.dtype)
    return out


def histogram_valid(cfg) -> bool:
    return bins_of(cfg) <= np.iinfo(np.dtype(cfg.dtype)).max + 1


# --- radix rank ----------------------------------------------------------------------------

def digit_shift(cfg) -> int:
    return int(cfg.seed % max(1, np.dtype(cfg.dtype).itemsize * 8 - int(tkw(cfg)["radix_bits"]) + 1))


def ref_radix_rank(cfg, ins, got):
    """Ranks of a stable counting sort by digit. The match-based rankers are checked for what
    they promise: ranks form a permutation that orders the digits."""
    keys = ins["keys"]
    g, threads, k = keys.shape
    rb = int(tkw(cfg)["radix_bits"])
    desc = bool(tkw(cfg)["is_descending"])
    d = (flat(keys).astype(np.uint64) >> np.uint64(digit_shift(cfg))) & np.uint64((1 << rb) - 1)
    want = np.empty(d.shape, np.int32)
    got_r = flat(got["ranks"])
    for gi in range(g):
        order = stable_order(d[gi], desc)
        want[gi, order] = np.arange(d.shape[1])
        if cfg.cls != "BlockRadixRank":
            r = got_r[gi]
            if np.array_equal(np.sort(r), np.arange(len(r))):
                placed = np.empty_like(d[gi])
                placed[r] = d[gi]
                steps = np.diff(placed.astype(np.int64))
                if (steps <= 0).all() if desc else (steps >= 0).all():
                    want[gi] = r
    if desc and all(np.array_equal(got_r[gi][stable_order(d[gi], False)], np.arange(d.shape[1]))
                    for gi in range(g)):
        return [Check("ranks", want.reshape(keys.shape), note="the ascending ranks")]
    return [Check("ranks", want.reshape(keys.shape))]


def rank_skip(cls, method) -> str:
    names = {p.name for p in method.params}
    if "exclusive_digit_prefix" in names:
        return "exclusive_digit_prefix (BINS_TRACKED_PER_THREAD per thread): no reference yet"
    if "callback" in names:
        return "counts callback: no reference yet"
    return ""


# --- run-length decode ---------------------------------------------------------------------

def ref_run_length(cfg, ins, got):
    """The object holds the block's runs (blocked); RunLengthDecode(from_decoded_offset) gives
    thread t the decoded items offset + t * D + i and, if asked, their offsets in their runs."""
    values = flat(ins["run_values"])
    g, n_runs = values.shape
    if "run_lengths" in ins:
        lengths = flat(ins["run_lengths"]).astype(np.int64)
    else:  # offsets: the last run's length is unknown; decode only up to its start
        offsets = flat(ins["run_offsets"]).astype(np.int64)
        lengths = np.diff(offsets, axis=1, append=offsets[:, -1:])
    decoded = got["decoded_items"]
    threads, d = decoded.shape[1], decoded.shape[2]
    want = np.zeros(decoded.shape, decoded.dtype)
    rel = np.zeros(decoded.shape, np.uint32)
    defined = np.zeros(decoded.shape, bool)
    totals = lengths.sum(axis=1)
    for gi in range(g):
        expanded = np.repeat(values[gi], lengths[gi])
        starts = np.repeat(np.cumsum(lengths[gi]) - lengths[gi], lengths[gi])
        pos = int(ins["from_decoded_offset"][gi]) + np.arange(threads * d).reshape(threads, d)
        ok = pos < totals[gi]
        want[gi][ok] = expanded[pos[ok]]
        rel[gi][ok] = pos[ok] - starts[pos[ok]]
        defined[gi] = ok
    checks = [Check("decoded_items", want, defined)]
    if "item_offsets" in got:
        checks.append(Check("item_offsets", rel.astype(got["item_offsets"].dtype), defined))
    if "total_decoded_size" in got:
        checks.append(Check("total_decoded_size", per_thread(totals, threads).astype(np.uint32)))
    return checks


def run_length_inputs(cfg, rng, groups):
    """Runs of 1 to 5 items; zero-length runs only at the end of the tile (CUB: a run of
    length zero may not be followed by one that is not)."""
    runs = int(tkw(cfg)["runs_per_thread"])
    lengths = rng.integers(1, 6, (groups, cfg.threads * runs))
    for gi in range(groups):
        lengths[gi, lengths.shape[1] - int(rng.integers(0, 4)):] = 0
    total = lengths.sum(axis=1)
    offsets = np.cumsum(lengths, axis=1) - lengths
    return {"run_lengths": lengths.astype(np.int32), "run_offsets": offsets.astype(np.int32),
            "from_decoded_offset": np.array([rng.integers(0, t + 1) for t in total], np.uint32)}


# --- batched warp reductions (CCCL 3.5.0) --------------------------------------------------

def ref_batched(cfg, ins, got):
    """WarpReduceBatched: each thread's ``inputs[b]`` is its item of batch b; batch b's result
    goes to lane b (Sum/Reduce), lane b % W output b // W (to striped) or lane b // n output
    b % n (to blocked, n outputs per lane)."""
    x = ins["inputs"]
    g, w, batches = x.shape
    op = op_of(cfg)
    red = accumulate(op, x.transpose(0, 2, 1), cfg.dtype)[..., -1]  # (groups, batches)
    mag = magnitude(op, x.transpose(0, 2, 1), cfg.dtype)
    name = "return" if "return" in got else "outputs"
    n_out = got[name].shape[2]
    lane = np.arange(w)[:, None]
    j = np.arange(n_out)[None, :]
    batch = lane * n_out + j if name == "outputs" and "Blocked" in cfg.method.name \
        else lane + w * j
    defined = np.broadcast_to(batch < batches, (g, w, n_out))
    want = red[:, np.minimum(batch, batches - 1)]
    mg = None if mag is None else mag[..., -1][:, np.minimum(batch, batches - 1)]
    return [Check(name, want, defined, value_mode(op, cfg.dtype), magnitude=mg)]


def batched_valid(cfg) -> bool:
    # Sum and Reduce return one value per lane: at most one batch per lane
    return cfg.method.name not in ("Sum", "Reduce") or cfg.ipt <= cfg.warp


# --- warp reduce, broadcast ----------------------------------------------------------------

def ref_warp_segmented(cfg, ins, got):
    x = flat(ins["input"])
    g, w = x.shape
    op = op_of(cfg)
    head = "Head" in cfg.method.name
    flags = flat(ins["head_flag" if head else "tail_flag"]) != 0
    want = np.zeros((g, w, 1), got["return"].dtype)
    mask = np.zeros((g, w, 1), bool)
    mag = np.zeros((g, w, 1), complex if np.iscomplexobj(want) else float) \
        if magnitude(op, x[:, :1], cfg.dtype) is not None else None
    for gi in range(g):
        if head:
            starts = [0] + [i for i in range(1, w) if flags[gi, i]]
        else:
            starts = [0] + [i + 1 for i in range(w - 1) if flags[gi, i]]
        for s, e in zip(starts, starts[1:] + [w]):
            want[gi, s, 0] = accumulate(op, x[gi, s:e], cfg.dtype)[-1]
            mask[gi, s, 0] = True
            if mag is not None:
                mag[gi, s, 0] = magnitude(op, x[gi, s:e], cfg.dtype)[-1]  # per part
    return [Check("return", want, mask, value_mode(op, cfg.dtype), magnitude=mag)]


def segment_inputs(cfg, rng, groups):
    name = "head_flag" if "Head" in cfg.method.name else "tail_flag"
    return {name: (rng.random((groups, cfg.warp, 1)) < 0.25).astype(np.int32)}


def ref_broadcast(cfg, ins, got):
    x = ins["input"]
    lanes = ins["src_lane"].astype(np.int64)
    want = x[np.arange(x.shape[0]), lanes, 0]
    return [Check("return", per_thread(want, x.shape[1]))]


# --- counts of valid items: per group, in the range the call defines -----------------------

def count_inputs(cfg, rng, groups) -> dict:
    n = cfg.group_threads * (cfg.ipt if any(p.extent for p in cfg.method.params)
                             or cfg.cls in ("BlockLoad", "BlockStore", "WarpLoad", "WarpStore")
                             else 1)
    out = {}
    for p in cfg.method.params:
        if p.role != "count" or p.name in ("begin_bit", "end_bit", "distance"):
            continue
        if p.name == "src_lane":
            out[p.name] = rng.integers(0, cfg.group_threads, groups).astype(np.uint32)
        else:  # valid_items, num_valid, block_items_end: a partial tile or a full one
            lo = 0 if cfg.cls in ("BlockLoad", "BlockStore", "WarpLoad", "WarpStore",
                                  "BlockAdjacentDifference") else 1
            v = rng.integers(lo, n + 1, groups)
            v[rng.random(groups) < 0.2] = n
            out[p.name] = v.astype(np.int32)
    return out


# --- cub::detail::block_topk (unstable): the k smallest or largest keys of a tile -------------

def topk_inputs(cfg, rng, groups) -> dict:
    """k from 1 to the valid items (a full tile, is_full_tile=True, has every item valid) and
    a digit range, as for radix sorts."""
    n = cfg.group_threads * cfg.ipt
    valid = np.full(groups, n) if tkw(cfg).get("is_full_tile") else rng.integers(1, n + 1, groups)
    k = np.array([rng.integers(1, v + 1) for v in valid])
    return {"num_valid": valid.astype(np.int32), "k": k.astype(np.int32),
            **radix_inputs(cfg, rng, groups)}


def _bits_of(x) -> list:
    return x.view(np.dtype(f"u{x.dtype.itemsize}")).tolist() if x is not None else []


def _is_sub_multiset(part: list, whole: list) -> bool:
    from collections import Counter

    have = Counter(whole)
    have.subtract(Counter(part))
    return min(have.values(), default=0) >= 0


def ref_topk(cfg, ins, got):
    """The first k items (blocked) hold the items of the k smallest (min_*) or largest (max_*)
    digits (bits begin_bit to end_bit) among the valid items, in no particular order; items
    tied at the k-th digit may be any of them. So the reference checks that the digits are the
    k extreme ones and that every returned (key, value) is an input pair (a multiset), then
    expects the kernel's own order. Items past k are undefined."""
    keys, largest = ins["keys"], cfg.method.name.startswith("max")
    tile, out = flat(keys), flat(got["keys"])
    vals, out_v = (flat(ins["values"]), flat(got["values"])) if "values" in ins else (None, None)
    want, mask = tile.copy(), np.zeros(tile.shape, bool)
    want_v = vals.copy() if vals is not None else None
    bits = key_bits(cfg)
    for gi in range(tile.shape[0]):
        k, valid = int(ins["k"][gi]), int(ins["num_valid"][gi])
        begin = int(ins["begin_bit"][gi]) if "begin_bit" in ins else 0
        end = int(ins["end_bit"][gi]) if "end_bit" in ins else bits
        d = digits(tile[gi, :valid], begin, end)
        order = np.argsort(d, kind="stable")
        chosen = order[::-1][:k] if largest else order[:k]
        mask[gi, :k] = True
        same = sorted(digits(out[gi, :k], begin, end).tolist()) == sorted(d[chosen].tolist())
        pairs = list(zip(_bits_of(out[gi, :k]), _bits_of(out_v[gi, :k]) if vals is not None
                         else [0] * k))
        inputs = list(zip(_bits_of(tile[gi, :valid]), _bits_of(vals[gi, :valid])
                          if vals is not None else [0] * valid))
        same = same and _is_sub_multiset(pairs, inputs)
        want[gi, :k] = out[gi, :k] if same else tile[gi, :valid][chosen]
        if vals is not None:
            want_v[gi, :k] = out_v[gi, :k] if same else vals[gi, :valid][chosen]
    checks = [Check("keys", want.reshape(keys.shape), mask.reshape(keys.shape),
                    note="not the k extreme digits, or an item not from the input")]
    if vals is not None:
        checks.append(Check("values", want_v.reshape(keys.shape), mask.reshape(keys.shape)))
    return checks


def _combined(*fns):
    def inputs(cfg, rng, groups):
        out = {}
        for f in fns:
            out.update(f(cfg, rng, groups))
        return out
    return inputs


def _ops_named(*names):
    return lambda method, dtype: list(names)


def _scan_ops(method, dtype):
    return [] if "Sum" in method.name else arith_ops(method, dtype)


FAMILIES = {
    ("BlockReduce", "Sum"): Family(ref_reduce),
    ("BlockReduce", "Reduce"): Family(ref_reduce, ops=reduce_ops),
    ("WarpReduce", "Sum"): Family(ref_reduce),
    ("WarpReduce", "Max"): Family(ref_reduce),
    ("WarpReduce", "Min"): Family(ref_reduce),
    ("WarpReduce", "Reduce"): Family(ref_reduce, ops=reduce_ops),
    ("WarpReduce", "HeadSegmentedSum"): Family(ref_warp_segmented, inputs=segment_inputs),
    ("WarpReduce", "TailSegmentedSum"): Family(ref_warp_segmented, inputs=segment_inputs),
    ("WarpReduce", "HeadSegmentedReduce"): Family(ref_warp_segmented, ops=reduce_ops,
                                                  inputs=segment_inputs),
    ("WarpReduce", "TailSegmentedReduce"): Family(ref_warp_segmented, ops=reduce_ops,
                                                  inputs=segment_inputs),
    ("WarpScan", "Broadcast"): Family(ref_broadcast),
    ("BlockRunLengthDecode", "RunLengthDecode"): Family(
        ref_run_length, inputs=run_length_inputs,
        int_tkw={"runs_per_thread": (1, 2, 3, 4), "decoded_items_per_thread": (1, 2, 3, 4, 7, 8)}),
    **{("WarpReduceBatched", m): Family(ref_batched, ops=reduce_ops, valid=batched_valid)
       for m in ("Reduce", "ReduceToStriped", "ReduceToBlocked", "Sum", "SumToStriped",
                 "SumToBlocked")},
    **{(c, m): Family(ref_scan, ops=_scan_ops)
       for c in ("BlockScan", "WarpScan")
       for m in ("ExclusiveSum", "InclusiveSum", "ExclusiveScan", "InclusiveScan", "Scan",
                 "ExclusiveScanPartial", "InclusiveScanPartial")},
    ("BlockLoad", "Load"): Family(ref_load, valid=warp_transpose_ok, records=True),
    ("BlockStore", "Store"): Family(ref_store, valid=warp_transpose_ok, records=True),
    ("WarpLoad", "Load"): Family(ref_load, records=True),
    ("WarpStore", "Store"): Family(ref_store, records=True),
    **{("BlockExchange", m): Family(ref_exchange, bools=("warp_time_slicing",),
                                    inputs=exchange_inputs, valid=exchange_valid, records=True)
       for m in EXCHANGES},
    **{("WarpExchange", m): Family(ref_exchange, inputs=exchange_inputs, valid=exchange_valid,
                                   records=True)
       for m in ("BlockedToStriped", "StripedToBlocked", "ScatterToStriped")},
    **{("BlockRadixSort", m): Family(ref_radix_sort, bools=("memoize_outer_scan",),
                                     int_tkw={"radix_bits": (1, 2, 3, 4, 5, 6)},
                                     inputs=radix_inputs, valid=decomposer_valid, records=True)
       for m in ("Sort", "SortDescending", "SortBlockedToStriped",
                 "SortDescendingBlockedToStriped")},
    **{(c, m): Family(ref_merge_sort, ops=compare_ops, edges=EDGES_ORDER,
                      inputs=merge_sort_inputs, records=True,
                      threads="power_of_two" if c == "BlockMergeSort" else "any")
       for c in ("BlockMergeSort", "WarpMergeSort") for m in ("Sort", "StableSort")},
    **{("BlockAdjacentDifference", m): Family(ref_adjacent_difference,
                                              ops=_ops_named("-", "py_sub"))
       for m in ("SubtractLeft", "SubtractRight", "SubtractLeftPartialTile",
                 "SubtractRightPartialTile")},
    **{("BlockDiscontinuity", m): Family(ref_discontinuity, ops=_ops_named("!=", "==", "py_ne"))
       for m in ("FlagHeads", "FlagTails", "FlagHeadsAndTails")},
    **{("BlockShuffle", m): Family(ref_shuffle, inputs=shuffle_inputs, records=m in ("Up", "Down"))
       for m in ("Offset", "Rotate", "Up", "Down")},
    **{("BlockHistogram", m): Family(ref_histogram, dtypes=("uint8", "uint16", "uint32"),
                                     int_tkw={"bins": (8, 16, 32, 64, 100, 128, 256)},
                                     inputs=histogram_inputs, valid=histogram_valid)
       for m in ("InitHistogram", "Histogram", "Composite")},
    **{("block_topk", m): Family(ref_topk, dtypes=INTS + FLOATS, bools=("is_full_tile",),
                                 edges=("0.0", "-0.0", "inf", "-inf"), inputs=topk_inputs)
       for m in ("max_keys", "min_keys", "max_pairs", "min_pairs")},
    **{(f, f): Family(ref_load if f.startswith("Load") else ref_store, records=True,
                      threads="warp_multiple" if "Warp" in f else "any")
       for f in DIRECT},
    ("ThreadLoad", "ThreadLoad"): Family(ref_thread_load, dtypes=ALL, records=True),
    ("ThreadStore", "ThreadStore"): Family(ref_thread_store, dtypes=ALL, records=True),
    **{(f, f): Family(ref_warp_shuffle, dtypes=ALL + HALVES, threads="warp_multiple",
                      inputs=warp_shuffle_inputs, records=True)
       for f in ("ShuffleUp", "ShuffleDown", "ShuffleIndex")},
    **{(c, "RankKeys"): Family(ref_radix_rank, dtypes=UNSIGNED, threads="warp_multiple",
                               bools=("is_descending", "memoize_outer_scan"),
                               int_tkw={"radix_bits": (1, 2, 3, 4, 5, 6)},
                               enum_values={"match_algorithm": ["WARP_MATCH_ANY"]},
                               skip=rank_skip)
       for c in ("BlockRadixRank", "BlockRadixRankMatch", "BlockRadixRankMatchEarlyCounts")},
}
# The float edge values a scan or reduction may see depend on its operator.
SCAN_LIKE = {k for k, f in FAMILIES.items() if f.reference in (ref_scan, ref_reduce,
                                                                 ref_warp_segmented, ref_batched)}

NOT_DRAWN = {
    ("LoadDirectBlockedVectorized", "LoadDirectBlockedVectorized"):
        "needs a tile aligned to its vector width (tests/gpu/test_free_functions_gpu.py)",
    ("StoreDirectBlockedVectorized", "StoreDirectBlockedVectorized"):
        "needs a tile aligned to its vector width (tests/gpu/test_free_functions_gpu.py)",
    ("BlockRadixRankMatch", "CallBack"): "internal CUB helper, not a collective call",
    ("WarpMergeSort", "get_member_mask"): "a query, not a collective call",
    ("BlockLoadToShared", "Invalidate"): "moves no data: ends the mbarrier's use",
    ("BlockLoadToShared", "CommitAndWait"): "moves no data without CopyAsync (unbound: spans)",
}


def family_of(cls: str, method: str) -> Family | None:
    return FAMILIES.get((cls, method))


def skip_reason(cls, method, fam: Family | None) -> str:
    if fam is None:
        return NOT_DRAWN.get((cls.name, method.name), "no numpy reference for this method yet")
    return fam.skip(cls, method)


def float_edges(cfg) -> tuple:
    if (cfg.cls, cfg.method.name) in SCAN_LIKE:
        return EDGES_SUM if op_of(cfg) in ("+", "py_add") else EDGES_ORDER
    return cfg.family.edges
