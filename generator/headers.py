"""Lock entries and header location: which CUB headers a model (and a binding) is built from.

This module never imports libclang, so the runtime can use it to find the NVRTC include
directory of the lock entry its bindings were generated from.

Where headers come from, in order (each checked against the lock):

1. shipped with coopgen: the build copies the default entry's headers into the package
   (``coopgen/_cccl/<cccl>/``, see setup.py), so an installed coopgen compiles with no network
   and pins no ``nvidia-cuda-cccl`` version that would fight the CUDA toolkit's own;
2. the installed ``nvidia-cuda-cccl`` wheel, when it is the entry's version;
3. the entry's wheel fetched once into coopgen's cache folder (``<cache>/cccl/<version>/``);
4. a CUDA toolkit whose headers match the entry's digest;
5. else (unless ``COOPGEN_NO_DOWNLOAD`` is set) the entry's wheel is downloaded with pip into
   the cache, its sha256 checked against the lock.

It imports nothing of coopgen but the cache's folder (lazily), so setup.py can load it alone.
"""
from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10
    import tomli as tomllib

#: Subtrees of the CCCL include root that the parse reads (CUB includes libcu++, nv/ and thrust/).
DIGESTED_TREES = ("cub", "cuda", "nv", "thrust")
#: Where a CCCL include root sits inside the nvidia-cuda-cccl wheel.
WHEEL_INCLUDE_DIR = "nvidia/cu13/include/cccl"
LOCK_FILENAME = "cub_headers.lock"
#: The folder of coopgen's package holding shipped header sets, one per CCCL version.
SHIPPED_DIR = "_cccl"
#: The file in a shipped header set holding the lock digest it was verified against at build time.
SHIPPED_DIGEST_FILE = "DIGEST"


class HeaderError(RuntimeError):
    """The headers of a lock entry are missing or do not match the lock."""


@dataclass(frozen=True)
class LockEntry:
    cccl: str
    wheel: str  # a pip requirement, "nvidia-cuda-cccl==X"
    wheel_file: str
    wheel_sha256: str
    headers_digest: str
    header_files: int
    # Extra NVRTC options this release's headers need (e.g. -default-device), with why.
    nvrtc_options: tuple = ()

    @property
    def wheel_version(self) -> str:
        return self.wheel.split("==", 1)[1]

    @property
    def tag(self) -> str:
        """Identifier-safe version tag, e.g. ``cccl_3_0_1``."""
        return "cccl_" + self.cccl.replace(".", "_")


def checkout_root() -> Path | None:
    """The coopgen checkout (a folder holding the lock and generator/): the current directory
    when it is one, else the checkout this module was imported from (an editable install), else
    None (an installed package)."""
    for root in (Path.cwd(), Path(__file__).resolve().parent.parent):
        if (root / LOCK_FILENAME).is_file() and (root / "generator").is_dir():
            return root
    return None


def packaged_lock_path() -> Path:
    """The copy of the lock that ``coopgen generate`` writes into the bindings package, so an
    installed coopgen knows its lock entries without a checkout."""
    import importlib.util

    spec = importlib.util.find_spec("coopgen._generated")
    return Path(spec.origin).parent / LOCK_FILENAME


def lock_path() -> Path:
    """COOPGEN_LOCK, else the checkout's lock, else the lock packaged with the bindings."""
    env = os.environ.get("COOPGEN_LOCK")
    if env:
        return Path(env)
    root = checkout_root()
    return root / LOCK_FILENAME if root is not None else packaged_lock_path()


#: What each lock entry field must hold, as a maintainer reads it in an error.
_FIELD_RULES = {
    "cccl": (re.compile(r"\d+\.\d+\.\d+"), "a CCCL version such as \"3.5.0\""),
    "wheel": (re.compile(r"nvidia-cuda-cccl==[\w.]+"), "\"nvidia-cuda-cccl==VERSION\""),
    "wheel_file": (re.compile(r"nvidia_cuda_cccl-[\w.]+-py3-none-[\w.]+\.whl"),
                   "the wheel's file name, \"nvidia_cuda_cccl-VERSION-py3-none-PLATFORM.whl\""),
    "wheel_sha256": (re.compile(r"[0-9a-f]{64}"), "64 lower-case hex digits"),
    "headers_digest": (re.compile(r"sha256:[0-9a-f]{64}"),
                       "\"sha256:\" and 64 lower-case hex digits (coopgen lock-digest prints it)"),
}


