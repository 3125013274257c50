"""cuda.coop's group-first API as data: ``coop.sum(coop.this_block(), x)``.

A group (``this_block()``, ``this_warp()``, ``this_warp().group_by(16)``, ...) is a plain value
made on the host, at compile time: the IR rewrite (coopgen.resolve.kernel_ir) reads it where a
kernel makes it. A group call is one ``GroupCall``: per group family ("block", "warp") a
``Route`` that names the Pythonic entry point it becomes and how its arguments are renamed, so
that ``coop.sum(block, x, valid_items=n)`` is ``block.sum(x, num_valid=n)`` and
``coop.sum(warp16, x)`` is ``warp.sum(x, threads_in_warp=16)``. The rewrite then materialises
what a route asks for: a new per-thread array for results that cuda.coop returns (the input is
left as it was), a copy for CUB's in-place calls, a tuple for pairs.

Nothing here knows an IR: a plan is made from names and host values (``value_of``) and carried
out by the rewrite.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..model import backends
from ..model.errors import CoopgenError, CoopgenUnsupported
from .group_kinds import FAMILY, GROUP_SPELLING, UNSERVED, Group  # noqa: F401
from .kernel_ir import UNKNOWN
from .operators import StatefulFunction

#: cuda.coop's meaning of Python's number types as dtypes.
PYTHON_NUMBERS = {int: "int32", float: "float32", bool: "bool"}


@dataclass(frozen=True)
class Route:
    """How a group call becomes a call of ``target`` (a Pythonic entry point's name,
    ``"block.sum"``) for one group family.

    - ``params``: the group call's own parameters after the group, positional first
      (``positional`` of them, the last ``optional`` of which may be left out), each mapped to
      the target's name (None: accepted, not passed on; the rewrite handles it, as ``offset``).
    - ``result``: "return" (the target's result), "none", "output" (the array given as the
      first of ``output``), "new" (a new per-thread array passed
      as the target's ``output`` and returned), "copy" (the target works in place on copies of
      ``inputs``, returned: one array, or a tuple).
    - ``values``: per parameter, the group call's constant spellings -> the target's.
    - ``width``: the target's keyword for a logical warp's width.
    - ``choose``: (parameter, {constant: other target}) picks the target by a constant.
    """
    target: str
    params: tuple
    positional: int = 1
    result: str = "return"
    output: str | None = None
    inputs: tuple = ()
    values: dict = field(default_factory=dict)
    fixed: dict = field(default_factory=dict)
    defaults: dict = field(default_factory=dict)  # parameter -> value when not given
    wrap: tuple = ()  # (parameter, like): a scalar given for an array parameter
    width: str | None = "threads_in_warp"
    choose: tuple | None = None
    scalar_result: str = "return"  # a scalar first argument: the target returns the result;
    # "items": ``inputs`` go as one-item arrays and their items come back (sorts of scalars)
    broadcast: bool = False  # takes broadcast= (default True): the result in every member
    output_dtype: str | None = None  # new outputs' dtype (else the first argument's)
    output_size: str | None = None  # "batched": ceil(items / warp width) (else the input's)
    hook: object = None  # hook(given, value_of, group) -> given: defaults computed from others
    special: str | None = None  # a composed call the rewrite knows: "histogram", "run_length..."
    size_from: str | None = None  # the constant giving the result's size (else the first's)
    warp_tile: str | None = None  # the per-thread array whose size makes each warp's tile:
    # a warp group's source/destination moves by the tiles of the warps before it
    bounds: tuple = ()  # (parameter, kind, target array) cuda.coop checks at run time: a
    # value outside its range traps the kernel (see _bound_checks)
    optional: int = 0  # the last positional parameters that may be left out

    def names(self) -> dict:
        return dict(self.params)

    @property
    def first(self) -> str | None:
        """The target's name of the first parameter (what a new array is made like)."""
        return self.params[0][1] if self.params else None


