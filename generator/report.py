"""Coverage and version-diff reports over API models (pure functions: model in, data out)."""
from __future__ import annotations

import re

from .model import ApiModel, ClassModel, Overload


def api_methods(cls: ClassModel) -> tuple[Overload, ...]:
    """Public, documented, bindable methods: what "100% coverage" is measured against."""
    return tuple(m for m in cls.methods if not m.hidden and not m.excluded)


def overload_key(cls: ClassModel, ov: Overload) -> str:
    return f"{cls.name}::{ov.signature}"


def coverage(model: ApiModel, bound: frozenset[str] | set[str]) -> dict:
    """Per user-facing class: public/hidden/bound counts and the missing signatures.

    ``bound`` holds ``Class::Signature`` keys of overloads that have a binding *and* a
    compile check (see coopgen.bindings' generated specs).
    """
    classes = {}
    totals = dict.fromkeys(("public", "hidden", "excluded", "bound", "constructors",
                            "constructors_bound"), 0)
    for cls in model.classes:
        if not cls.user_facing:
            continue
        public = api_methods(cls)
        row = {
            "scope": cls.scope,
            "user_facing": True,
            "public": len(public),
            "hidden": sum(m.hidden for m in cls.methods),
            "excluded": sum(bool(m.excluded) and not m.hidden for m in cls.methods),
            "bound": sum(overload_key(cls, m) in bound for m in public),
            "constructors": len(cls.constructors),
            "constructors_bound": sum(overload_key(cls, c) in bound for c in cls.constructors),
            "missing": [m.signature for m in public + cls.constructors
                        if overload_key(cls, m) not in bound],
        }
        classes[cls.name] = row
        for k in totals:
            totals[k] += row[k]
    return {"cccl": model.cccl, "classes": classes, "totals": totals}


def format_coverage(report: dict) -> str:
    head = f"{'class':34} {'public':>6} {'hidden':>6} {'bound':>6} {'missing':>7} {'ctors':>5} {'ctors bound':>11}"
    lines = [f"CCCL {report['cccl']}: user-facing classes", head, "-" * len(head)]
    for name, r in report["classes"].items():
        lines.append(f"{name:34} {r['public']:>6} {r['hidden']:>6} {r['bound']:>6} "
                     f"{r['public'] - r['bound']:>7} {r['constructors']:>5} "
                     f"{r['constructors_bound']:>11}")
    t = report["totals"]
    lines.append("-" * len(head))
    lines.append(f"{'total (' + str(len(report['classes'])) + ' classes)':34} {t['public']:>6} "
                 f"{t['hidden']:>6} {t['bound']:>6} {t['public'] - t['bound']:>7} "
                 f"{t['constructors']:>5} {t['constructors_bound']:>11}")
    by_scope = {}
    for r in report["classes"].values():
        by_scope[r["scope"]] = by_scope.get(r["scope"], 0) + r["public"]
    lines.append("public by scope: " + ", ".join(f"{k} {v}" for k, v in sorted(by_scope.items()))
                 + f"; excluded accessors: {t['excluded']}")
    pct = 100.0 * (t["bound"] + t["constructors_bound"]) / max(1, t["public"] + t["constructors"])
    lines.append(f"bound: {t['bound']}/{t['public']} methods, {t['constructors_bound']}/"
                 f"{t['constructors']} constructors ({pct:.1f}%)")
    return "\n".join(lines)


def normalized_signature(cls: ClassModel, ov: Overload, model: ApiModel) -> str:
    """The signature with template parameter names replaced by their stable keywords, so that
    CUB's renames (ITEMS_PER_THREAD -> ItemsPerThread in 3.2+) are not reported as new overloads."""
    sig = ov.signature
    owner = model.cls(ov.inherited_from) if ov.inherited_from else cls
    for t in owner.template_params + ov.template_params:
        sig = re.sub(rf"\b{re.escape(t.name)}\b", "{" + t.keyword + "}", sig)
    return sig


def diff(a: ApiModel, b: ApiModel) -> dict:
    """Classes, overloads, template parameters and enum values added/removed/changed."""
    out = {"from": a.cccl, "to": b.cccl, "classes_added": [], "classes_removed": [],
           "overloads_added": [], "overloads_removed": [], "signatures_changed": [],
           "template_params_added": [], "template_params_removed": [],
           "template_params_renamed": [], "enum_values_added": [], "enum_values_removed": []}
    ca = {c.qualname: c for c in a.classes}
    cb = {c.qualname: c for c in b.classes}
    out["classes_added"] = [q for q in cb if q not in ca]
    out["classes_removed"] = [q for q in ca if q not in cb]
    for q in (q for q in ca if q in cb):
        x, y = ca[q], cb[q]
        sx = {normalized_signature(x, o, a): o for o in x.constructors + x.methods}
        sy = {normalized_signature(y, o, b): o for o in y.constructors + y.methods}
        out["overloads_added"] += [f"{x.name}::{o.signature}" for s, o in sy.items() if s not in sx]
        out["overloads_removed"] += [f"{x.name}::{o.signature}" for s, o in sx.items()
                                     if s not in sy]
        for s in sx.keys() & sy.keys():
            ox, oy = sx[s], sy[s]
            if (ox.return_type, [p.default for p in ox.params], ox.hidden) != (
                    oy.return_type, [p.default for p in oy.params], oy.hidden):
                out["signatures_changed"].append(
                    f"{x.name}::{oy.signature}: returns {ox.return_type!r} -> {oy.return_type!r}, defaults "
                    f"{[p.default for p in ox.params]} -> {[p.default for p in oy.params]}, "
                    f"hidden {ox.hidden} -> {oy.hidden}")
        kx = {t.keyword: t for t in x.template_params}
        ky = {t.keyword: t for t in y.template_params}
        out["template_params_added"] += [f"{x.name}<{k}>" for k in ky if k not in kx]
        out["template_params_removed"] += [f"{x.name}<{k}>" for k in kx if k not in ky]
        out["template_params_renamed"] += [f"{x.name}<{kx[k].name} -> {ky[k].name}> (keyword {k})"
                                           for k in kx if k in ky and kx[k].name != ky[k].name]
    ea = {e.qualname: {v.name for v in e.values} for e in a.enums}
    eb = {e.qualname: {v.name for v in e.values} for e in b.enums}
    for q in sorted(ea.keys() | eb.keys()):
        va, vb = ea.get(q, set()), eb.get(q, set())
        out["enum_values_added"] += [f"{q}::{v}" for v in sorted(vb - va)]
        out["enum_values_removed"] += [f"{q}::{v}" for v in sorted(va - vb)]
    for k, v in out.items():
        if isinstance(v, list):
            out[k] = sorted(v)
    return out


def format_diff(d: dict) -> str:
    lines = [f"CUB API diff: CCCL {d['from']} -> {d['to']}"]
    for key, items in d.items():
        if not isinstance(items, list):
            continue
        lines.append(f"{key.replace('_', ' ')}: {len(items)}")
        lines += [f"  {'+' if 'added' in key else '-' if 'removed' in key else '~'} {i}"
                  for i in items]
    return "\n".join(lines)
