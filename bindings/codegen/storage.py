"""``coopgen.TempStorage``: temp storage several primitives share, sized from all its uses.

    ts = coopgen.TempStorage()                    # "shared": uses overlap, the largest wins
    ex = coopgen.TempStorage(sharing="exclusive")  # each use gets its own aligned slice

Made on the host or in the kernel (``coop.TempStorage(...)``). Each call passing it records the
TempStorage type it needs; the kernel's translation unit defines one ``__shared__`` union of
them ("shared") or struct of one member per call site ("exclusive", in call order). Given
``size=``, it holds that many bytes, as cuda.coop's ``TempStorage(size_in_bytes)`` does (past
48 KB, in dynamic shared memory); a use that does not fit ``size=``/``alignment=`` is a
compile-time error."""
import hashlib
import itertools

from .shims import STORAGE, Shim


SHARING = ("shared", "exclusive")
_ids = itertools.count()


class TempStorage:
    """``auto_sync``: a "shared" storage waits (``__syncthreads()``) before each use, so a use
    never overwrites what the previous one still reads; False leaves that to the kernel, as in
    CUB. Exclusive slices never overlap, so they need no barrier."""

    def __init__(self, sharing: str = "shared", *, size: int | None = None,
                 alignment: int | None = None, auto_sync: bool | None = None):
        sharing = sharing.strip().lower() if isinstance(sharing, str) else sharing
        if sharing not in SHARING:
            raise ValueError(f"coopgen.TempStorage: sharing must be 'shared' or 'exclusive', "
                             f"got sharing={sharing!r}")
        if size is not None and (not isinstance(size, int) or size < 1):
            raise ValueError(f"coopgen.TempStorage: size_in_bytes={size!r} must be a positive int")
        if alignment is not None and (not isinstance(alignment, int) or alignment <= 0
                                      or alignment & (alignment - 1)):
            raise ValueError(f"coopgen.TempStorage: alignment={alignment} must be a power of two")
        if sharing == "exclusive" and auto_sync:
            raise ValueError("coopgen.TempStorage: sharing='exclusive' takes no auto_sync=True "
                             "(it needs sharing='shared'): exclusive slices never overlap, so "
                             "there is nothing to wait for")
        self.sharing, self.size, self.alignment = sharing, size, alignment
        self.auto_sync = sharing == "shared" if auto_sync is None else bool(auto_sync)
        # A name for the kernel's __shared__ object: stable for this object's lifetime and
        # distinct between objects (so two TempStorage objects never alias).
        self.symbol = "coopgen_ts_" + hashlib.sha256(
            f"{next(_ids)}:{id(self)}".encode()).hexdigest()[:12]

    def __repr__(self):
        extra = "".join(f", {k}={v}" for k, v in (("size", self.size),
                                                  ("alignment", self.alignment)) if v)
        sync = "" if self.auto_sync == (self.sharing == "shared") else \
            f", auto_sync={self.auto_sync}"
        return f"coopgen.TempStorage({self.sharing!r}{extra}{sync})"

    #: Called inside a kernel with constant arguments, it is made on the host (coopgen.rewrite).
    _coopgen_host_call = True

    def reserve(self, count, dtype, alignment=None):
        """cuda.coop's caller array in this storage: inside a kernel, ``count`` items of
        ``dtype`` in shared memory, as cuda.coop lays them out: a "shared" storage's
        reservations and its primitives' scratch share its bytes (each from its start: the
        storage holds the largest), an "exclusive" storage gives each its own slice. Each call
        site is one array, the same on every trip round a loop."""
        raise NotImplementedError("TempStorage.reserve can only be called inside a kernel")

    reserve._coopgen_shared_array = True  # the rewrite makes it a reserved array (reservation)


def reservation(obj: TempStorage, nbytes: int, alignment: int, index: int):
    """The shim of ``obj.reserve(...)`` of ``nbytes`` bytes (``index``: its use of ``obj``,
    an exclusive storage's slice order): a member of the storage's type and an accessor
    returning its address."""
    h = hashlib.sha256(repr((obj.symbol, index, nbytes, alignment)).encode()).hexdigest()[:12]
    symbol, member = f"coopgen_reserve_{h}", f"r_{h}_{index}"
    return Shim(symbol, f"COOPGEN_SHIM void* {symbol}()\n{{\n  return {STORAGE}."
                        f"{obj.symbol}.{member};\n}}",
                temp_storage=(obj, f"alignas({alignment}) unsigned char", f"{member}[{nbytes}]"))


def definition(obj: TempStorage, members: list[tuple[str, str]]) -> str:
    """The C++ type ``<symbol>_t`` of ``obj``'s storage, of ``members`` (C++ type, member name;
    an exclusive storage's end in ``_<call index>``), a member of the kernel's storage struct."""
    if obj.sharing == "exclusive":  # slices in call order, as a user adding them up lays them
        members = sorted(members, key=lambda m: int(m[1].split("[")[0].rsplit("_", 1)[1]))
    body = "".join(f"  {t} {n};\n" for t, n in members)
    name = f"{obj.symbol}_t"
    align = f"alignas({obj.alignment}) " if obj.alignment else ""
    if obj.size is None:
        text = f"{'union' if obj.sharing == 'shared' else 'struct'} {name} {{\n{body}}};\n"
    elif obj.sharing == "shared":  # it holds size_in_bytes, its uses overlaid on them
        text = (f"union {name} {{\n{body}  {align}unsigned char coopgen_reserved"
                f"[{obj.size}];\n}};\n")
    else:  # its uses in call order as a base, then the rest (NVRTC 12: no anonymous structs)
        rest = f"{obj.size} > sizeof({name}_uses) ? {obj.size} - sizeof({name}_uses) : 1"
        text = (f"struct {name}_uses {{\n{body}}};\nstruct {align}{name} : {name}_uses {{\n"
                f"  unsigned char coopgen_reserved[{rest}];\n}};\n")
    if obj.size is not None:
        text += (f"static_assert(sizeof({name}) <= ({obj.size} + alignof({name}) - 1) / "
                 f"alignof({name}) * alignof({name}), \"coopgen.TempStorage: size_in_bytes is "
                 f"smaller than required: size_in_bytes={obj.size} is too small for its uses\");\n")
    if obj.alignment is not None:
        text += (f"static_assert(alignof({name}) <= {obj.alignment}, \"coopgen.TempStorage: "
                 f"alignment is smaller than required: alignment={obj.alignment} is too weak "
                 f"for its uses\");\n")
    return text
