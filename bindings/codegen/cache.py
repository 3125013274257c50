"""coopgen's on-disk cache, one folder (:func:`root`) computed here only: ``ltoir/`` holds
compiled shim bundles (keyed in ``codegen.nvrtc``), ``cccl/<version>/`` the CCCL headers of lock
entries fetched on demand (``coopgen.generator.headers``). ``COOPGEN_CACHE_DIR``,
``COOPGEN_DISABLE_CACHE=1`` and ``COOPGEN_CACHE_MAX_SIZE`` (default 512M, 0: no cap) are read on
every call.

Failures are never fatal: an entry is framed (magic, length, sha256), so a damaged one is a
CacheWarning and a recompile; a read-only or full folder makes writes give up; writes are
atomic, so processes can share the folder. A hit sets the entry's mtime (access times are often
not kept), and writes evict the least recently used past the cap."""
from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import warnings
from pathlib import Path


def own_version() -> str:
    """coopgen's version, from its package metadata."""
    import importlib.metadata
    try:
        return importlib.metadata.version("coopgen")
    except importlib.metadata.PackageNotFoundError:  # imported from a source tree: no metadata
        return "0+unknown"


#: First bytes of every shim entry; the number changes if the framing does.
MAGIC = b"coopgen-shim-cache-1\n"
_LENGTH = 8  # bytes of the little-endian payload length
_DIGEST = 32  # bytes of the payload's sha256
_HEADER = len(MAGIC) + _LENGTH + _DIGEST
#: Suffixes of shim entries (what eviction and ``coopgen cache clear`` touch).
SUFFIXES = (".ltoir", ".ptx")
DEFAULT_MAX = "512M"


class CacheWarning(UserWarning):
    """A cache entry was damaged and is being replaced."""


def root() -> Path:
    override = os.environ.get("COOPGEN_CACHE_DIR")
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "coopgen"


def disabled() -> bool:
    return os.environ.get("COOPGEN_DISABLE_CACHE", "") not in ("", "0")


def shim_dir() -> Path | None:
    return None if disabled() else root() / "ltoir"


def headers_dir() -> Path:
    return root() / "cccl"


def max_bytes() -> int:
    value = os.environ.get("COOPGEN_CACHE_MAX_SIZE", DEFAULT_MAX).strip()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(value[-1:].upper())
    try:
        size = int(float(value[:-1] if scale else value) * (scale or 1))
        if size >= 0:
            return size
    except ValueError:
        pass
    raise ValueError(f"COOPGEN_CACHE_MAX_SIZE={value!r}: give bytes or a size such as "
                     f"512M or 2G (0: no cap)")


def frame(data: bytes) -> bytes:
    """An entry's bytes on disk: magic, payload length, payload sha256, payload."""
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
    """Store ``data`` atomically (a read-only or full folder: silently not), then evict."""
    try:
        atomic_write(path, frame(data))
    except OSError:
        return
    evict(path.parent, keep=path)


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
    """(path, size, last use) of every shim entry, least recently used first."""
    folder = folder if folder is not None else root() / "ltoir"
    found = []
    try:
        with os.scandir(folder) as it:
            for e in it:
                if e.name.endswith(SUFFIXES) and not e.name.startswith(".tmp-"):
                    try:
                        st = e.stat()
                    except OSError:  # removed meanwhile
                        continue
                    found.append((Path(e.path), st.st_size, st.st_mtime))
    except OSError:
        return []
    found.sort(key=lambda t: (t[2], t[0].name))
    return found


def _remove(path: Path) -> bool:
    try:
        path.unlink()
        return True
    except OSError:  # removed meanwhile, or a read-only folder
        return False


def evict(folder: Path | None = None, keep: Path | None = None) -> int:
    """Remove least recently used entries until the folder fits the cap; returns how many."""
    cap = max_bytes()
    found = entries(folder) if cap else []
    total, removed = sum(size for _, size, _ in found), 0
    for path, size, _ in found:
        if total <= cap:
            break
        if path != keep and _remove(path):
            total, removed = total - size, removed + 1
    return removed


def usage() -> dict:
    """What ``coopgen cache`` shows."""
    shims = entries()
    hdir = headers_dir()
    fetched = [(d.name, _tree_bytes(d)) for d in sorted(hdir.iterdir()) if d.is_dir()] \
        if hdir.is_dir() else []
    return {"root": root(), "shim_dir": root() / "ltoir", "disabled": disabled(),
            "entries": len(shims), "bytes": sum(size for _, size, _ in shims),
            "max_bytes": max_bytes(), "headers": fetched}


def _tree_bytes(d: Path) -> int:
    total = 0
    for f in d.rglob("*"):
        with contextlib.suppress(OSError):  # removed meanwhile
            total += f.stat().st_size if f.is_file() else 0
    return total


def clear(*, headers: bool = False) -> tuple[int, int]:
    """Remove every shim entry (and the fetched headers); (entries removed, bytes freed)."""
    sizes = [size for path, size, _ in entries() if _remove(path)]
    freed = sum(sizes)
    if headers and headers_dir().is_dir():
        freed += _tree_bytes(headers_dir())
        shutil.rmtree(headers_dir(), ignore_errors=True)
    return len(sizes), freed
