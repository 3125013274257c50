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
    """Per user-facing class: public/hidden/bound counts, the missing signatures, and the
    excluded ones with their reasons. Every documented overload is public (bound or missing)
    or excluded. The unstable classes of ``cub::detail`` are counted apart (``unstable``,
    ``unstable_totals``): CUB may change them in any release.

    ``bound`` holds ``Class::Signature`` keys of overloads that have a binding *and* a
    compile check (see coopgen.bindings' generated specs).
    """
    keys = ("public", "hidden", "excluded", "bound", "constructors", "constructors_bound")
    out = {"cccl": model.cccl, "classes": {}, "totals": dict.fromkeys(keys, 0),
           "unstable": {}, "unstable_totals": dict.fromkeys(keys, 0)}
    for cls in model.classes:
        if not cls.user_facing:
            continue
        public = api_methods(cls)
        excluded = [m for m in cls.methods if m.excluded and not m.hidden]
        row = {
            "scope": cls.scope,
            "user_facing": True,
            "public": len(public),
            "hidden": sum(m.hidden for m in cls.methods),
            "excluded": len(excluded),
            "bound": sum(overload_key(cls, m) in bound for m in public),
            "constructors": len(cls.constructors),
            "constructors_bound": sum(overload_key(cls, c) in bound for c in cls.constructors),
            "missing": [m.signature for m in public + cls.constructors
                        if overload_key(cls, m) not in bound],
            "excluded_overloads": [{"signature": m.signature, "reason": m.excluded}
                                   for m in excluded],
        }
        group = "unstable" if cls.unstable else "classes"
        out[group][cls.name] = row
        totals = out["unstable_totals" if cls.unstable else "totals"]
        for k in totals:
            totals[k] += row[k]
    out.update(function_coverage(model, bound))
    return out


#: Counts of a free function (its overloads), per function and per header family.
FUNCTION_KEYS = ("public", "hidden", "excluded", "bound")


def function_coverage(model: ApiModel, bound) -> dict:
    """Per namespace-scope function: its family (block, warp, thread, util), public, hidden,
    excluded and bound overload counts and the missing signatures; totals per family. Keys
    ``Function::Signature`` (FunctionModel.as_class) as for classes."""
    out = {"functions": {}, "function_families": {}}
    for fn in model.functions:
        cls = fn.as_class()
        public = api_methods(cls)
        excluded = [o for o in fn.overloads if o.excluded and not o.hidden]
        row = {"scope": fn.scope, "family": fn.family, "unstable": fn.unstable,
               "public": len(public), "hidden": sum(o.hidden for o in fn.overloads),
               "excluded": len(excluded),
               "bound": sum(overload_key(cls, o) in bound for o in public),
               "missing": [o.signature for o in public if overload_key(cls, o) not in bound],
               "excluded_overloads": [{"signature": o.signature, "reason": o.excluded}
                                      for o in excluded]}
        out["functions"][fn.name] = row
        # cub::detail's (unstable) functions are counted apart, as "detail"
        family = "detail" if fn.unstable else fn.family
        fam = out["function_families"].setdefault(family, dict.fromkeys(
            ("functions",) + FUNCTION_KEYS, 0))
        fam["functions"] += 1
        for k in FUNCTION_KEYS:
            fam[k] += row[k]
    out["function_families"] = dict(sorted(out["function_families"].items()))
    return out


def _function_lines(report: dict) -> list[str]:
    functions = report.get("functions", {})
    if not functions:
        return []
    head = (f"{'function':34} {'family':>6} {'public':>6} {'hidden':>6} {'bound':>6} "
            f"{'missing':>7} {'excluded':>8}")
    lines = ["", f"CCCL {report['cccl']}: free functions (namespace scope)", head,
             "-" * len(head)]
    for name, r in functions.items():
        lines.append(f"{name:34} {r['family']:>6} {r['public']:>6} {r['hidden']:>6} "
                     f"{r['bound']:>6} {r['public'] - r['bound']:>7} {r['excluded']:>8}")
    lines.append("-" * len(head))
    for fam, t in report["function_families"].items():
        lines.append(f"{'family ' + fam + ' (' + str(t['functions']) + ' functions)':34} "
                     f"{'':>6} {t['public']:>6} {t['hidden']:>6} {t['bound']:>6} "
                     f"{t['public'] - t['bound']:>7} {t['excluded']:>8}")
    stable = [t for k, t in report["function_families"].items() if k != "detail"]
    public = sum(t["public"] for t in stable)
    n_bound = sum(t["bound"] for t in stable)
    detail = report["function_families"].get("detail")
    lines.append(f"functions bound: {n_bound}/{public} public overloads "
                 f"({100.0 * n_bound / max(1, public):.1f}%)"
                 + (f"; unstable (cub::detail): {detail['bound']}/{detail['public']}"
                    if detail else ""))
    return lines


