"""headers -> parse -> ordered model passes -> ApiModel. The only place the stages are chained."""
from __future__ import annotations

from .headers import LockEntry, locate
from .model import ApiModel
from .roles import apply_overrides, finalize, load_overrides


def build_model(entry: LockEntry) -> tuple[ApiModel, list[str]]:
    """Parse the entry's headers and apply the model passes. Returns (model, warnings)."""
    from .parse import parse  # the only import of libclang, deferred so the runtime never pays it

    located = locate(entry)
    overrides = load_overrides()
    model = parse(located.include_root, cccl=entry.cccl, headers_digest=entry.headers_digest,
                  detail_classes=frozenset(overrides.unstable))
    model, unmatched = apply_overrides(model, overrides)
    warnings = [f"overrides entry matched nothing: {u}" for u in unmatched]
    warnings += [f"parse {d.severity}: {d.file}:{d.line}: {d.message}" for d in model.diagnostics]
    return finalize(model), warnings
