"""All generator file I/O: the model JSON, the emitted binding modules and the API reference."""
from __future__ import annotations

from pathlib import Path

from .headers import LockEntry
from .model import ApiModel, to_json


def _write_if_changed(path: Path, text: str, written: list[Path]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text(encoding="utf-8") != text:
        path.write_text(text, encoding="utf-8")
    written.append(path)


def write_outputs(entry: LockEntry, model: ApiModel, out_dir: Path) -> list[Path]:
    """Write ``<out_dir>/<tag>/cub_api.json`` and every emitted module; remove stale modules."""
    from .emit import emit_package
    from .emit_docs import emit_docstrings

    written: list[Path] = []
    pkg = out_dir / entry.tag
    _write_if_changed(pkg / "cub_api.json", to_json(model), written)
    files = emit_package(entry, model) + [("docstrings.py", emit_docstrings(entry, model))]
    for name, text in files:
        _write_if_changed(pkg / name, text, written)
    keep = {p.resolve() for p in written}
    for stale in pkg.glob("*.py"):
        if stale.resolve() not in keep:
            stale.unlink()
    top = out_dir / "__init__.py"
    _write_if_changed(top, '"""Generated bindings, one subpackage per lock entry. Do not edit."""\n',
                      written)
    return written


def write_docs(entry: LockEntry, model: ApiModel, docs_dir: Path,
               entries: tuple[LockEntry, ...]) -> list[Path]:
    """Write ``<docs_dir>/<cccl>/*.md`` (removing stale pages) and ``<docs_dir>/index.md``."""
    from .emit_docs import emit_api_index, emit_docs

    written: list[Path] = []
    pages = docs_dir / entry.cccl
    for name, text in emit_docs(entry, model):
        _write_if_changed(pages / name, text, written)
    keep = {p.resolve() for p in written}
    for stale in pages.glob("*.md"):
        if stale.resolve() not in keep:
            stale.unlink()
    _write_if_changed(docs_dir / "index.md", emit_api_index(entries), written)
    return written


def write_lock_copy(lock: Path, out_dir: Path) -> Path:
    """Copy the lock into the bindings package: an installed coopgen (no checkout) reads its
    lock entries from there (coverage, diff, doctor)."""
    from .headers import LOCK_FILENAME

    written: list[Path] = []
    _write_if_changed(out_dir / LOCK_FILENAME, lock.read_text(encoding="utf-8"), written)
    return written[0]
