"""The configuration space, read from the generated specs: which overloads there are, which
template keywords, enum values and surfaces each has, and random draws from it.

A ``Config`` is one primitive call in one kernel: the overload, the surface it is called
through, dtypes, block shape, items per thread, template keywords, operator, the outputs left
to be returned, the logical warp size and the seed of its data. Its JSON form is the one-line
reproduction printed on a mismatch.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

import numpy as np

from coopgen.model import registry
from coopgen.types.desc import Scalar

from . import families

INTEGERS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
FLOATS = ("float32", "float64")
ALL_DTYPES = INTEGERS + FLOATS
#: Block shapes: 1-, 2- and 3-D, 32 to 1024 threads; the odd ones are for primitives CUB
#: allows on blocks that are not whole warps.
SHAPES_1D = (32, 64, 96, 128, 160, 192, 224, 256, 384, 448, 512, 640, 768, 896, 1024)
ODD_1D = (33, 40, 50, 65, 100, 127, 200, 255, 300, 500, 999)
SHAPES_2D = ((8, 4), (16, 4), (32, 2), (16, 8), (32, 4), (64, 2), (32, 8), (16, 16), (32, 16),
             (64, 8), (128, 4), (32, 32), (3, 32), (12, 10), (50, 3))
SHAPES_3D = ((4, 4, 2), (8, 4, 2), (4, 8, 4), (8, 8, 4), (16, 4, 4), (8, 8, 8), (4, 8, 16),
             (16, 8, 8), (8, 16, 8), (2, 4, 32), (5, 3, 3), (7, 5, 2))
TILES = 3  # thread blocks per configuration: several tiles of one kernel
#: Shared memory and registers: a tile of nt * ipt items of this many bytes at most.
TILE_BYTES = 48 * 1024


@dataclass(frozen=True)
class Config:
    cls: str
    sig: str  # the overload's C++ signature, as in the spec
    surface: str  # "faithful", or the Pythonic name ("exclusive_scan", "exchange:blocked_to_striped")
    dtype: str  # T / KeyT / InputT
    value_dtype: str  # ValueT of pairs ("" when unused)
    block: tuple  # threads per block: (x,), (x, y) or (x, y, z)
    ipt: int  # items per thread
    tkw: tuple  # ((keyword, value), ...) template keywords
    op: str  # operator: a built-in name, or "py_*" (a Python device function); "" if none
    omit: tuple  # output scalars left out of the call (returned instead)
    warp: int  # logical warp threads (warp primitives), else 0
    seed: int  # seed of the configuration's data
    # Temp storage: "implicit" (the kernel's shared union), or temp_storage= a
    # coopgen.TempStorage of the kernel shared by its calls: "exclusive" (a slice per call) or
    # "shared" (one overlapping storage; the kernel syncs before each use, as CUB asks)
    storage: str = "implicit"
    # The constructor (signature) of a class whose methods are called on an object built in
    # the kernel from data (BlockRunLengthDecode); "" for one-shot calls
    ctor: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> "Config":
        d = json.loads(text)
        d["block"] = tuple(d["block"])
        d["tkw"] = tuple(tuple(kv) for kv in d["tkw"])
        d["omit"] = tuple(d["omit"])
        return Config(**d)

    @property
    def spec(self):
        """The class spec, or a free function's (ClassSpec with function=True)."""
        return registry.classes().get(self.cls) or registry.functions()[self.cls]

    @property
    def method(self):
        return next(m for m in self.spec.methods if m.signature == self.sig)

    @property
    def constructor(self):
        return next((c for c in self.spec.constructors if c.signature == self.ctor), None)

    @property
    def threads(self) -> int:
        return math.prod(self.block)

    @property
    def group_threads(self) -> int:
        """Threads that cooperate in one call: the block, or one logical warp."""
        return self.warp or self.threads

    @property
    def warps_per_hw_warp(self) -> int:
        """Logical warps CUB forms in a hardware warp (the last one partial unless the
        logical warp size divides 32)."""
        return -(-min(32, self.threads) // self.warp)

    @property
    def warps_per_block(self) -> int:
        return -(-self.threads // 32) * self.warps_per_hw_warp

    @property
    def family(self) -> "families.Family":
        return families.family_of(self.cls, self.method.name)

    def label(self) -> str:
        return f"{self.cls}::{self.sig}"


# --- what the specs offer ------------------------------------------------------------------

def overloads(skip=None):
    """(class spec, method spec, family or None, skip reason) for every bound method overload,
    in the specs' order; ``skip(cls, method)``: why a backend cannot make the call ("" when
    it can)."""
    for cls in registry.package().CLASSES + getattr(registry.package(), "FUNCTIONS", ()):
        for m in cls.methods:
            fam = families.family_of(cls.name, m.name)
            reason = families.skip_reason(cls, m, fam) or (skip(cls, m) if skip else "")
            yield cls, m, (None if reason else fam), reason


def surfaces(cls, method, group_calls: bool = True) -> list[str]:
    """Every way to call ``method``: the faithful class, cuda.coop's group-first call (where
    ``group_calls``), and each Pythonic function (with its selector value when it picks among
    methods) whose overloads include this one."""
    group = group_calls and group_call(cls.name, method)
    out = ["faithful"] + (["group"] if group else [])
    for row in registry.package().PYTHONIC:
        if row.cls != cls.name or row.object:
            continue
        names = {p.name for p in method.params}
        if not all(n in names for n in row.needs) or any(n in names for n in row.excludes):
            continue
        for sel, m in row.methods:
            if m == method.name:
                out.append(f"{row.name}:{sel}" if row.select else row.name)
    return out


#: cuda.coop's group-first calls the fuzz draws (surface "group:<call>"): (class, method,
#: the overload's parameter names) -> (call, how its result comes back: "return" a value,
#: "into:<param>" a new array or value copied into that output, "inplace:<param>" a new array
#: copied back over that in/out array). Each takes the overload's first parameter as its
#: payload and its operator, if any, by the keyword named here.
GROUP_CALLS = {
    ("BlockReduce", "Sum", ("inputs",)): ("sum", "return", None),
    ("BlockReduce", "Sum", ("input",)): ("sum", "return", None),
    ("BlockReduce", "Reduce", ("inputs", "reduction_op")): ("reduce", "return", "binary_op"),
    ("BlockReduce", "Reduce", ("input", "reduction_op")): ("reduce", "return", "binary_op"),
    ("WarpReduce", "Sum", ("input",)): ("sum", "return", None),
    ("WarpReduce", "Reduce", ("input", "reduction_op")): ("reduce", "return", "binary_op"),
    ("BlockScan", "ExclusiveSum", ("input", "output")): ("exclusive_sum", "into:output", None),
    ("BlockScan", "InclusiveSum", ("input", "output")): ("inclusive_sum", "into:output", None),
    ("WarpScan", "ExclusiveSum", ("input", "exclusive_output")):
        ("exclusive_sum", "into:exclusive_output", None),
    ("WarpScan", "InclusiveSum", ("input", "inclusive_output")):
        ("inclusive_sum", "into:inclusive_output", None),
    ("BlockRadixSort", "Sort", ("keys", "begin_bit", "end_bit")):
        ("radix_sort_keys", "inplace:keys", None),
    ("BlockRadixSort", "SortDescending", ("keys", "begin_bit", "end_bit")):
        ("radix_sort_keys:descending", "inplace:keys", None),
    ("BlockMergeSort", "Sort", ("keys", "compare_op")):
        ("merge_sort_keys", "inplace:keys", "compare_op"),
    ("BlockExchange", "StripedToBlocked", ("input_items", "output_items")):
        ("exchange:striped_to_blocked", "into:output_items", None),
    ("BlockExchange", "BlockedToStriped", ("input_items", "output_items")):
        ("exchange:blocked_to_striped", "into:output_items", None),
    ("WarpExchange", "StripedToBlocked", ("input_items", "output_items")):
        ("exchange:striped_to_blocked", "into:output_items", None),
    ("WarpExchange", "BlockedToStriped", ("input_items", "output_items")):
        ("exchange:blocked_to_striped", "into:output_items", None),
}


def group_call(cls_name: str, method) -> tuple | None:
    """The group call of ``method``, where one takes its scalars or per-thread arrays (not a
    warp's range input)."""
    if any(p.role == "range_input" for p in method.params):
        return None
    return GROUP_CALLS.get((cls_name, method.name, tuple(p.name for p in method.params)))


def surface_fixed(cls, surface: str) -> dict:
    """Arguments a Pythonic function always passes itself (warp.max's operator)."""
    if surface in ("faithful", "group"):
        return {}
    import coopgen
    fn = getattr(getattr(coopgen, cls.scope), surface.partition(":")[0], None)
    shape = getattr(fn, "shape", None)
    return dict(shape.fixed) if shape is not None else {}


def uses_items_per_thread(cls, method) -> bool:
    return any(p.extent or p.role == "range_input" for p in method.params) or any(
        t.keyword == "items_per_thread" for t in cls.template_params)


def enum_values(tparam) -> list[str] | None:
    enum = registry.enums().get(tparam.cpp_type)
    if enum is None:
        return None
    return [n for n, _ in enum.values]


# --- drawing -------------------------------------------------------------------------------

def _pick(rng, seq):
    return seq[int(rng.integers(len(seq)))]


def _block_shape(rng, cls, fam, warp: int, forced=None):
    if warp & (warp - 1) and forced is None:
        # CUB takes a logical warp whose size is not a power of two only as a whole block
        pool, tries = (warp,), 1
    elif forced is not None:
        pool, tries = (forced,), 1
    else:
        pool, tries = _shape_pool(rng, cls, fam), 100
    odd_ok = fam.threads == "any" and cls.scope == "block"
    for _ in range(tries):
        shape = _pick(rng, pool)
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        n = math.prod(shape)
        if n % 32 and not odd_ok and not (warp and n == warp):
            continue
        if fam.threads == "power_of_two" and n & (n - 1):
            continue
        if warp and n % warp:
            continue
        if len(shape) > 1 and not any(t.keyword == "block_dim_y" for t in cls.template_params) \
                and cls.scope == "block":
            continue
        return shape
    return None


def _shape_pool(rng, cls, fam):
    dims = 1 + sum(1 for t in cls.template_params if t.keyword in ("block_dim_y", "block_dim_z"))
    if cls.scope == "warp":
        dims = 3
    nd = int(rng.integers(1, dims + 1))
    odd_ok = fam.threads == "any" and cls.scope == "block"
    if nd == 1:
        return SHAPES_1D + (ODD_1D if odd_ok else ())
    return SHAPES_2D if nd == 2 else SHAPES_3D


def _warp_threads(rng, cls) -> int:
    if cls.scope != "warp" or cls.function:  # a free function's group is the block
        return 0
    t = next(t for t in cls.template_params if t.keyword == "logical_warp_threads")
    pool = (1, 2, 4, 8, 16, 32, 32, 32)
    if t.constraint != "power_of_two":
        # CUB forms logical warps of other sizes inside each hardware warp, leaving a partial
        # one at the end of every hardware warp (its results are undefined: not compared)
        pool += (3, 5, 6, 7, 12)
    return _pick(rng, pool)


def _template_keywords(rng, cls, fam, method=None) -> tuple:
    out = []
    for t in cls.template_params + (method.keywords if method is not None else ()):
        if t.keyword in fam.fixed_tkw:
            continue
        values = enum_values(t)
        if values is not None:
            allowed = fam.enum_values.get(t.keyword, values)
            out.append((t.keyword, _pick(rng, allowed).lower()))
        elif t.cpp_type == "bool" and t.keyword in fam.bools:
            out.append((t.keyword, bool(rng.integers(2))))
        elif t.keyword in fam.int_tkw:
            out.append((t.keyword, int(_pick(rng, fam.int_tkw[t.keyword]))))
    return tuple(out)


def _shorter_overload_matches(cls, method, omit) -> bool:
    given = {p.name for p in method.params} - set(omit)
    for o in cls.overloads(method.name):
        names = {p.name for p in o.params}
        required = {p.name for p in o.params if p.role != "output_scalar"}
        if len(o.params) < len(method.params) and required <= given <= names:
            return True
    return False


def refused_by_limits(cfg: Config) -> bool:
    """Whether coopgen refuses the call (a combination CUB does not handle, from the
    limits table in the generated package): such calls are a compile-time error, not drawn."""
    from coopgen.types.cpp import template_value
    from coopgen.resolve.operators import BUILTINS

    m = cfg.method
    kws = dict(cfg.tkw)
    tparams = {t.keyword: t for t in cfg.spec.template_params}
    for lim in getattr(registry.package(), "LIMITS", ()):
        if lim.cls != cfg.cls or (lim.methods and m.name not in lim.methods):
            continue
        given = {k: template_value("fuzz", tparams[k], kws[k], registry.enums()).removeprefix("cub::")
                 for k, _ in lim.template + lim.below if k in kws}
        if any(given.get(k) != v for k, v in lim.template):
            continue
        if any(k not in given or int(given[k]) >= least for k, least in lim.below):
            continue
        if lim.params and not {p.name for p in m.params} & set(lim.params):
            continue
        if {p.name for p in m.params} & set(lim.without):
            continue
        kinds = {p.base for p in m.params if p.role == "operator"}
        if lim.operators and not any(
                BUILTINS.get(k, {}).get(cfg.op) not in {BUILTINS.get(k, {}).get(n) for n in lim.operators}
                for k in kinds):
            continue
        if lim.multi_dim_block and math.prod(cfg.block[1:]) == 1:
            continue
        if lim.lone_odd_warp and (not cfg.warp or not cfg.warp & (cfg.warp - 1) or
                                  cfg.threads <= cfg.warp):
            continue
        if lim.item_kinds and ("struct" if cfg.dtype == "record" else Scalar(cfg.dtype).kind) \
                not in lim.item_kinds and cfg.dtype not in lim.item_kinds:
            continue
        return True
    return False


def refused_operator(cfg: Config) -> bool:
    """Whether the operator is a C++ built-in the items do not have (bitwise operators of
    floats, ordering of complex numbers: the resolver's UNDEFINED table), a compile-time error."""
    from coopgen.resolve.operators import BUILTINS, UNDEFINED

    if cfg.dtype == "record":
        return False
    undefined, _ = UNDEFINED.get(Scalar(cfg.dtype).kind, ((), ""))
    if families.NAMED_OPS.get(cfg.method.name) in ("max", "min"):  # WarpReduce.Max / Min
        return BUILTINS["ReductionOp"][families.NAMED_OPS[cfg.method.name]] in undefined
    return any(BUILTINS.get(p.base, {}).get(cfg.op) in undefined
               for p in cfg.method.params if p.role == "operator")


def dtype_pool(fam, dtypes=None) -> tuple:
    """The item dtypes ``fam`` draws, limited to ``dtypes`` when given."""
    pool = fam.dtypes + (("record",) if fam.records else ())
    return pool if dtypes is None else tuple(d for d in pool if d in dtypes)


def draw_one(rng, cls, method, seed: int, forced_block=None, dtypes=None,
             surface: str | None = None, group_calls: bool = True, refuse=None) -> Config | None:
    """A random valid configuration of ``method`` (items of one of ``dtypes`` when given), or
    None when 100 tries found none."""
    fam = families.family_of(cls.name, method.name)
    pool = dtype_pool(fam, dtypes)
    if not pool:
        return None
    for _ in range(100):
        warp = _warp_threads(rng, cls)
        block = _block_shape(rng, cls, fam, warp, forced_block)
        if block is None:
            continue
        dtype = _pick(rng, pool)
        value_dtype = _pick(rng, ALL_DTYPES) if any(p.base == "ValueT" for p in method.params) else ""
        ipt = int(_pick(rng, families.IPTS)) if uses_items_per_thread(cls, method) else 1
        ops = fam.ops(method, dtype)
        op = _pick(rng, ops) if ops else ""
        outs = [p.name for p in method.params if p.role == "output_scalar"]
        omit = tuple(n for n in outs if rng.random() < 0.5)
        if omit and _shorter_overload_matches(cls, method, omit):
            omit = ()  # without them the call means a shorter overload
        built = [c for c in cls.constructors if c.params and
                 not any(p.role == "temp_storage" for p in c.params)]
        needs_object = all(any(p.role != "temp_storage" for p in c.params)
                           for c in cls.constructors)
        ctor = _pick(rng, built).signature if needs_object and built else ""
        storage = "implicit"  # (an object's storage is its constructor's: implicit here)
        if cls.scope == "block" and cls.temp_storage != "none" and not ctor and \
                rng.random() < 0.3:
            storage = _pick(rng, ("exclusive", "shared"))
        drawn = surface or ("faithful" if ctor else
                            _pick(rng, surfaces(cls, method, group_calls)))
        op = surface_fixed(cls, drawn).get("reduction_op", op)  # warp.max passes "max"
        cfg = Config(cls.name, method.signature, drawn, dtype, value_dtype, block, ipt,
                     _template_keywords(rng, cls, fam, method), op, omit, warp, seed, storage, ctor)
        size = families.np_dtype(dtype).itemsize + (
            np.dtype(value_dtype).itemsize if value_dtype else 0)
        if math.prod(block) * ipt * max(size, 4) > TILE_BYTES:
            continue
        if fam.valid(cfg) and not refused_by_limits(cfg) and not refused_operator(cfg) \
                and not (refuse and refuse(cfg)):
            return cfg
    return None


def draw(n: int, seed: int, only: str | None = None, block=None, dtypes=None,
         surface: str | None = None, skip=None, group_calls: bool = True,
         refuse=None) -> list[Config]:
    """``n`` distinct configurations, spread evenly over the overloads that have a reference
    (and match ``only``, a substring of "Class::Signature", when given), all with block shape
    ``block`` when given, items of one of ``dtypes`` (names) when given; for a backend, the
    overloads ``skip`` passes ("" for those it can call, see overloads), cuda.coop's
    group-first calls only where ``group_calls``, and no configuration ``refuse(cfg)`` is
    true of (a combination the backend refuses)."""
    rng = np.random.default_rng(seed)
    if dtypes is not None:
        dtypes = tuple(dtypes)
        known = set(ALL_DTYPES + families.ML + ("record",))
        if not set(dtypes) <= known:
            raise SystemExit(f"unknown dtypes {sorted(set(dtypes) - known)}; known: "
                             f"{', '.join(sorted(known))}")
    targets = [(c, m) for c, m, fam, _ in overloads(skip) if fam is not None and
               (only is None or only in f"{c.name}::{m.signature}") and dtype_pool(fam, dtypes)
               and (surface is None or surface in surfaces(c, m, group_calls))]
    if not targets:
        raise SystemExit(f"no overload with a reference matches {only!r}"
                         + (f" with dtypes {', '.join(dtypes)}" if dtypes else ""))
    out, seen = [], set()
    order = []
    for attempt in range(n * 20):
        if len(out) == n:
            break
        if not order:  # every overload once per round, in a fresh random order
            order = [targets[i] for i in rng.permutation(len(targets))]
        cls, m = order.pop()
        cfg = draw_one(rng, cls, m, int(rng.integers(2**31)), block, dtypes, surface,
                       group_calls, refuse)
        if cfg is None:
            continue
        key = cfg.to_json().rsplit(',"seed"', 1)[0]  # the same call with other data: a duplicate
        if key in seen:
            continue
        seen.add(key)
        out.append(cfg)
    return out