@dataclass(frozen=True)
class GroupPlan:
    """What the rewrite emits: ``target(**kws)``; ``kws`` hold the caller's variables or host
    constants (``Constant``), by the target's names."""
    target: object
    kws: tuple
    result: str
    output: str | None
    inputs: tuple
    like: str | None = None  # the target argument a new array is made like
    offset: object = None  # the caller's ``offset`` variable: ``offset_of`` moves by it
    offset_of: str | None = None
    wrap: tuple = ()  # (target argument, like): a scalar passed as a one-item array
    broadcast: str | None = None  # the family whose members all get the result
    width: int = 32  # a warp's lanes (a logical warp's)
    outputs: tuple = ()  # the target arguments that get new arrays ("new")
    output_dtype: str | None = None
    output_size: str | None = None
    special: str | None = None
    extra: tuple = ()  # (name, variable) the rewrite computes a target argument from
    extra_constants: tuple = ()  # (name, host value) a special call reads
    warp_broadcast: object = None  # the entry that broadcasts a warp's lane 0
    warp_tile: str | None = None  # see Route
    family: str = "block"  # the group's family ("thread", "warp", "block")
    checks: tuple = ()  # (variable, helper, arguments): run-time range checks before the call;
    # an argument ("items", target argument) is that per-thread array's item count


@dataclass(frozen=True)
class Constant:
    value: object


INT32 = (-(1 << 31), (1 << 31) - 1)


def _bound_checks(name: str, route: Route, given: dict, group, value_of) -> tuple:
    """cuda.coop's run-time preconditions of ``route.bounds`` as device checks: valid items
    within the group's tile, a warp scan's valid lanes (1 to the warp's), a rotation within the
    block, an offset that fits int32 or is not negative, decodable run lengths (``array``: the
    decoded offsets' dtype parameter). Checked on the device before any narrowing; a known
    value outside a known range is an error now."""
    checks = []
    block = group.family == "block"
    for param, kind, array in route.bounds:
        v = given.get(param)
        if v is None or isinstance(v, Constant) and v.value is None:
            continue
        if kind == "items":
            width = group.threads_in_warp or 32
            check = ("check_block_items", (("items", array),)) if block else \
                ("check_items", (("items", array), width))
        elif kind == "offset":
            check = ("check_not_negative", ())
        elif kind == "runs":  # shared slots (three per warp), the offsets' bits
            dtype = constant(name, given, array, value_of, "uint64")
            bits = 8 * np.dtype(getattr(dtype, "name", dtype)).itemsize
            check = ("check_run_lengths", (("shared", 3 * 32, "int64"), bits))
        elif kind == "lanes":  # a warp scan's valid lanes: 1 to the warp's
            check = ("check_within", (1, group.threads_in_warp or 32))
        else:  # "distance", by the shuffle's mode
            mode = constant(name, given, "mode", value_of, "down")
            if mode == "rotate" and block:
                check = ("check_block_rotation", ())
            elif mode == "offset":
                check = ("check_within", INT32)
            else:
                continue
        # a value the code fixes is checked now; one numba-cuda knows from the launch's
        # arguments, on the device (a kernel is not compiled per value)
        known = v.value if isinstance(v, Constant) else getattr(value_of, "fixed", value_of)(v)
        low, high = {"check_within": check[1], "check_not_negative": (0, float("inf"))
                     }.get(check[0], (None, None))
        if isinstance(known, (int, np.integer)) and low is not None and not low <= known <= high:
            raise CoopgenError(f"coop.{name}: {param}={known} is outside [{low}, {high}]")
        if not isinstance(v, Constant):
            checks.append((v, *check))
    return tuple(checks)


