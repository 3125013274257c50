"""cuda.coop's thread groups (``this_block()``, ``this_warp().group_by(16)``, ...) as host
values, made when a kernel compiles; coopgen.resolve.groups routes the calls that take them."""
from __future__ import annotations

from dataclasses import dataclass
from functools import partialmethod

from ..model import backends
from ..model.errors import CoopgenError

#: Group kinds (cuda.coop's names) -> the family whose routes serve them.
FAMILY = {"block": "block", "warp": "warp", "threads_within_warp": "warp",
          "thread": "thread", "cluster": "cluster", "grid": "grid",
          "warps_within_block": "warps_within_block"}

#: Group families spelled as a kernel makes them (in errors).
GROUP_SPELLING = {"warps_within_block": "coop.this_block().group_by(n)"}
#: Groups that cuda.coop names and coopgen has no collectives for, and why.
UNSERVED = {
    "grid": "has no collective calls in cuda.coop's common V1 profile (a grid-wide barrier or "
            "reduction needs a cooperative launch); only its rank and count queries work",
    "cluster": "(a thread-block cluster) has no collective calls in coopgen yet (its rank, "
               "count, is_member and sync work)",
}

@dataclass(frozen=True)
class Group:
    """One CUDA thread group, known when the kernel compiles. ``width``: the threads of a
    logical warp (``threads_within_warp``) or the warps of a ``warps_within_block`` group."""
    kind: str
    width: int | None = None
    exhaustive: bool = True  # False: the threads or warps past the last whole group are no
    # members (is_member() says so)

    _coopgen_group = True

    def group_by(self, count, *, exhaustive=True):
        """A physical warp in logical warps of ``count`` threads, or a block in groups of
        ``count`` warps."""
        if isinstance(count, bool) or not isinstance(count, int):
            raise CoopgenError(f"coop.{self.describe()}.group_by: count={count!r} must be an "
                               f"integer constant")
        if exhaustive not in (True, False):
            raise CoopgenError(f"coop.{self.describe()}.group_by: exhaustive={exhaustive!r} "
                               f"must be True or False")
        if self.kind == "warp":
            if not 1 <= count <= 32:
                raise CoopgenError(f"coop.this_warp().group_by: count={count} threads; "
                                   f"allowed: 1 to 32 (a logical warp within the physical "
                                   f"warp; exchanges, loads, stores and sorts take powers of "
                                   f"two only, as CUB does)")
            return Group("threads_within_warp", count, bool(exhaustive))
        if self.kind == "block":
            if count < 1:
                raise CoopgenError(f"coop.this_block().group_by: count={count} warps must be "
                                   f"at least 1")
            return Group("warps_within_block", count, bool(exhaustive))
        raise CoopgenError(f"coop.{self.describe()}.group_by: only a warp (into threads) or a "
                           f"block (into warps) can be grouped")

    group_by._coopgen_host_call = True

    def _traced(self, query: str, *args, **kws):
        """A query in a kernel: numba's rewrite replaces its call; a compiler that runs the
        kernel's Python as it traces it (CuTe DSL) emits it here."""
        out = backends.call_in_trace((self, query), args, kws)
        if out is backends.NOT_TRACING:
            raise NotImplementedError(f"coop.{self.describe()}.{query}() can only be called "
                                      f"inside a kernel")
        return out

    rank, count = partialmethod(_traced, "rank"), partialmethod(_traced, "count")
    rank_as, count_as = partialmethod(_traced, "rank_as"), partialmethod(_traced, "count_as")
    sync, sync_aligned = partialmethod(_traced, "sync"), partialmethod(_traced, "sync_aligned")
    is_member = partialmethod(_traced, "is_member")

    @property
    def family(self) -> str:
        return FAMILY[self.kind]

    # cuda.coop's host-side description of a group (its ThreadGroup's properties)
    @property
    def static_size(self) -> int | None:
        """The group's thread count where it does not depend on the launch."""
        return {"thread": 1, "warp": 32, "threads_within_warp": self.width,
                "warps_within_block": 32 * (self.width or 0) or None}.get(self.kind)

    @property
    def group_thread_count(self) -> int:
        if self.static_size is None:
            raise CoopgenError(f"coop.{self.describe()}: its size comes from the launch")
        return self.static_size

    is_current = property(lambda self: True)
    is_static = property(lambda self: self.static_size is not None)
    parent = property(lambda self: {"threads_within_warp": Group("warp"),
                                    "warps_within_block": Group("block")}.get(self.kind))
    source = property(lambda self: self.describe())
    block_dim = None

    @property
    def threads_in_warp(self) -> int | None:
        """The logical warp width a warp primitive takes (None: the physical warp)."""
        return self.width if self.kind == "threads_within_warp" else None

    def describe(self) -> str:
        partial = "" if self.exhaustive else ", exhaustive=False"
        if self.kind == "threads_within_warp":
            return f"this_warp().group_by({self.width}{partial})"
        if self.kind == "warps_within_block":
            return f"this_block().group_by({self.width}{partial})"
        return f"this_{self.kind}()"
