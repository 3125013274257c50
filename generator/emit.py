"""Emitters: model -> generated binding modules (filled in by the bindings issue)."""
from __future__ import annotations

from .headers import LockEntry
from .model import ApiModel


def emit_package(entry: LockEntry, model: ApiModel) -> list[tuple[str, str]]:
    return []