def _entry_error(path: Path, index: int, raw: dict, field: str, problem: str) -> HeaderError:
    name = f"CCCL {raw['cccl']}" if isinstance(raw.get("cccl"), str) else f"number {index + 1}"
    return HeaderError(f"{path}: entry {name}, field {field}: {problem}")


def parse_entry(path: Path, index: int, raw: dict) -> LockEntry:
    """One ``[[entry]]`` table, checked field by field: a malformed entry is one error naming
    the entry and the field."""
    fields = LockEntry.__dataclass_fields__
    for key in raw:
        if key not in fields:
            raise _entry_error(path, index, raw, key, f"unknown field; fields are "
                                                      f"{', '.join(fields)}")
    for key, f in fields.items():
        if key not in raw and f.default is dataclasses.MISSING:
            raise _entry_error(path, index, raw, key, "missing")
    for key, (pattern, allowed) in _FIELD_RULES.items():
        value = raw[key]
        if not isinstance(value, str) or not pattern.fullmatch(value):
            raise _entry_error(path, index, raw, key, f"{value!r} is not {allowed}")
    count = raw["header_files"]
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise _entry_error(path, index, raw, "header_files",
                           f"{count!r} is not a positive integer")
    options = raw.get("nvrtc_options", [])
    if not isinstance(options, list) or not all(isinstance(o, str) for o in options):
        raise _entry_error(path, index, raw, "nvrtc_options",
                           f"{options!r} is not a list of strings")
    entry = LockEntry(**dict(raw, nvrtc_options=tuple(options)))
    if f"-{entry.wheel_version}-" not in entry.wheel_file:
        raise _entry_error(path, index, raw, "wheel_file", f"{entry.wheel_file!r} is not a file "
                           f"of {entry.wheel} (its version is not in the name)")
    return entry


def load_lock(path: Path | None = None) -> tuple[LockEntry, ...]:
    path = path or lock_path()
    if not path.is_file():
        raise HeaderError(f"{path}: lock file not found (set COOPGEN_LOCK to a lock file, or "
                          f"reinstall coopgen: its package ships one)")
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise HeaderError(f"{path}: not valid TOML: {e}") from None
    unknown = sorted(set(data) - {"entry"})
    if unknown:
        raise HeaderError(f"{path}: unknown table {unknown[0]!r}; the lock holds [[entry]] "
                          f"tables only")
    entries = [parse_entry(path, i, raw) for i, raw in enumerate(data.get("entry", []))]
    if not entries:
        raise HeaderError(f"{path}: no [[entry]] tables")
    seen = set()
    for i, e in enumerate(entries):
        if e.cccl in seen:
            raise HeaderError(f"{path}: entry CCCL {e.cccl}, field cccl: a second entry for the "
                              f"same release; keep one")
        seen.add(e.cccl)
    return tuple(entries)


def find_entry(cccl: str | None, entries: tuple[LockEntry, ...] | None = None) -> LockEntry:
    entries = entries or load_lock()
    if cccl is None:
        return entries[0]
    for e in entries:
        if e.cccl == cccl:
            return e
    raise HeaderError(f"CCCL {cccl!r} is not in the lock; known: {', '.join(e.cccl for e in entries)}")


def cccl_version_of(include_root: Path) -> str | None:
    """The CCCL release a header tree says it is (``CCCL_VERSION`` in libcu++'s version.h)."""
    header = include_root / "cuda" / "std" / "__cccl" / "version.h"
    if not header.is_file():
        return None
    m = re.search(r"#define\s+CCCL_VERSION\s+(\d+)", header.read_text(encoding="utf-8"))
    if not m:
        return None
    n = int(m.group(1))
    return f"{n // 1000000}.{n // 1000 % 1000}.{n % 1000}"


