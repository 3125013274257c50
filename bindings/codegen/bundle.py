"""The shims lowered into one code library (a kernel, or a device function or ``@overload``
whose library the kernel links), deduplicated by symbol and compiled in *one* NVRTC call when a
linker first reads the bundle. One shim may so be defined in two bundles of one link, hence its
ODR linkage (``COOPGEN_SHIM``)."""
import functools
import threading

from ..model import registry
from ..types.cpp import TYPE_HEADERS
from . import nvrtc, placement
from .placement import storage_definition
from .shims import BLOCK_MEMBER, OPERATOR_HEADERS, WARP_MEMBER, Shim
from .storage import definition

#: ``COOPGEN_SHIM``, the prefix of every shim definition: ``inline`` gives it ODR linkage (PTX
#: ``.weak``), which nvJitLink merges across bundles; ``used`` makes NVRTC emit it although
#: nothing calls it. (NVRTC 13 ignores ``__attribute__((weak))``: "symbol multiply defined".)
_PRELUDE = ('#ifndef COOPGEN_SHIM\n#define COOPGEN_SHIM extern "C" __device__ inline '
            '__attribute__((used))\n#endif\n')


class ShimBundle:
    """A backend subclasses it to say how its kernel uses shared memory and how its calls are
    ordered (for the storage barriers)."""

    def __init__(self, arch: str, name: str = "coopgen-shims"):
        self.arch = arch
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
        """``site``: where the call sits in the kernel (see :meth:`may_precede`), or None."""
        with self._lock:
            if shim.block_storage:
                seq = len(self._storage_uses)
                self._storage_uses.append((shim.symbol, None if site is None else (*site, seq)))
            if self._shims.get(shim.symbol, shim) != shim:
                raise ValueError(f"two different shims share the symbol {shim.symbol!r}")
            if shim.symbol not in self._shims and self._ltoir is not None:
                raise RuntimeError("ShimBundle already compiled; cannot add shims")
            self._shims.setdefault(shim.symbol, shim)

    def source(self) -> str:
        """The translation unit: the canonical #include block (one for every kernel, which NVRTC's
        PCH matches; the prelude after it), then the shims sorted: the text (the cache key) does
        not depend on the order of lowering."""
        canonical = canonical_includes()
        extra = sorted({h for s in self._shims.values() for h in s.includes} - set(canonical))
        parts = [f"#include <{h}>\n" for h in (*canonical, *extra)]
        parts.append(_PRELUDE)
        shims = [self._shims[sym] for sym in sorted(self._shims)]
        parts += [s.decls.strip() + "\n" for s in shims if s.decls]
        parts += self._storage(shims)
        parts += self._storage_barriers(shims)
        parts += ["\n" + s.source.strip() + "\n" for s in shims]
        return "".join(parts)

    def _storage(self, shims) -> list[str]:
        """All the translation unit's storage (implicit, warp, TempStorage objects, large
        shared arrays) as one struct, which the shims reach through ``coopgen_storage()``."""
        def union(name: str, types) -> str:
            body = "".join(f"  {t} m{i};\n" for i, t in enumerate(sorted(types)))
            return f"union {name} {{\n{body}}};\n"

        parts, members = [], []
        warp = sorted({s.warp_storage for s in shims if s.warp_storage})
        for lwt in sorted({w[2] for w in warp}):  # per logical warp size: slices of a union
            parts.append(union(f"coopgen_warp_storage_{lwt}_t",
                               {t for t, _, size in warp if size == lwt}))
            slices = max(n for _, n, size in warp if size == lwt)
            members.append((f"coopgen_warp_storage_{lwt}_t", f"{WARP_MEMBER}_{lwt}[{slices}]"))
        # coopgen.TempStorage objects: one member each, sized from its uses.
        uses = [s.temp_storage for s in shims if s.temp_storage]
        for symbol, obj in sorted({obj.symbol: obj for obj, _, _ in uses}.items()):
            mine = {(ctype, member) for o, ctype, member in uses if o.symbol == symbol}
            parts.append(definition(obj, sorted(mine, key=lambda m: m[1])))
            members.append((f"{symbol}_t", symbol))
        members += [(f"alignas({s.shared_array[1]}) unsigned char",
                     f"{s.symbol}[{s.shared_array[0]}]") for s in shims if s.shared_array]
        block = {s.block_storage for s in shims if s.block_storage}
        if block:  # as large and as aligned as the largest TempStorage of the translation unit
            parts.append(union("coopgen_block_storage_t", block))
            members.append(("coopgen_block_storage_t", BLOCK_MEMBER))
        if members:
            parts.append(storage_definition(members, **self._kernel_shared_memory()))
        return parts

    def _kernel_shared_memory(self) -> dict:
        """The kernel's other shared memory use (placement.storage_definition's keywords)."""
        return {"may_be_dynamic": False}

    def runs_once(self, site) -> bool:
        """Whether the call at ``site`` runs once per kernel (not round a loop)."""
        return False

    def may_precede(self, a, b) -> bool:
        """Whether the call at site ``a`` may run before the one at ``b``."""
        return True

    def _storage_barriers(self, shims) -> list[str]:
        """``coopgen_barrier_<symbol>``: a block-storage use waits for the block only if a use
        with a non-empty TempStorage (CUB's empty one has size 1) may have run before it, itself
        on an earlier loop trip included (sizes: the compiler's constexpr; order: the CFG's)."""
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

    #: Whether the backend must know the storage's dynamic requirement before linking: then
    #: ltoir() sets ``requirement`` ((bytes, alignment, after the user's bytes), or None when
    #: static); other backends read it from the linked cubin.
    requirement_before_link, requirement = False, None

    def ltoir(self) -> bytes:
        """The translation unit's LTO-IR, compiled on first use (when a linker reads it)."""
        with self._lock:
            if self._ltoir is None:
                source = self.source()
                ask = (placement.NEED_EXPRESSION,) if (
                    self.requirement_before_link and placement.NEED_SYMBOL in source) else ()
                self._ltoir, names = nvrtc.compile_naming(source, ask, arch=self.arch)
                self.requirement = placement.named_requirement(names[0]) if names else None
            return self._ltoir


@functools.cache
def canonical_includes() -> tuple[str, ...]:
    """Every bound class's header, in one fixed order: every translation unit starts with them,
    so one PCH serves every kernel (nvrtc._use_pch); unused ones cost nothing measurable, as
    they share their dependencies with the used ones."""
    pkg = registry.package()
    return tuple(sorted({c.header for c in pkg.CLASSES + getattr(pkg, "FUNCTIONS", ())}
                        | set(OPERATOR_HEADERS)
                        | set(TYPE_HEADERS)))