class GroupCall:
    """``coop.<name>(group, ...)``: ``routes`` per group family; ``entries`` resolves a
    target's name to its entry point (given by the API layer)."""

    def __init__(self, name: str, routes: dict, entries, doc: str = ""):
        self.name = name
        self.routes = routes
        self._entries = entries
        self.__name__ = self.__qualname__ = name
        self.__module__ = "coopgen.coop"
        self.__doc__ = doc

    _coopgen_group_call = True

    def __repr__(self):
        return f"<coopgen coop.{self.name}>"

    def __call__(self, *args, **kws):
        """Only in kernels: numba's rewrite replaces the call; a compiler that traces Python
        (CuTe DSL) carries out its plan as the kernel is traced."""
        out = backends.call_in_trace(self, args, kws)
        if out is backends.NOT_TRACING:
            raise NotImplementedError(f"coop.{self.name} can only be called inside a kernel")
        return out

    def route(self, group: Group) -> Route:
        route = self.routes.get(group.family)
        if route is None:
            allowed = " or ".join(GROUP_SPELLING.get(f, f"coop.this_{f}()") for f in self.routes)
            why = UNSERVED.get(group.kind)
            if why is not None:  # NotImplementedError, as cuda.coop's
                raise CoopgenUnsupported(f"coop.{self.name}: the group {group.describe()} "
                                         f"{why}; this call takes {allowed}")
            raise CoopgenError(f"coop.{self.name}: the group {group.describe()} does not fit "
                               f"this call; it takes {allowed}")
        return route

    def plan(self, group: Group, args: list, kws: dict, value_of, is_array) -> GroupPlan:
        """``args``/``kws``: the caller's arguments after the group (opaque variables);
        ``value_of(var)``: its host value or ``UNKNOWN``; ``is_array(var)``: whether it is a
        per-thread array."""
        route = self.route(group)
        names = route.names()
        positional = [n for n, _ in route.params][:route.positional]
        if len(args) > len(positional):
            raise CoopgenError(f"coop.{self.name}: takes {len(positional) + 1} positional "
                               f"arguments (group, {', '.join(positional)}), got "
                               f"{len(args) + 1}; pass the others by keyword")
        given = dict(zip(positional, args))
        for k, v in kws.items():
            if k not in names:
                raise CoopgenError(f"coop.{self.name}: unknown keyword {k!r} for "
                                   f"{group.describe()}; allowed: {', '.join(names)}")
            if k in given:
                raise CoopgenError(f"coop.{self.name}: {k!r} given twice")
            given[k] = v
        required = positional[:len(positional) - route.optional]
        if missing := [n for n in required if n not in given]:
            raise CoopgenError(f"coop.{self.name}: missing required argument {missing[0]!r}")
        target, route = self._chosen(route, given, value_of)
        if route.hook is not None:
            given = route.hook(self.name, given, value_of, group)
        checks = _bound_checks(self.name, route, given, group, value_of)
        extra = tuple((k, given.pop(k)) for k in [k for k in given if k.startswith("_")])
        constants = tuple((k[1:], given.pop(k).value)
                          for k in [k for k in given if k.startswith("=")])
        out_kws, offset = {k: Constant(v) for k, v in route.fixed.items()}, None
        broadcast = given.pop("broadcast", Constant(True))
        broadcast = broadcast.value if isinstance(broadcast, Constant) else value_of(broadcast)
        broadcast = bool(route.broadcast) and broadcast
        if broadcast not in (True, False):
            raise CoopgenError(f"coop.{self.name}: broadcast={broadcast!r} must be True or "
                               f"False, known when the kernel compiles")
        given.update({k: Constant(v) for k, v in route.defaults.items() if k not in given})
        for k, v in given.items():
            if names.get(k) is None:
                offset = v if k == "offset" else offset
                continue
            value = v.value if isinstance(v, Constant) else value_of(v)
            spelled = route.values.get(k, {})
            if isinstance(value, str) and spelled:
                if value not in spelled:
                    raise CoopgenError(f"coop.{self.name}: unknown {k}={value!r}; allowed: "
                                       f"{', '.join(map(repr, spelled))}")
                v = Constant(spelled[value])
            if value is None:  # k=None: not given
                continue
            out_kws[names[k]] = v
        if route.width and group.threads_in_warp is not None:
            out_kws[route.width] = Constant(group.threads_in_warp)
        first = given[positional[0]] if positional else None
        result = route.result
        if result in ("new", "copy") and first is not None and not is_array(first):
            result = route.scalar_result
        wrap = ()
        if route.wrap and route.wrap[0] in given and not is_array(given[route.wrap[0]]):
            wrap = (names[route.wrap[0]], names[route.wrap[1]])
        target = target if target.startswith("helper:") else self._entries(target)
        outputs = route.output if isinstance(route.output, tuple) else (route.output,)
        return GroupPlan(target, tuple(out_kws.items()), result,
                         outputs[0], tuple(names[i] for i in route.inputs), route.first,
                         offset, route.first if offset is not None else None, wrap,
                         group.family if broadcast else None, group.threads_in_warp or 32,
                         outputs, route.output_dtype, route.output_size, route.special, extra,
                         constants, self._entries("warp.broadcast") if broadcast else None,
                         route.warp_tile, group.family, checks)

    def _chosen(self, route: Route, given: dict, value_of):
        if route.choose is None:
            return route.target, route
        param, targets = route.choose
        value = value_of(given[param]) if param in given else None
        key = value if isinstance(value, str) or value is None else bool(value)
        if key not in targets:
            raise CoopgenError(f"coop.{self.name}: {param}={value!r} must be a constant; "
                               f"allowed: {', '.join(repr(k) for k in targets if k)}")
        chosen = targets[key]
        return (chosen.target, chosen) if isinstance(chosen, Route) else (chosen, route)