def _coverage_table(title: str, classes: dict, t: dict) -> list[str]:
    head = (f"{'class':34} {'public':>6} {'hidden':>6} {'bound':>6} {'missing':>7} "
            f"{'excluded':>8} {'ctors':>5} {'ctors bound':>11}")
    lines = [title, head, "-" * len(head)]
    for name, r in classes.items():
        lines.append(f"{name:34} {r['public']:>6} {r['hidden']:>6} {r['bound']:>6} "
                     f"{r['public'] - r['bound']:>7} {r['excluded']:>8} {r['constructors']:>5} "
                     f"{r['constructors_bound']:>11}")
    lines.append("-" * len(head))
    lines.append(f"{'total (' + str(len(classes)) + ' classes)':34} {t['public']:>6} "
                 f"{t['hidden']:>6} {t['bound']:>6} {t['public'] - t['bound']:>7} "
                 f"{t['excluded']:>8} {t['constructors']:>5} {t['constructors_bound']:>11}")
    return lines


def _bound_line(t: dict) -> str:
    pct = 100.0 * (t["bound"] + t["constructors_bound"]) / max(1, t["public"] + t["constructors"])
    return (f"bound: {t['bound']}/{t['public']} methods, {t['constructors_bound']}/"
            f"{t['constructors']} constructors ({pct:.1f}%)")


def format_coverage(report: dict) -> str:
    lines = _coverage_table(f"CCCL {report['cccl']}: user-facing classes", report["classes"],
                            report["totals"])
    by_scope = {}
    for r in report["classes"].values():
        by_scope[r["scope"]] = by_scope.get(r["scope"], 0) + r["public"]
    lines.append("public by scope: " + ", ".join(f"{k} {v}" for k, v in sorted(by_scope.items())))
    lines.append(_bound_line(report["totals"]))
    unstable = report.get("unstable", {})
    if unstable:
        lines += [""] + _coverage_table(
            f"CCCL {report['cccl']}: unstable classes (cub::detail: CUB may change them in any "
            f"release)", unstable, report["unstable_totals"])
        lines.append("unstable " + _bound_line(report["unstable_totals"]))
    lines += _function_lines(report)
    groups = {**report["classes"], **unstable, **report.get("functions", {})}
    missing = [f"  {name}::{sig}" for name, r in groups.items() for sig in r["missing"]]
    if missing:
        lines += ["missing (public, not bound):"] + missing
    excluded = [f"  {name}::{x['signature']}: {x['reason']}"
                for name, r in groups.items() for x in r["excluded_overloads"]]
    if excluded:
        lines += ["excluded:"] + excluded
    return "\n".join(lines)


def normalized_signature(cls: ClassModel, ov: Overload, model: ApiModel) -> str:
    """The signature with template parameter names replaced by their stable keywords, so that
    CUB's renames (ITEMS_PER_THREAD -> ItemsPerThread in 3.2+) are not reported as new overloads."""
    sig = ov.signature
    owner = model.cls(ov.inherited_from) if ov.inherited_from else cls
    for t in owner.template_params + ov.template_params:
        sig = re.sub(rf"\b{re.escape(t.name)}\b", "{" + (t.keyword or t.name) + "}", sig)
    return sig


#: Who a change touches, in the order the diff lists them.
VISIBILITIES = ("public", "hidden", "detail", "internal")


def visibility(cls: ClassModel, ov: Overload | None = None) -> str:
    """Who a change touches: "public" (documented API of a class users call), "hidden" (an
    undocumented overload, ``_CCCL_DOXYGEN_INVOKED``), "detail" (an unstable ``cub::detail``
    class coopgen binds) or "internal" (a class users do not call)."""
    if not cls.user_facing:
        return "internal"
    if cls.unstable:
        return "detail"
    return "hidden" if ov is not None and ov.hidden else "public"


def _param_types(cls: ClassModel, ov: Overload, model: ApiModel) -> list[str]:
    """Parameter types with template names as stable keywords (what a rename leaves alone)."""
    owner = model.cls(ov.inherited_from) if ov.inherited_from else cls
    names = owner.template_params + ov.template_params
    out = []
    for p in ov.params:
        t = p.type
        for tp in names:
            t = re.sub(rf"\b{re.escape(tp.name)}\b", "{" + (tp.keyword or tp.name) + "}", t)
        out.append(t)
    return out


