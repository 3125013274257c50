"""All generator file I/O: the model JSON and the emitted binding modules of one lock entry."""
from __future__ import annotations

from pathlib import Path

from .headers import LockEntry
from .model import ApiModel, to_json


def _write_if_changed(path: Path, text: str, written: list[Path]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    written.append(path)


def write_outputs(entry: LockEntry, model: ApiModel, out_dir: Path) -> list[Path]:
    """Write ``<out_dir>/<tag>/cub_api.json`` and every emitted module; remove stale modules."""
    from .emit import emit_package

    written: list[Path] = []
    pkg = out_dir / entry.tag
    _write_if_changed(pkg / "cub_api.json", to_json(model), written)
    for name, text in emit_package(entry, model):
        _write_if_changed(pkg / name, text, written)
    keep = {p.resolve() for p in written}
    for stale in pkg.glob("*.py"):
        if stale.resolve() not in keep:
            stale.unlink()
    top = out_dir / "__init__.py"
    _write_if_changed(top, '"""Generated bindings, one subpackage per lock entry. Do not edit."""\n',
                      written)
    return written