def constant(name: str, given: dict, key: str, value_of, default=None):
    """A parameter's host value (``default`` when not given); an error when not known."""
    if key not in given:
        return default
    v = given[key]
    value = v.value if isinstance(v, Constant) else value_of(v)
    if value is UNKNOWN:
        raise CoopgenError(f"coop.{name}: {key} must be known when the kernel compiles (a "
                           f"constant)")
    return value


def check_bit_range(name: str, bits: dict, dtype) -> None:
    """A bit range (``bits``: begin_bit, end_bit, host values) lies within keys of ``dtype``
    (CUB would read past the key: a silently wrong order); unknown ones are not checked."""
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        return
    width = 8 * dtype.itemsize
    begin, end = bits.get("begin_bit", 0), bits.get("end_bit", width)
    if UNKNOWN in (begin, end) or begin is None or end is None:
        return
    if not 0 <= begin < end <= width:
        raise CoopgenError(f"coop.{name}: the bit range [begin_bit={begin}, end_bit={end}) is "
                           f"not within the {width}-bit {dtype.name} keys (0 <= begin_bit < "
                           f"end_bit <= {width})")


def radix_rank_bits(name, given, value_of, group):
    """cuda.coop ranks ``radix_bits`` bits (4 unless given) from ``begin_bit``: CUB's digit
    is the bits [begin_bit, end_bit)."""
    begin = constant(name, given, "begin_bit", value_of, 0)
    bits = constant(name, given, "radix_bits", value_of)
    end = constant(name, given, "end_bit", value_of)
    if end is None:
        end = begin + (4 if bits is None else bits)
    elif bits is not None and end - begin != bits:
        raise CoopgenError(f"coop.{name}: radix_bits={bits} does not match the bit range "
                           f"[begin_bit={begin}, end_bit={end})")
    if not 1 <= end - begin <= 8:
        raise CoopgenError(f"coop.{name}: ranks 1 to 8 bits at a time; got [begin_bit={begin}, "
                           f"end_bit={end})")
    given = {k: v for k, v in given.items() if k != "radix_bits"}
    given.update(begin_bit=Constant(begin), end_bit=Constant(end))
    return given


def prefix_callback(name, given, value_of, group):
    """A block scan's prefix callback (CUB's BlockPrefixCallbackOp), ``prefix_op=`` or
    ``block_prefix_callback_op=``: a device function of the block's aggregate, cuda.coop's
    state array alone (its StatefulFunction found by the state's dtype), or, with the state
    array as the positional argument after the value, a StatefulFunction or a device function
    taking the state first: coopgen's ``prefix_op=(function, state)``."""
    given = dict(given)
    ops = [k for k in ("prefix_op", "block_prefix_callback_op") if k in given]
    if len(ops) > 1:
        raise CoopgenError(f"coop.{name}: pass prefix_op= or block_prefix_callback_op=, not "
                           f"both")
    state, op = given.pop("state", None), given.pop(ops[0]) if ops else None
    fn = None if op is None else op.value if isinstance(op, Constant) else value_of(op)
    if state is None:
        if isinstance(fn, StatefulFunction):
            raise CoopgenError(f"coop.{name}: prefix_op={fn.name} (a StatefulFunction) needs "
                               f"its state array, passed after the value: coop.{name}(group, "
                               f"value, state, prefix_op=...)")
        if op is not None:
            given["prefix_op"] = op
        return given
    fn = fn.op_class if isinstance(fn, StatefulFunction) else fn
    fn = fn.__call__ if isinstance(fn, type) else fn  # cuda.coop's class: its __call__
    if fn is None or fn is UNKNOWN or not callable(fn):
        raise CoopgenError(f"coop.{name}: a state argument needs prefix_op= (a "
                           f"StatefulFunction, or a device function taking the state first), "
                           f"known when the kernel compiles; got {fn!r}")
    given["_pair:prefix_op"] = (fn, state, op)  # op: the caller's variable, dropped
    return given


def sort_order(name, given, value_of, group):
    """``descending=`` as the comparator merge sorts take (unless one is given)."""
    descending = constant(name, given, "descending", value_of, False)
    given = {k: v for k, v in given.items() if k != "descending"}
    if "compare_op" not in given or constant(name, given, "compare_op", value_of) is None:
        given["compare_op"] = Constant(">" if descending else "<")
    elif descending:
        raise CoopgenError(f"coop.{name}: pass descending= or compare_op=, not both")
    if ("valid_items" in given) != ("oob_default" in given):
        raise CoopgenError(f"coop.{name}: valid_items and oob_default go together (the "
                           f"out-of-range keys sort last as oob_default)")
    return given