def positional_change(old: Overload, new: Overload) -> str | None:
    """How ``new`` (the same method in the next release) moves the positional slots of
    ``old``'s callers, or None when every old call still binds the same way."""
    was, now = [p.name for p in old.params], [p.name for p in new.params]
    if sorted(was) == sorted(now) and was != now:
        return f"parameters reordered: ({', '.join(was)}) -> ({', '.join(now)})"
    kept = [n for n in now if n in was]
    if kept != [n for n in was if n in now]:
        return f"parameters reordered: ({', '.join(was)}) -> ({', '.join(now)})"
    inserted = [(i, n) for i, n in enumerate(now) if n not in was]
    last_kept = max((i for i, n in enumerate(now) if n in was), default=-1)
    before = [n for i, n in inserted if i < last_kept]
    if before:
        moved = [n for i, n in enumerate(now) if n in was and i > now.index(before[0])]
        return (f"parameter {before[0]!r} inserted before {', '.join(map(repr, moved))}: their "
                f"positions move")
    removed = [n for n in was if n not in now]
    if removed and was.index(removed[0]) < len(was) - 1:
        return f"parameter {removed[0]!r} removed: the parameters after it move"
    required = [n for i, n in inserted if new.params[i].default is None]
    if required:
        return f"required parameter {required[0]!r} appended: old calls lack it"
    return None


def _match_changed(x: ClassModel, a: ApiModel, olds: list[Overload], y: ClassModel, b: ApiModel,
                   news: list[Overload]) -> list[tuple[Overload, Overload]]:
    """Pairs (old, new) of unmatched overloads of one method that are the same overload changed:
    one parameter list holds the other's names (inserted, removed or reordered parameters)."""
    pairs, free = [], list(news)
    for o in olds:
        names = {p.name for p in o.params}
        fits = [n for n in free if n.name == o.name and o.params and (
            names <= {p.name for p in n.params} or {p.name for p in n.params} <= names)]
        if fits:
            best = min(fits, key=lambda n: abs(len(n.params) - len(o.params)))
            free.remove(best)
            pairs.append((o, best))
    return pairs