def digest_headers(include_root: Path) -> tuple[str, int]:
    """sha256 over the digested trees: one "path\\0sha256\\n" line per file, sorted by path.

    A folder without CUB's headers is refused: its digest would lock nothing."""
    if not (include_root / "cub" / "block").is_dir():
        raise HeaderError(f"{include_root}: no CUB headers here (no cub/block/ folder); give a "
                          f"CCCL include root, the folder holding cub/, cuda/, nv/ and thrust/ "
                          f"(in the nvidia-cuda-cccl wheel: {WHEEL_INCLUDE_DIR})")
    lines = []
    root = str(include_root)
    for tree in DIGESTED_TREES:
        if not os.path.isdir(os.path.join(root, tree)):
            continue
        # plain strings: a Path per file costs more than hashing it
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, tree)):
            dirnames.sort()
            rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
            for name in filenames:
                with open(os.path.join(dirpath, name), "rb") as f:
                    lines.append(f"{rel}/{name}\0{hashlib.sha256(f.read()).hexdigest()}\n")
    lines.sort()
    h = hashlib.sha256("".join(lines).encode())
    return "sha256:" + h.hexdigest(), len(lines)


@dataclass(frozen=True)
class LocatedHeaders:
    entry: LockEntry
    include_root: Path
    source: str  # "installed wheel", "cached wheel", "CUDA toolkit"


def shipped_folder(entry: LockEntry, package_dir: Path | None = None) -> Path | None:
    """Where the build put the entry's headers inside coopgen's package, if it did."""
    if package_dir is None:
        import importlib.util
        spec = importlib.util.find_spec("coopgen")
        if spec is None or not spec.submodule_search_locations:
            return None
        package_dir = Path(list(spec.submodule_search_locations)[0])
    root = package_dir / SHIPPED_DIR / entry.cccl
    return root if root.is_dir() else None


def shipped_root(entry: LockEntry, package_dir: Path | None = None) -> Path | None:
    """The entry's headers shipped inside coopgen's package, when the build recorded the
    entry's digest beside them (it checked them then; ``coopgen doctor`` hashes them again)."""
    root = shipped_folder(entry, package_dir)
    try:
        recorded = (root / SHIPPED_DIGEST_FILE).read_text(encoding="utf-8").strip() if root else None
    except OSError:
        return None
    return root if recorded == entry.headers_digest else None


def installed_wheel_root(entry: LockEntry) -> Path | None:
    """The entry's headers installed with coopgen (shipped in its package), else those of the
    installed nvidia-cuda-cccl wheel when it is the entry's version."""
    return shipped_root(entry) or wheel_root(entry)


def wheel_root(entry: LockEntry) -> Path | None:
    """The include root of the installed nvidia-cuda-cccl wheel when it is the entry's version."""
    try:
        dist = importlib.metadata.distribution("nvidia-cuda-cccl")
    except importlib.metadata.PackageNotFoundError:
        return None
    if dist.version != entry.wheel_version:
        return None
    root = Path(dist.locate_file(WHEEL_INCLUDE_DIR))
    return root if root.is_dir() else None


def cache_dir() -> Path:
    """coopgen's cache folder (``coopgen.codegen.cache`` computes it)."""
    from coopgen.codegen import cache
    return cache.root()


def _cached_wheel_root(entry: LockEntry) -> Path:
    return cache_dir() / "cccl" / entry.wheel_version / WHEEL_INCLUDE_DIR


def _toolkit_roots() -> list[Path]:
    homes = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH")] + ["/usr/local/cuda"]
    roots = []
    for home in homes:
        if home:
            root = Path(home) / "include" / "cccl"
            if root.is_dir() and root not in roots:
                roots.append(root)
    return roots


def wheels_dir() -> Path:
    """Downloaded nvidia-cuda-cccl wheels, kept as files: a machine without network access
    finds a lock entry's headers from its wheel placed here."""
    return cache_dir() / "wheels"


