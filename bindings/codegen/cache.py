"""coopgen's on-disk cache: one folder, computed here and nowhere else.

Layout under :func:`root`:

* ``ltoir/<key>.ltoir``, ``ltoir/<key>.ptx`` -- compiled shim bundles (NVRTC's output), keyed
  by source, options, architecture, toolchain and coopgen version (see ``coopgen.nvrtc``);
* ``cccl/<wheel version>/`` -- CCCL headers of lock entries fetched on demand (the default
  entry's ship inside coopgen's package; see ``coopgen.generator.headers``).

Environment (read on every call, so tests can set them):

* ``COOPGEN_CACHE_DIR`` -- the root (default ``$XDG_CACHE_HOME/coopgen``, i.e.
  ``~/.cache/coopgen``);
* ``COOPGEN_DISABLE_CACHE=1`` -- never read or write compiled shims (fetched headers still
  live under the root);
* ``COOPGEN_CACHE_MAX_SIZE`` -- cap of the compiled shims, in bytes or with a ``K``/``M``/``G``
  suffix (default ``512M``; ``0``: no cap). Past it, the least recently used entries go.

Failure modes, by design never fatal:

* every entry is framed: a magic line, the payload's length and its sha256. :func:`read`
  checks all three; a truncated, garbled or foreign file is reported with a
  :class:`CacheWarning` naming it, the caller compiles again and :func:`write` replaces it;
* a read-only or full cache folder makes :func:`write` give up silently: the compile still
  returns its code;
* processes share the folder: writes are atomic (a temporary file renamed into place), and an
  entry evicted under a reader is a miss.

Least recently used: a hit sets the entry's modification time to now (access times are often
not kept), and :func:`write` evicts the oldest entries until the total fits the cap.

Imports nothing of numba.
"""
from __future__ import annotations

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

__all__ = ["CacheWarning", "root", "shim_dir", "max_bytes", "read", "write", "entries",
           "usage", "clear", "evict", "atomic_write"]

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
    """The cache folder: ``COOPGEN_CACHE_DIR``, else ``$XDG_CACHE_HOME/coopgen``, else
    ``~/.cache/coopgen``."""
    override = os.environ.get("COOPGEN_CACHE_DIR")
    if override:
        return Path(override)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "coopgen"


def disabled() -> bool:
    return os.environ.get("COOPGEN_DISABLE_CACHE", "") not in ("", "0")


def shim_dir() -> Path | None:
    """Where compiled shims live, or None when ``COOPGEN_DISABLE_CACHE`` is set."""
    return None if disabled() else root() / "ltoir"


def headers_dir() -> Path:
    """Where CCCL headers fetched on demand live (one folder per nvidia-cuda-cccl version)."""
    return root() / "cccl"


def max_bytes() -> int:
    """The cap of the compiled shims in bytes (0: none), from ``COOPGEN_CACHE_MAX_SIZE``."""
    value = os.environ.get("COOPGEN_CACHE_MAX_SIZE", DEFAULT_MAX).strip()
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    try:
        scale = units.get(value[-1:].upper(), 1)
        number = value[:-1] if value[-1:].upper() in units else value
        size = int(float(number) * scale)
        if size < 0:
            raise ValueError(value)
        return size
    except ValueError:
        raise ValueError(f"COOPGEN_CACHE_MAX_SIZE={value!r}: give bytes or a size such as "
                         f"512M or 2G (0: no cap)") from None


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
    """The payload of the entry at ``path``; None when absent, or (with a warning naming the
    file) when damaged, so that the caller compiles it again."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    data, problem = unframe(raw)
    if data is None:
        warnings.warn(f"coopgen: cache entry {path} is damaged ({problem}); compiling it "
                      f"again and replacing it", CacheWarning, stacklevel=3)
        return None
    try:
        os.utime(path)  # most recently used
    except OSError:
        pass
    return data


def write(path: Path, data: bytes) -> None:
    """Store ``data`` at ``path`` atomically, then keep the folder within its cap. Errors of a
    read-only or full folder are swallowed."""
    try:
        atomic_write(path, frame(data))
    except OSError:
        return
    evict(path.parent, keep=path)


def atomic_write(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)  # atomic on POSIX: readers see the old file or the new one
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
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


def evict(folder: Path | None = None, keep: Path | None = None) -> int:
    """Remove least recently used entries until the folder fits the cap; returns how many."""
    cap = max_bytes()
    if cap == 0:
        return 0
    found = entries(folder)
    total = sum(size for _, size, _ in found)
    removed = 0
    for path, size, _ in found:
        if total <= cap:
            break
        if keep is not None and path == keep:
            continue
        try:
            path.unlink()
        except OSError:
            continue
        total -= size
        removed += 1
    return removed


def usage() -> dict:
    """What ``coopgen cache`` shows: the folders, the shim entries' count and bytes, the cap,
    and the fetched header sets."""
    shims = entries()
    fetched = []
    hdir = headers_dir()
    if hdir.is_dir():
        for d in sorted(hdir.iterdir()):
            if d.is_dir():
                fetched.append((d.name, _tree_bytes(d)))
    return {"root": root(), "shim_dir": root() / "ltoir", "disabled": disabled(),
            "entries": len(shims), "bytes": sum(size for _, size, _ in shims),
            "max_bytes": max_bytes(), "headers": fetched}


def _tree_bytes(d: Path) -> int:
    total = 0
    for dirpath, _, filenames in os.walk(d):
        for name in filenames:
            try:
                total += os.path.getsize(os.path.join(dirpath, name))
            except OSError:
                pass
    return total


def clear(*, headers: bool = False) -> tuple[int, int]:
    """Remove every shim entry (and, with ``headers``, the fetched CCCL headers); returns
    (entries removed, bytes freed)."""
    removed = freed = 0
    for path, size, _ in entries():
        try:
            path.unlink()
        except OSError:
            continue
        removed += 1
        freed += size
    if headers and headers_dir().is_dir():
        freed += _tree_bytes(headers_dir())
        shutil.rmtree(headers_dir(), ignore_errors=True)
    return removed, freed
