"""coopgen's on-disk cache, one folder (:func:`root`) computed here only: ``ltoir/`` holds
compiled shims (keyed in ``codegen.nvrtc``), ``cccl/<version>/`` fetched CCCL headers
(``generator.headers``), ``models/`` their parses (``generator.pipeline``). ``COOPGEN_CACHE_DIR``,
``COOPGEN_DISABLE_CACHE=1`` and ``COOPGEN_CACHE_MAX_SIZE`` (default 512M, 0: no cap) are read on
every call. Failures are never fatal: an entry is framed (magic, length, sha256), so a damaged
one is a CacheWarning and a recompile; a read-only or full folder makes writes give up; writes
are atomic, so processes can share the folder. A hit sets the entry's mtime (access times are
often not kept), and writes evict the least recently used past the cap."""
import contextlib
import hashlib
import importlib.metadata
import os
import tempfile
import warnings
from pathlib import Path


def own_version() -> str:
    try:
        return importlib.metadata.version("coopgen")
    except importlib.metadata.PackageNotFoundError:  # imported from a source tree: no metadata
        return "0+unknown"


#: First bytes of every shim entry; the number changes if the framing does.
MAGIC = b"coopgen-shim-cache-1\n"
_LENGTH = 8  # bytes of the little-endian payload length, then 32 of its sha256
_HEADER = len(MAGIC) + _LENGTH + 32


class CacheWarning(UserWarning):
    """A cache entry was damaged and is being replaced."""


def root() -> Path:
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.environ.get("COOPGEN_CACHE_DIR") or Path(xdg) / "coopgen")


def shim_dir() -> Path | None:
    """The folder of compiled shims; None when COOPGEN_DISABLE_CACHE disables it."""
    disabled = os.environ.get("COOPGEN_DISABLE_CACHE", "") not in ("", "0")
    return None if disabled else root() / "ltoir"


def headers_dir() -> Path:
    return root() / "cccl"


def max_bytes() -> int:
    value = os.environ.get("COOPGEN_CACHE_MAX_SIZE", "512M").strip()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(value[-1:].upper())
    with contextlib.suppress(ValueError):
        size = int(float(value[:-1] if scale else value) * (scale or 1))
        if size >= 0:
            return size
    raise ValueError(f"COOPGEN_CACHE_MAX_SIZE={value!r}: give bytes or a size such as "
                     f"512M or 2G (0: no cap)")


def frame(data: bytes) -> bytes:
    return MAGIC + len(data).to_bytes(_LENGTH, "little") + hashlib.sha256(data).digest() + data


def unframe(raw: bytes) -> tuple[bytes | None, str]:
    """(payload, "") of a sound entry, else (None, what is wrong with it)."""
    if len(raw) < _HEADER:
        return None, f"{len(raw)} bytes, shorter than an entry's header"
    if not raw.startswith(MAGIC):
        return None, "not a coopgen cache entry (bad header)"
    length = int.from_bytes(raw[len(MAGIC):len(MAGIC) + _LENGTH], "little")
    payload = raw[_HEADER:]
    if len(payload) != length:
        return None, f"truncated: {len(payload)} of {length} bytes"
    if hashlib.sha256(payload).digest() != raw[len(MAGIC) + _LENGTH:_HEADER]:
        return None, "checksum mismatch (garbled)"
    return payload, ""


def read(path: Path) -> bytes | None:
    """The entry's payload; None when absent or (warned) damaged: the caller compiles again."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    data, problem = unframe(raw)
    if data is None:
        warnings.warn(f"coopgen: cache entry {path} is damaged ({problem}); compiling it "
                      f"again and replacing it", CacheWarning, stacklevel=3)
        return None
    with contextlib.suppress(OSError):
        os.utime(path)  # most recently used
    return data


def write(path: Path, data: bytes) -> None:
    """Store ``data`` atomically (a read-only or full folder: silently not), then evict the
    least recently used entries past the cap."""
    try:
        atomic_write(path, frame(data))
    except OSError:
        return
    cap = max_bytes()
    found = entries(path.parent) if cap else []
    total = sum(size for _, size, _ in found)
    for old, size, _ in found:
        if total <= cap:
            break
        if old != path:
            with contextlib.suppress(OSError):  # removed meanwhile, or a read-only folder
                old.unlink()
                total -= size


def atomic_write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)  # atomic on POSIX: readers see the old file or the new one
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def entries(folder: Path | None = None) -> list[tuple[Path, int, float]]:
    """(path, size, last use) of every shim entry (or parse), least recently used first."""
    found = []
    try:
        with os.scandir(folder if folder is not None else root() / "ltoir") as it:
            for e in it:
                if e.name.endswith((".ltoir", ".ptx", ".json")) and not e.name.startswith(".tmp-"):
                    with contextlib.suppress(OSError):  # removed meanwhile
                        st = e.stat()
                        found.append((Path(e.path), st.st_size, st.st_mtime))
    except OSError:
        return []
    return sorted(found, key=lambda t: (t[2], t[0].name))
