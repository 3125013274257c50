"""``coopgen lock-add VERSION``: a CCCL release added end to end.

Finds the ``nvidia-cuda-cccl`` wheel that ships the release on the package index, downloads it
(kept in the user cache's ``wheels/``), records its file name and sha256, digests its headers
and writes the lock entry. Entries after the first (the default) stay newest first, so the
lock's text depends only on which releases it holds. Nothing else names the entries: the
packaging discovers the generated packages, the docs nav, tests and CI read the lock.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from . import headers
from .headers import HeaderError, LockEntry

PACKAGE = "nvidia-cuda-cccl"


def version_key(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version))


def index_versions() -> list[str]:
    """The package index's versions of nvidia-cuda-cccl, newest first (pip's own listing)."""
    proc = subprocess.run([sys.executable, "-m", "pip", "index", "versions", PACKAGE],
                          capture_output=True, encoding="utf-8", errors="replace")
    m = re.search(r"Available versions:\s*(.+)", proc.stdout)
    if proc.returncode != 0 or not m:
        raise HeaderError(f"could not list {PACKAGE} versions on the package index:\n"
                          f"{(proc.stderr or proc.stdout)[-2000:]}")
    return sorted((v.strip() for v in m.group(1).split(",")), key=version_key, reverse=True)


def is_cccl_version(version: str) -> bool:
    """``3.4.3`` is a CCCL release; ``13.3.4.3.1`` or ``13.1.115`` an nvidia-cuda-cccl one."""
    return re.fullmatch(r"\d+\.\d+\.\d+", version) is not None and int(version.split(".")[0]) < 10


def wheel_candidates(cccl: str, available: list[str]) -> list[str]:
    """Wheel versions that may ship CCCL ``cccl``, likeliest first: 13.3.x wheels spell the
    release in their version (13.3.4.3.1 is CCCL 3.4.3); older ones ship CCCL 3.N in 13.N.*."""
    parts = cccl.split(".")
    spelled = [v for v in available if v.split(".")[1:4] == parts and len(v.split(".")) == 5]
    by_minor = [v for v in available if len(v.split(".")) == 3 and v.split(".")[1] == parts[1]]
    return spelled + by_minor


def find_release(version: str) -> tuple[LockEntry, Path]:
    """The lock entry of ``version`` (a CCCL or an nvidia-cuda-cccl version) and its include
    root, from wheels fetched into the cache; each candidate's headers say which CCCL it is."""
    if is_cccl_version(version):
        candidates = wheel_candidates(version, index_versions())
    else:
        candidates = [version]
    seen = []
    for wheel_version in candidates:
        wheel = next(headers.wheels_dir().glob(f"nvidia_cuda_cccl-{wheel_version}-*.whl"), None)
        wheel = wheel or headers.fetch_wheel(f"{PACKAGE}=={wheel_version}")
        root = headers.extract_headers(wheel, wheel_version)
        cccl = headers.cccl_version_of(root)
        seen.append(f"{wheel_version} (CCCL {cccl})")
        if cccl is None:
            raise HeaderError(f"{wheel.name}: no CCCL_VERSION in its headers")
        if is_cccl_version(version) and cccl != version:
            continue
        digest, count = headers.digest_headers(root)
        entry = LockEntry(cccl=cccl, wheel=f"{PACKAGE}=={wheel_version}", wheel_file=wheel.name,
                          wheel_sha256=headers.sha256_file(wheel), headers_digest=digest,
                          header_files=count)
        return entry, root
    raise HeaderError(f"no {PACKAGE} wheel on the package index ships CCCL {version}; tried "
                      f"{', '.join(seen) or 'none (no version of that series)'}")


def entry_text(entry: LockEntry) -> str:
    lines = ["[[entry]]", f'cccl = "{entry.cccl}"', f'wheel = "{entry.wheel}"',
             f'wheel_file = "{entry.wheel_file}"', f'wheel_sha256 = "{entry.wheel_sha256}"',
             f'headers_digest = "{entry.headers_digest}"', f"header_files = {entry.header_files}"]
    if entry.nvrtc_options:
        lines.append("nvrtc_options = [" + ", ".join(f'"{o}"' for o in entry.nvrtc_options)
                     + "]")
    return "\n".join(lines) + "\n"


