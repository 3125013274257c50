"""The per-kernel shim bundle: ``extern "C" __device__`` C++ shims compiled together.

A :class:`Shim` is the C++ text of one ``extern "C" __device__`` function plus the headers it
needs. Lowering a primitive call registers its Shim with the :class:`ShimBundle` of the code
library being lowered; all shims gathered there compile in *one* NVRTC call, the first time a
linker reads the bundle. Shims are deduplicated by symbol.

Granularity (numba-cuda): every ``@cuda.jit(device=True)`` function, non-inlined ``@overload``
and ``compile_internal`` subroutine has its own code library, whose linking files (so its
bundle) are copied into the kernel's library: such a bundle compiles once (per process; disk-
cached across processes) and serves every kernel linking that library. Code lowered straight
into the kernel shares the kernel's bundle. The same shim may so be defined in two bundles of
one link: shim definitions get ODR ("inline") linkage (:data:`SHIM_DECL`), which nvJitLink
merges instead of reporting "symbol multiply defined".
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass

from . import nvrtc

#: Prefix every shim definition starts with. The bundle prelude defines it as
#: ``extern "C" __device__ inline __attribute__((used))``: ``inline`` gives the definition ODR
#: linkage (PTX ``.weak``), so the same shim compiled into two bundles of one link (kernel +
#: device function) is merged by nvJitLink; ``used`` makes NVRTC emit it although nothing in
#: the TU calls it. (``__attribute__((weak))`` is silently ignored by NVRTC 13: the symbol
#: stays ``.visible`` and the link fails with "symbol multiply defined".)
SHIM_DECL = "COOPGEN_SHIM"

_PRELUDE = (
    "#ifndef COOPGEN_SHIM\n"
    '#define COOPGEN_SHIM extern "C" __device__ inline __attribute__((used))\n'
    "#endif\n"
)


@dataclass(frozen=True)
class Shim:
    """One ``extern "C"`` device function.

    ``source`` is its complete definition, normally starting with
    ``COOPGEN_SHIM void <symbol>(...)``; ``includes`` are header names such as
    ``"cub/block/block_reduce.cuh"``. Symbols must be unique per definition
    (encode template arguments in the name).
    """

    symbol: str
    source: str
    includes: tuple = ()
    #: Namespace-scope declarations the shim needs (config structs, operator functors);
    #: the bundle puts every shim's declarations before the block-storage union.
    decls: str = ""
    #: C++ TempStorage type this shim keeps in the translation unit's implicit block
    #: storage (one union shared by all block primitives of the TU, in its storage struct).
    block_storage: str | None = None
    #: A coopgen.TempStorage use: (object, member C++ type, member name).
    temp_storage: tuple | None = None
    #: (TempStorage type, logical warps, logical warp threads): a slice per logical warp in
    #: the warp-storage union of that logical warp size.
    warp_storage: tuple | None = None
    #: (bytes, alignment) of a large coopgen.shared.array this shim returns the address of:
    #: a member of the storage struct named by the symbol (arrays.STORAGE_ARRAY_BYTES).
    shared_array: tuple | None = None


class ShimBundle:
    """The shims lowered into one code library, compiled together (lazily, once) to LTO-IR.
    A backend subclasses it to say how its kernel uses shared memory and how its calls are
    ordered (for the storage barriers)."""

    def __init__(self, arch: str, name: str = "coopgen-shims"):
        self.arch = arch
        self.label = name
        self._shims: dict[str, Shim] = {}
        # One (shim symbol, site) entry per lowered call that uses the implicit block storage;
        # site: (func_ir, block label, sequence number) in the kernel, or None when unknown.
        self._storage_uses: list[tuple[str, tuple | None]] = []
        self._ltoir: bytes | None = None
        self._lock = threading.Lock()

    @property
    def shims(self) -> tuple[Shim, ...]:
        return tuple(self._shims.values())

    def shared_array_count(self) -> int:
        """How many large shared arrays the bundle holds (arrays._storage_array names them)."""
        with self._lock:
            return sum(1 for s in self._shims.values() if s.shared_array)

    def next_use_index(self, symbol: str) -> int:
        """How many shims already use the TempStorage object ``symbol`` (exclusive slices)."""
        with self._lock:
            return sum(1 for s in self._shims.values()
                       if s.temp_storage and s.temp_storage[0].symbol == symbol)

    def add(self, shim: Shim, *, site=None) -> None:
        """Add a lowered call's shim; ``site`` is where the call sits in the kernel (the
        backend's position, see :meth:`may_precede`), None when unknown."""
        with self._lock:
            if shim.block_storage:
                seq = len(self._storage_uses)
                self._storage_uses.append((shim.symbol, None if site is None else (*site, seq)))
            old = self._shims.get(shim.symbol)
            if old is not None:
                if old != shim:
                    raise ValueError(
                        f"two different shims share the symbol {shim.symbol!r}"
                    )
                return
            if self._ltoir is not None:
                raise RuntimeError("ShimBundle already compiled; cannot add shims")
            self._shims[shim.symbol] = shim

    def source(self) -> str:
        """The translation unit: the canonical #include block, then the shims.

        The same leading block for every kernel is what NVRTC's automatic PCH matches;
        sorting the rest makes the text (so the cache key) independent of the order in which
        shims were lowered. The prelude comes after the includes so it does not break the PCH
        prefix.
        """
        canonical = canonical_includes()
        extra = sorted({h for s in self._shims.values() for h in s.includes} - set(canonical))
        parts = [f"#include <{h}>\n" for h in (*canonical, *extra)]
        parts.append(_PRELUDE)
        shims = [self._shims[sym] for sym in sorted(self._shims)]
        parts += [s.decls.strip() + "\n" for s in shims if s.decls]
        parts += self._storage(shims)
        parts += self._storage_barriers(shims)
        for s in shims:
            parts.append("\n" + s.source.strip() + "\n")
        return "".join(parts)

    def _storage(self, shims) -> list[str]:
        """All the storage of the translation unit (implicit, warp, TempStorage objects, large
        coopgen.shared.arrays), as one struct (shared_placement) whose members are what the
        shims reach through ``coopgen_storage()``."""
        from .placement import storage_definition
        from .shims import BLOCK_MEMBER, WARP_MEMBER
        from .storage import definition

        parts, members = [], []
        warp = sorted({s.warp_storage for s in shims if s.warp_storage})
        for lwt in sorted({w[2] for w in warp}):  # per logical warp size: slices of a union
            types = sorted({t for t, _, size in warp if size == lwt})
            slices = max(n for _, n, size in warp if size == lwt)
            body = "".join(f"  {t} m{i};\n" for i, t in enumerate(types))
            parts.append(f"union coopgen_warp_storage_{lwt}_t {{\n{body}}};\n")
            members.append((f"coopgen_warp_storage_{lwt}_t", f"{WARP_MEMBER}_{lwt}[{slices}]"))
        # coopgen.TempStorage objects: one member each, sized from its uses.
        objects = {}
        for s in shims:
            if s.temp_storage:
                obj, ctype, member = s.temp_storage
                objects.setdefault(obj.symbol, (obj, set()))[1].add((ctype, member))
        for symbol in sorted(objects):
            obj, uses = objects[symbol]
            parts.append(definition(obj, sorted(uses, key=lambda m: m[1])))
            members.append((f"{symbol}_t", symbol))
        for s in shims:
            if s.shared_array:
                nbytes, align = s.shared_array
                members.append((f"alignas({align}) unsigned char", f"{s.symbol}[{nbytes}]"))
        block = sorted({s.block_storage for s in shims if s.block_storage})
        if block:
            # As large and as aligned as the largest TempStorage of the translation unit.
            body = "".join(f"  {t} m{i};\n" for i, t in enumerate(block))
            parts.append(f"union coopgen_block_storage_t {{\n{body}}};\n")
            members.append(("coopgen_block_storage_t", BLOCK_MEMBER))
        if members:
            parts.append(storage_definition(members, **self._kernel_shared_memory()))
        return parts

    def _kernel_shared_memory(self) -> dict:
        """What the kernel does with shared memory besides this bundle's storage (keywords of
        placement.storage_definition); the backend knows. Without it the storage stays static."""
        return {"may_be_dynamic": False}

    def runs_once(self, site) -> bool:
        """Whether the call at ``site`` runs once per kernel (not round a loop); the backend
        knows its control flow. Without it: assume not, and wait."""
        return False

    def may_precede(self, a, b) -> bool:
        """Whether the call at site ``a`` may run before the one at ``b``."""
        return True

    def _storage_barriers(self, shims) -> list[str]:
        """``coopgen_barrier_<symbol>``: whether a block-storage use must first wait until the
        block is done with the shared storage. Only if another use may have run before it with
        a TempStorage that is not empty (CUB's empty TempStorage has size 1): a different call
        earlier in the kernel, or the same one on an earlier trip through a loop. Sizes are the
        compiler's, hence constexpr; the order comes from the kernel's control-flow graph."""
        types = {s.symbol: s.block_storage for s in shims if s.block_storage}
        lines = []
        for symbol in sorted(types):
            before = set()
            for i, (sym, site) in enumerate(self._storage_uses):
                if sym != symbol:
                    continue
                if site is None or not self.runs_once(site[:2]):
                    before.add(types[symbol])  # it may follow itself round a loop
                before |= {types[s] for j, (s, other) in enumerate(self._storage_uses)
                           if j != i and self.may_precede(other, site)}
            cond = " || ".join(f"sizeof({t}) > 1" for t in sorted(before)) or "false"
            lines.append(f"static constexpr bool coopgen_barrier_{symbol} = "
                         f"sizeof({types[symbol]}) > 1 && ({cond});\n")
        return lines

    def ltoir(self) -> bytes:
        """The translation unit's LTO-IR, compiled on first use (when a linker reads it)."""
        with self._lock:
            if self._ltoir is None:
                self._ltoir = nvrtc.compile_ltoir(self.source(), arch=self.arch)
            return self._ltoir


@functools.cache
def canonical_includes() -> tuple[str, ...]:
    """Every bound class's header and the operator headers, in one fixed order: every
    translation unit starts with this block, so NVRTC's in-process PCH of it serves every
    kernel (see nvrtc._use_pch). Parsing headers a kernel does not use costs nothing measurable:
    they share their dependencies with the ones it does."""
    from ..model import registry
    from ..types.cpp import TYPE_HEADERS
    from .shims import OPERATOR_HEADERS

    return tuple(sorted({c.header for c in registry.package().CLASSES} | set(OPERATOR_HEADERS)
                        | set(TYPE_HEADERS)))