def full_tile(name, given, value_of, group):
    """top-k of a full tile unless ``valid_items`` is given (CUB's IsFullTile)."""
    given = dict(given)
    full = "valid_items" not in given or (isinstance(given["valid_items"], Constant)
                                          and given["valid_items"].value is None)
    given["is_full_tile"] = Constant(full)
    if full:
        given["_tile:num_valid"] = given["keys"]  # the rewrite passes the tile's size
    return given


#: The counters CUB's atomic histogram (atomicAdd on the counter type) counts in, per counter
#: dtype: CUDA adds 64-bit integers atomically as unsigned only, whose bits are the same for
#: counts (the result is read back as the dtype asked for).
ATOMIC_COUNTERS = {"int32": "int32", "uint32": "uint32", "int64": "uint64", "uint64": "uint64"}


def histogram_shape(name, given, value_of, group):
    """cuda.coop's histogram: ``bins`` (required), ``bins_per_thread`` (1) and
    ``counter_dtype`` (int32), known when the kernel compiles."""
    bins = constant(name, given, "bins", value_of)
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise CoopgenError(f"coop.{name}: bins={bins!r} must be a positive integer constant "
                           f"(it is required)")
    per_thread = constant(name, given, "bins_per_thread", value_of, 1)
    dtype = constant(name, given, "counter_dtype", value_of, None) or "int32"
    try:  # Python's int and float are 32-bit here, as in cuda.coop; numba types by name
        dtype = np.dtype(PYTHON_NUMBERS.get(dtype, getattr(dtype, "name", dtype))).name
    except TypeError:
        raise CoopgenError(f"coop.{name}: counter_dtype={dtype!r} is not a dtype") from None
    if np.dtype(dtype).kind not in "iu":
        raise CoopgenError(f"coop.{name}: counter_dtype={dtype} must be an integer type")
    algorithm = constant(name, given, "algorithm", value_of, "atomic")
    counted = dtype
    atomic = "ATOMIC" in str(getattr(algorithm, "name", algorithm)).upper()
    if atomic:
        counted = ATOMIC_COUNTERS.get(dtype)
        if counted is None:
            raise CoopgenError(f"coop.{name}: counter_dtype={dtype} has no atomic add (the "
                               f"atomic algorithm's); allowed: {', '.join(ATOMIC_COUNTERS)}, "
                               f"or algorithm='sort'")
    out = {k: v for k, v in given.items() if k not in ("bins", "bins_per_thread",
                                                       "counter_dtype")}
    if not atomic:  # CUB's sorting histogram radix-sorts the samples in place: it gets a copy
        out["_copy:items"] = given["samples"]
    out.update({"=bins": Constant(bins), "=bins_per_thread": Constant(per_thread),
                "=counter_dtype": Constant(dtype), "=counted_dtype": Constant(counted)})
    return out


def decoded_window(name, given, value_of, group):
    """run_length_decode's (and _into's) ``decoded_items_per_thread``: required, a constant."""
    n = constant(name, given, "decoded_items_per_thread", value_of)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise CoopgenError(f"coop.{name}: decoded_items_per_thread={n!r} must be a positive "
                           f"integer constant (it is required)")
    return dict(given, **{"=decoded_items_per_thread": Constant(n)})


def load_keeps_unloaded(name, given, value_of, group):
    """cuda.coop's partial load without ``oob_default`` leaves the slots past ``valid_items``
    as they were: CUB's transposing loads exchange them with other threads' slots, so those
    put them back after the load."""
    algorithm = constant(name, given, "algorithm", value_of, "direct")
    if "TRANSPOSE" in str(getattr(algorithm, "name", algorithm)).upper() and \
            "valid_items" in given and "oob_default" not in given:
        given = dict(given, **{"_keep:dst": given["valid_items"]})
    return given


def store_keeps_items(name, given, value_of, group):
    """cuda.coop's store leaves the items as they were: CUB's transposing stores exchange them
    in place, so those store a copy."""
    algorithm = constant(name, given, "algorithm", value_of, "direct")
    if "TRANSPOSE" in str(getattr(algorithm, "name", algorithm)).upper():
        given = dict(given, **{"_copy:src": given["value"]})
    return given


def mapped_group(name, given, value_of, group):
    """A block's groups of warps (``this_block().group_by(n)``): their width and whether a
    partial last group counts, for the rewrite's two-step warp reduction."""
    return dict(given, **{"=warps": Constant(group.width),
                          "=exhaustive": Constant(group.exhaustive)})