def _split_lock(text: str) -> tuple[str, list[str]]:
    """(the comment block before the first entry, each entry's text)."""
    head, *blocks = re.split(r"(?m)^(?=\[\[entry\]\])", text)
    return head, [block.rstrip("\n") + "\n" for block in blocks]


def _block_cccl(block: str) -> str:
    return re.search(r'(?m)^cccl\s*=\s*"([^"]+)"', block).group(1)


def add_to_lock(path: Path, entry: LockEntry, *, default: bool) -> str:
    """Write ``entry`` into the lock at ``path``; returns what happened ("added", "unchanged",
    "made default"). An entry of the same release with other values is an error."""
    existing = {e.cccl: e for e in headers.load_lock(path)}
    old = existing.get(entry.cccl)
    if old is not None and (old.wheel, old.wheel_sha256, old.headers_digest) != (
            entry.wheel, entry.wheel_sha256, entry.headers_digest):
        raise HeaderError(f"{path}: entry CCCL {entry.cccl} is already there with "
                          f"{old.wheel} (sha256 {old.wheel_sha256[:12]}..., digest "
                          f"{old.headers_digest[:19]}...), not {entry.wheel} (sha256 "
                          f"{entry.wheel_sha256[:12]}..., digest {entry.headers_digest[:19]}...); "
                          f"remove it first to replace it")
    head, blocks = _split_lock(path.read_text(encoding="utf-8"))
    by_cccl = {_block_cccl(b): b for b in blocks}
    first = _block_cccl(blocks[0])
    if old is None:
        by_cccl[entry.cccl] = entry_text(entry)
    if default:
        first = entry.cccl
    rest = sorted((c for c in by_cccl if c != first), key=version_key, reverse=True)
    order = [first] + rest
    text = head + "\n".join(by_cccl[c] for c in order)
    what = "added" if old is None else "unchanged"
    if default and blocks and _block_cccl(blocks[0]) != entry.cccl:
        what += ", made default"
    if text != path.read_text(encoding="utf-8"):
        path.write_text(text, encoding="utf-8")
    headers.load_lock(path)  # what was written parses
    return what


def pin_default_wheel(pyproject: Path, entry: LockEntry) -> bool:
    """The build's pin of the default entry's wheel (whose headers it ships, setup.py) follows
    the lock's first entry."""
    text = pyproject.read_text(encoding="utf-8")
    new = re.sub(r'"nvidia-cuda-cccl==[^"]+"', f'"{entry.wheel}"', text)
    if new == text:
        return False
    pyproject.write_text(new, encoding="utf-8")
    return True


def nearest_entry(entry: LockEntry, entries: tuple[LockEntry, ...]) -> LockEntry | None:
    """The other lock entry closest in version to ``entry`` (the older one on a tie)."""
    others = [e for e in entries if e.cccl != entry.cccl]
    if not others:
        return None
    mine = version_key(entry.cccl)

    def distance(e: LockEntry):
        theirs = version_key(e.cccl)
        return (tuple(abs(a - b) for a, b in zip(mine, theirs)), theirs > mine)
    return min(others, key=distance)


def format_summary(changes: dict) -> str:
    """Overloads added, removed and changed against the nearest entry, one line each."""
    lines = [f"Against CCCL {changes['from']}:"]
    for key in ("overloads_added", "overloads_removed", "signatures_changed"):
        items = changes[key]
        lines.append(f"  {key.replace('_', ' ')}: {len(items)}")
        lines += [f"    {i}" for i in items]
    return "\n".join(lines)


def compile_check(root: Path, entry: LockEntry, arch: str) -> list[dict]:
    """Every bound overload of ``entry`` compiled and linked for ``arch`` (tools/compile_check,
    in a process of its own: the runtime picks its bindings at import); the failures."""
    import json
    import os

    env = dict(os.environ, COOPGEN_CCCL=entry.cccl)
    proc = subprocess.run([sys.executable, "-m", "tools.compile_check", "--arch", arch, "--json"],
                          cwd=root, env=env, capture_output=True, encoding="utf-8", errors="replace")
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        raise HeaderError(f"the compile check of CCCL {entry.cccl} did not finish:\n"
                          f"{proc.stderr[-3000:]}") from None
    print(f"CCCL {entry.cccl}: {report['checked']} overloads compiled and linked for {arch}")
    return report["failures"]
