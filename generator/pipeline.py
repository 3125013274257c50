"""headers -> parse -> ordered model passes -> ApiModel. The only place the stages are chained."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from coopgen.codegen import cache

from .headers import LocatedHeaders, LockEntry, locate
from .model import ApiModel, from_json, to_json
from .roles import Overrides, apply_overrides, finalize, load_overrides


def models_dir() -> Path:
    """Where libclang's parses are kept (``coopgen cache`` shows and clears them)."""
    return cache.root() / "models"


@dataclass(frozen=True)
class Parsed:
    """An entry's parse, before the model passes: the model kept in the cache, or libclang's
    translation unit (``parse.Unit``) still to walk, with where to keep what the walk makes."""
    entry: LockEntry
    overrides: Overrides
    kept: ApiModel | None = None
    unit: object = None
    keep_at: Path | None = None


def parse_entry(entry: LockEntry, located: LocatedHeaders | None = None) -> Parsed:
    """Parse the entry's headers (``located``, else located here), or take the parse kept in
    the cache under all it depends on (``parse.parse_key``). libclang's part holds no GIL:
    ``coopgen generate`` runs this for several entries at once on threads."""
    # the only import of libclang, deferred so the runtime never pays it
    from .parse import parse_key, translation_unit

    located = located or locate(entry)
    overrides = load_overrides()
    key = parse_key(located.include_root, entry.headers_digest, frozenset(overrides.unstable))
    kept = key and cache.shim_dir() is not None  # not with COOPGEN_DISABLE_CACHE
    path = models_dir() / f"{entry.cccl}-{key}.json" if kept else None
    data = cache.read(path) if path is not None else None
    if data is not None:
        return Parsed(entry, overrides, kept=from_json(data.decode("utf-8")))
    return Parsed(entry, overrides, unit=translation_unit(located.include_root), keep_at=path)


def build_model(entry: LockEntry, parsed: Parsed | None = None) -> tuple[ApiModel, list[str]]:
    """The entry's model from its parse (``parsed``, else parsed here): the walk over the
    translation unit, then the model passes. Returns (model, warnings)."""
    from .parse import model_of

    parsed = parsed or parse_entry(entry)
    model = parsed.kept
    if model is None:
        model = model_of(parsed.unit, cccl=entry.cccl, headers_digest=entry.headers_digest,
                         detail_classes=frozenset(parsed.overrides.unstable))
        if parsed.keep_at is not None:
            cache.write(parsed.keep_at, to_json(model).encode("utf-8"))
    model, unmatched = apply_overrides(model, parsed.overrides)
    warnings = [f"overrides entry matched nothing: {u}" for u in unmatched]
    warnings += [f"parse {d.severity}: {d.file}:{d.line}: {d.message}" for d in model.diagnostics]
    return finalize(model), warnings