def fetch_wheel(requirement: str) -> Path:
    """Download the manylinux x86_64 wheel of ``requirement`` ("nvidia-cuda-cccl==V") into
    :func:`wheels_dir` with pip, and return its path."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--platform", "manylinux2014_x86_64", "-d", tmp, requirement]
        proc = subprocess.run(cmd, capture_output=True, encoding="utf-8", errors="replace")
        found = sorted(Path(tmp).glob("*.whl"))
        if proc.returncode != 0 or len(found) != 1:
            raise HeaderError(f"could not download {requirement}:\n{proc.stderr[-2000:]}")
        wheels_dir().mkdir(parents=True, exist_ok=True)
        target = wheels_dir() / found[0].name
        os.replace(shutil.copy(found[0], wheels_dir() / (found[0].name + ".part")), target)
    return target


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def extract_headers(wheel: Path, wheel_version: str) -> Path:
    """The wheel's CCCL include tree, extracted once into the user cache; its include root."""
    final = cache_dir() / "cccl" / wheel_version
    if not final.is_dir():
        cache_dir().mkdir(parents=True, exist_ok=True)
        stage = Path(tempfile.mkdtemp(dir=cache_dir()))
        with zipfile.ZipFile(wheel) as zf:
            members = [m for m in zf.namelist() if m.startswith(WHEEL_INCLUDE_DIR + "/")]
            if not members:
                shutil.rmtree(stage)
                raise HeaderError(f"{wheel.name}: no {WHEEL_INCLUDE_DIR}/ in this wheel")
            zf.extractall(stage, members)
        final.parent.mkdir(parents=True, exist_ok=True)
        if final.exists():  # another process won the race
            shutil.rmtree(stage)
        else:
            os.replace(stage, final)
    return final / WHEEL_INCLUDE_DIR


def download_wheel(entry: LockEntry, *, download: bool = True) -> Path:
    """The entry's headers from its wheel: the file in :func:`wheels_dir`, else downloaded
    there once (when ``download``); its sha256 is checked against the lock before extracting."""
    target = _cached_wheel_root(entry)
    if target.is_dir():
        return target
    wheel = wheels_dir() / entry.wheel_file
    if not wheel.is_file():
        if not download:
            raise HeaderError(f"{wheel}: not there, and downloading is off")
        wheel = fetch_wheel(entry.wheel)
        if wheel.name != entry.wheel_file:
            raise HeaderError(f"lock entry CCCL {entry.cccl}, field wheel_file: pip gave "
                              f"{wheel.name}, the lock says {entry.wheel_file}")
    sha = sha256_file(wheel)
    if sha != entry.wheel_sha256:
        raise HeaderError(f"lock entry CCCL {entry.cccl}, field wheel_sha256: {wheel} has "
                          f"sha256 {sha}, the lock says {entry.wheel_sha256}; refusing it")
    return extract_headers(wheel, entry.wheel_version)


def locate(entry: LockEntry, *, download: bool = True, verify: bool = True) -> LocatedHeaders:
    """Find headers matching ``entry``: installed wheel, cached wheel, toolkit, then download.

    Every candidate is checked against the lock's digest; one that differs is refused.
    """
    candidates: list[tuple[str, Path]] = []
    root = shipped_folder(entry) if verify else shipped_root(entry)
    if root:
        candidates.append(("shipped with coopgen", root))
    root = wheel_root(entry)
    if root:
        candidates.append(("installed wheel", root))
    if _cached_wheel_root(entry).is_dir():
        candidates.append(("cached wheel", _cached_wheel_root(entry)))
    candidates += [("CUDA toolkit", r) for r in _toolkit_roots()]
    refused = []
    for source, root in candidates:
        if not verify:
            return LocatedHeaders(entry, root, source)
        try:
            digest, count = digest_headers(root)
        except HeaderError as e:
            refused.append(f"  {source} at {root}: {str(e).split(': ', 1)[1]}")
            continue
        if digest == entry.headers_digest:
            return LocatedHeaders(entry, root, source)
        refused.append(f"  {source} at {root}: digest {digest} ({count} files)")
    download = download and not os.environ.get("COOPGEN_NO_DOWNLOAD")
    if download or (wheels_dir() / entry.wheel_file).is_file():
        root = download_wheel(entry, download=download)
        digest, count = digest_headers(root)
        if digest == entry.headers_digest:
            return LocatedHeaders(entry, root, "cached wheel")
        refused.append(f"  cached wheel at {root}: digest {digest} ({count} files)")
    lines = [f"no headers match lock entry CCCL {entry.cccl} (digest {entry.headers_digest})."]
    if refused:
        lines.append("Refused (headers differ from the lock):")
        lines += refused
    lines.append(f"Fix: let coopgen download {entry.wheel} into its cache (with a network, "
                 f"COOPGEN_NO_DOWNLOAD unset), or place {entry.wheel_file} in {wheels_dir()}, "
                 f"or reinstall coopgen (its package ships the default entry's headers), or "
                 f"delete altered files under {cache_dir() / 'cccl'}.")
    raise HeaderError("\n".join(lines))