def diff(a: ApiModel, b: ApiModel) -> dict:
    """Classes, overloads, template parameters and enum values added/removed/changed; each
    change marked public/hidden/internal, and the ones that move positional slots listed."""
    out = {"from": a.cccl, "to": b.cccl, "classes_added": [], "classes_removed": [],
           "overloads_added": [], "overloads_removed": [], "signatures_changed": [],
           "template_params_added": [], "template_params_removed": [],
           "template_params_renamed": [], "keywords_renamed": [], "enum_values_added": [],
           "enum_values_removed": [], "positional_breaking": [], "changes": []}
    changes = out["changes"]

    def note(kind: str, vis: str, item: str, breaking: str | None = None) -> None:
        changes.append({"kind": kind, "visibility": vis, "item": item,
                        "breaks_positional": breaking or ""})
        if breaking:
            out["positional_breaking"].append(f"[{vis}] {item}: {breaking}")

    ca = {c.qualname: c for c in a.classes}
    cb = {c.qualname: c for c in b.classes}
    out["classes_added"] = [q for q in cb if q not in ca]
    out["classes_removed"] = [q for q in ca if q not in cb]
    for q in out["classes_added"]:
        note("class added", visibility(cb[q]), q)
    for q in out["classes_removed"]:
        note("class removed", visibility(ca[q]), q)

    def overloads(x: ClassModel, y: ClassModel) -> None:
        """The overloads of one class (or free function) in both releases, compared."""
        sx = {normalized_signature(x, o, a): o for o in x.constructors + x.methods}
        sy = {normalized_signature(y, o, b): o for o in y.constructors + y.methods}
        gone = [o for s, o in sx.items() if s not in sy]
        new = [o for s, o in sy.items() if s not in sx]
        for old_ov, new_ov in _match_changed(x, a, gone, y, b, new):
            gone.remove(old_ov)
            new.remove(new_ov)
            item = f"{x.name}::{old_ov.signature} -> {new_ov.signature}"
            out["signatures_changed"].append(item)
            note("signature changed", visibility(y, new_ov), item,
                 positional_change(old_ov, new_ov))
        for o in new:
            out["overloads_added"].append(f"{x.name}::{o.signature}")
            note("overload added", visibility(y, o), f"{x.name}::{o.signature}")
        for o in gone:
            out["overloads_removed"].append(f"{x.name}::{o.signature}")
            note("overload removed", visibility(x, o), f"{x.name}::{o.signature}",
                 "removed: its callers break" if not o.hidden else None)
        for s in sx.keys() & sy.keys():
            ox, oy = sx[s], sy[s]
            vis = visibility(y, oy)
            key = f"{x.name}::{oy.signature}"
            if ox.return_type != oy.return_type or ox.hidden != oy.hidden:
                item = (f"{key}: returns {ox.return_type!r} -> {oy.return_type!r}, hidden "
                        f"{ox.hidden} -> {oy.hidden}")
                out["signatures_changed"].append(item)
                note("signature changed", vis, item)
            for px, py in zip(ox.params, oy.params):
                if px.default != py.default:
                    item = f"{key}: default of {py.name!r} {px.default!r} -> {py.default!r}"
                    out["signatures_changed"].append(item)
                    note("default changed", vis, item, "default removed: calls that omitted it "
                         "break" if py.default is None else None)
                if px.name != py.name:
                    item = (f"{key}: parameter {px.name!r} renamed {py.name!r}; coopgen keeps no "
                            f"other name for it, so {px.name}= callers break")
                    if vis != "internal":
                        out["keywords_renamed"].append(item)
                    note("keyword renamed", vis, item)
    for q in (q for q in ca if q in cb):
        x, y = ca[q], cb[q]
        overloads(x, y)
        kx = {t.keyword or t.name: t for t in x.template_params}
        ky = {t.keyword or t.name: t for t in y.template_params}
        for k in ky:
            if k not in kx:
                t = ky[k]
                internal = not t.keyword
                item = f"{x.name}<{t.name}>" + ("" if internal else f" (keyword {t.keyword})")
                out["template_params_added"].append(item)
                note("template parameter added", "internal" if internal else visibility(y), item)
        for k in kx:
            if k not in ky:
                item = f"{x.name}<{kx[k].name}>"
                out["template_params_removed"].append(item)
                note("template parameter removed", visibility(x) if kx[k].keyword else
                     "internal", item)
        for k in kx:
            if k in ky and kx[k].name != ky[k].name:
                item = f"{x.name}<{kx[k].name} -> {ky[k].name}> (keyword {k})"
                out["template_params_renamed"].append(item)
                if y.user_facing:
                    out["keywords_renamed"].append(f"{item}: coopgen keeps the keyword {k}=")
                note("template parameter renamed", visibility(y), item)
    # free functions: a function is a class of overloads (FunctionModel.as_class)
    fa = {f.qualname: f.as_class() for f in a.functions}
    fb = {f.qualname: f.as_class() for f in b.functions}
    out["functions_added"] = [q for q in fb if q not in fa]
    out["functions_removed"] = [q for q in fa if q not in fb]
    for q in out["functions_added"]:
        note("function added", visibility(fb[q]), q)
    for q in out["functions_removed"]:
        note("function removed", visibility(fa[q]), q, "removed: its callers break")
    for q in (q for q in fa if q in fb):
        overloads(fa[q], fb[q])
    ea = {e.qualname: {v.name for v in e.values} for e in a.enums}
    eb = {e.qualname: {v.name for v in e.values} for e in b.enums}
    for q in sorted(ea.keys() | eb.keys()):
        va, vb = ea.get(q, set()), eb.get(q, set())
        out["enum_values_added"] += [f"{q}::{v}" for v in sorted(vb - va)]
        out["enum_values_removed"] += [f"{q}::{v}" for v in sorted(va - vb)]
        for v in sorted(vb - va):
            note("enum value added", "public", f"{q}::{v}")
        for v in sorted(va - vb):
            note("enum value removed", "public", f"{q}::{v}")
    for k, v in out.items():
        if isinstance(v, list) and k != "changes":
            out[k] = sorted(v)
    out["changes"] = sorted(changes, key=lambda c: (VISIBILITIES.index(
        c["visibility"]), c["kind"], c["item"]))
    return out


def format_diff(d: dict) -> str:
    """Every change marked [public], [hidden], [detail] or [internal]; then the ones that break
    positional callers, then renamed keywords with the name coopgen keeps."""
    counts = {v: sum(c["visibility"] == v for c in d["changes"]) for v in VISIBILITIES}
    lines = [f"CUB API diff: CCCL {d['from']} -> {d['to']} ("
             + ", ".join(f"{n} {v}" for v, n in counts.items()) + " changes)"]
    kind = None
    for c in d["changes"]:
        if c["kind"] != kind:
            kind = c["kind"]
        lines.append(f"  [{c['visibility']}] {kind}: {c['item']}"
                     + (" (BREAKS POSITIONAL CALLERS)" if c["breaks_positional"] else ""))
    lines.append(f"Breaks positional callers: {len(d['positional_breaking'])}")
    lines += [f"  {i}" for i in d["positional_breaking"]]
    lines.append(f"Renamed keywords: {len(d['keywords_renamed'])}")
    lines += [f"  {i}" for i in d["keywords_renamed"]]
    return "\n".join(lines)
