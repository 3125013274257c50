"""The generated bindings in use: one lock entry's package (CCCL 3.0.1 unless COOPGEN_CCCL says)."""
from __future__ import annotations

import functools
import importlib
import os

DEFAULT_CCCL = "3.0.1"


@functools.lru_cache(maxsize=None)
def package(cccl: str | None = None):
    cccl = cccl or os.environ.get("COOPGEN_CCCL", DEFAULT_CCCL)
    tag = "cccl_" + cccl.replace(".", "_")
    try:
        return importlib.import_module(f"coopgen._generated.{tag}")
    except ImportError:
        raise ImportError(f"coopgen has no generated bindings for CCCL {cccl}; run "
                          f"`coopgen generate --cccl {cccl}`") from None


@functools.lru_cache(maxsize=None)
def enums() -> dict:
    """C++ enum type name -> EnumSpec."""
    return {e.name: e for e in package().ENUMS}


def classes() -> dict:
    return {c.name: c for c in package().CLASSES}
