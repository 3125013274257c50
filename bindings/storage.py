"""``coopgen.TempStorage``: temp storage several primitives share, sized from all its uses.

    ts = coopgen.TempStorage()                    # "shared": uses overlap, the largest wins
    ex = coopgen.TempStorage(sharing="exclusive")  # each use gets its own aligned slice

    @cuda.jit
    def k(...):
        block.load(src, items, temp_storage=ts)
        cuda.syncthreads()                         # as in CUB: before the storage is reused
        block.radix_sort_keys(items, temp_storage=ts)

The object is created on the host and referenced by kernels. While a kernel is lowered, each
primitive call that passes it records the TempStorage type it needs; the kernel's translation
unit then defines one ``__shared__`` object for it: a union of those types ("shared"), or a
struct with one member per call site ("exclusive"). ``size=``/``alignment=`` state what the
storage must fit in; a use that does not fit is a compile-time error.
"""
from __future__ import annotations

import hashlib
import itertools

from numba.cuda import types
from numba.cuda.datamodel.models import OpaqueModel
from numba.cuda.extending import register_model, typeof_impl
from numba.cuda.core.imputils import lower_constant

SHARING = ("shared", "exclusive")
_ids = itertools.count()


class TempStorage:
    def __init__(self, sharing: str = "shared", *, size: int | None = None,
                 alignment: int | None = None):
        if sharing not in SHARING:
            raise ValueError(f"coopgen.TempStorage: sharing={sharing!r}; allowed: "
                             f"{', '.join(map(repr, SHARING))}")
        if alignment is not None and (alignment <= 0 or alignment & (alignment - 1)):
            raise ValueError(f"coopgen.TempStorage: alignment={alignment} must be a power of two")
        self.sharing = sharing
        self.size = size
        self.alignment = alignment
        # A name for the kernel's __shared__ object: stable for this object's lifetime and
        # distinct between objects (so two TempStorage objects never alias).
        self.symbol = "coopgen_ts_" + hashlib.sha256(
            f"{next(_ids)}:{id(self)}".encode()).hexdigest()[:12]

    def __repr__(self):
        extra = "".join(f", {k}={v}" for k, v in (("size", self.size),
                                                  ("alignment", self.alignment)) if v)
        return f"coopgen.TempStorage({self.sharing!r}{extra})"


class TempStorageType(types.Opaque):
    def __init__(self, obj: TempStorage):
        self.obj = obj
        super().__init__(f"coopgen.TempStorage<{obj.symbol}>")

    @property
    def key(self):
        return self.obj.symbol


register_model(TempStorageType)(OpaqueModel)


@typeof_impl.register(TempStorage)
def _typeof(val, c):
    return TempStorageType(val)


@lower_constant(TempStorageType)
def _lower(context, builder, ty, pyval):
    return context.get_dummy_value()  # the storage is reached by name in the shims


def definition(obj: TempStorage, members: list[tuple[str, str]]) -> str:
    """The ``__shared__`` object for ``obj``: ``members`` are (C++ type, member name)."""
    kind = "union" if obj.sharing == "shared" else "struct"
    body = "".join(f"  {t} {n};\n" for t, n in members)
    # Static __shared__ data is limited to 48 KB per kernel.
    checks = (f"static_assert(sizeof({obj.symbol}_t) <= 48 * 1024, \"coopgen.TempStorage("
              f"'{obj.sharing}'): its uses need more than the 48 KB of static shared memory a "
              f"kernel may declare\");\n")
    if obj.size is not None:
        checks += (f"static_assert(sizeof({obj.symbol}_t) <= {obj.size}, \"coopgen.TempStorage("
                   f"size={obj.size}) is too small for its uses\");\n")
    if obj.alignment is not None:
        checks += (f"static_assert(alignof({obj.symbol}_t) <= {obj.alignment}, "
                   f"\"coopgen.TempStorage(alignment={obj.alignment}) is too weak for its "
                   f"uses\");\n")
    return (f"{kind} {obj.symbol}_t {{\n{body}}};\n{checks}"
            f"static __shared__ {obj.symbol}_t {obj.symbol};\n")


def kernel_temp_storage(*objects, sharing: str = "shared") -> tuple[int, int]:
    """(bytes, alignment) that two-phase primitives need together, before any launch:
    the largest of them ("shared") or all of them in aligned slices ("exclusive")."""
    if sharing not in SHARING:
        raise ValueError(f"kernel_temp_storage: sharing={sharing!r}; allowed: "
                         f"{', '.join(map(repr, SHARING))}")
    layouts = [(o.temp_storage_bytes, o.temp_storage_alignment) for o in objects]
    align = max((a for _, a in layouts), default=1)
    if sharing == "shared":
        return max((s for s, _ in layouts), default=0), align
    total = 0
    for size, a in layouts:
        total = -(-total // a) * a + size
    return -(-total // align) * align, align
