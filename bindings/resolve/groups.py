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

import dataclasses
from dataclasses import dataclass, field

from ..model.errors import CoopgenError

#: Group kinds (cuda.coop's names) -> the family whose routes serve them.
FAMILY = {"block": "block", "warp": "warp", "threads_within_warp": "warp",
          "thread": "thread", "cluster": "cluster", "grid": "grid",
          "warps_within_block": "warps_within_block"}
#: Logical warp widths CUB's warp primitives take (a power of two up to 32).
WARP_WIDTHS = (1, 2, 4, 8, 16, 32)


@dataclass(frozen=True)
class Group:
    """One CUDA thread group, known when the kernel compiles. ``width``: the threads of a
    logical warp (``threads_within_warp``) or the warps of a ``warps_within_block`` group."""
    kind: str
    width: int | None = None

    _coopgen_group = True

    def group_by(self, count, *, exhaustive=True):
        """A physical warp in logical warps of ``count`` threads, or a block in groups of
        ``count`` warps."""
        if isinstance(count, bool) or not isinstance(count, int):
            raise CoopgenError(f"coop.{self.describe()}.group_by: count={count!r} must be an "
                               f"integer constant")
        if self.kind == "warp":
            if count not in WARP_WIDTHS:
                raise CoopgenError(f"coop.this_warp().group_by: count={count} threads; "
                                   f"allowed: {', '.join(map(str, WARP_WIDTHS))} (CUB's "
                                   f"logical warps are powers of two up to 32)")
            return Group("threads_within_warp", count)
        if self.kind == "block":
            if count < 1:
                raise CoopgenError(f"coop.this_block().group_by: count={count} warps must be "
                                   f"at least 1")
            return Group("warps_within_block", count)
        raise CoopgenError(f"coop.{self.describe()}.group_by: only a warp (into threads) or a "
                           f"block (into warps) can be grouped")

    group_by._coopgen_host_call = True

    @property
    def family(self) -> str:
        return FAMILY[self.kind]

    @property
    def threads_in_warp(self) -> int | None:
        """The logical warp width a warp primitive takes (None: the physical warp)."""
        return self.width if self.kind == "threads_within_warp" else None

    def describe(self) -> str:
        if self.kind == "threads_within_warp":
            return f"this_warp().group_by({self.width})"
        if self.kind == "warps_within_block":
            return f"this_block().group_by({self.width})"
        return f"this_{self.kind}()"


@dataclass(frozen=True)
class Route:
    """How a group call becomes a call of ``target`` (a Pythonic entry point's name,
    ``"block.sum"``) for one group family.

    - ``params``: the group call's own parameters after the group, positional first
      (``positional`` of them), each mapped to the target's name (None: accepted, not passed on;
      the rewrite handles it, as ``offset``).
    - ``result``: "return" (the target's result), "none", "new" (a new per-thread array passed
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
    scalar_result: str = "return"  # a scalar first argument: the target returns the result
    broadcast: bool = False  # takes broadcast= (default True): the result in every member

    def names(self) -> dict:
        return dict(self.params)

    @property
    def first(self) -> str | None:
        """The target's name of the first parameter (what a new array is made like)."""
        return self.params[0][1] if self.params else None


@dataclass(frozen=True)
class GroupPlan:
    """What the rewrite emits: ``target(*args, **kws)``; ``args``/``kws`` hold the caller's
    variables (by their group-API names) or host constants (``Constant``)."""
    target: object
    args: tuple
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


@dataclass(frozen=True)
class Constant:
    value: object


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
        raise NotImplementedError(f"coop.{self.name} can only be called inside a kernel")

    def route(self, group: Group) -> Route:
        route = self.routes.get(group.family)
        if route is None:
            allowed = " or ".join(f"coop.this_{f}()" for f in self.routes)
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
        if missing := [n for n in positional if n not in given]:
            raise CoopgenError(f"coop.{self.name}: missing required argument {missing[0]!r}")
        target, route = self._chosen(route, given, value_of)
        out_kws, offset = dict(route.fixed), None
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
        return GroupPlan(target, (), tuple(out_kws.items()), result,
                         route.output, tuple(names[i] for i in route.inputs), route.first,
                         offset, route.first if offset is not None else None, wrap,
                         group.family if broadcast else None, group.threads_in_warp or 32)

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


def replace(route: Route, **changes) -> Route:
    return dataclasses.replace(route, **changes)
