"""headers -> parse -> ordered model passes -> ApiModel. The only place the stages are chained."""
from __future__ import annotations

from pathlib import Path

from coopgen.codegen import cache

from .headers import LockEntry, locate
from .model import ApiModel, from_json, to_json
from .roles import apply_overrides, finalize, load_overrides


def models_dir() -> Path:
    """Where libclang's parses are kept (``coopgen cache`` shows and clears them)."""
    return cache.root() / "models"


def build_model(entry: LockEntry) -> tuple[ApiModel, list[str]]:
    """Parse the entry's headers (or take the parse kept in the cache under all it depends on,
    ``parse.parse_key``) and apply the model passes. Returns (model, warnings)."""
    # the only import of libclang, deferred so the runtime never pays it
    from .parse import parse, parse_key

    located = locate(entry)
    overrides = load_overrides()
    detail = frozenset(overrides.unstable)
    key = parse_key(located.include_root, entry.headers_digest, detail)
    kept = key and cache.shim_dir() is not None  # not with COOPGEN_DISABLE_CACHE
    path = models_dir() / f"{entry.cccl}-{key}.json" if kept else None
    data = cache.read(path) if path is not None else None
    if data is not None:
        model = from_json(data.decode("utf-8"))
    else:
        model = parse(located.include_root, cccl=entry.cccl, headers_digest=entry.headers_digest,
                      detail_classes=detail)
        if path is not None:
            cache.write(path, to_json(model).encode("utf-8"))
    model, unmatched = apply_overrides(model, overrides)
    warnings = [f"overrides entry matched nothing: {u}" for u in unmatched]
    warnings += [f"parse {d.severity}: {d.file}:{d.line}: {d.message}" for d in model.diagnostics]
    return finalize(model), warnings
