"""Build the ``block`` and ``warp`` namespaces from the generated specs and naming table."""
from __future__ import annotations

import importlib

from . import registry
from .calls import Primitive, PrimitiveClass


def _filtered(cls, method: str, needs, excludes):
    chosen = []
    for m in cls.overloads(method):
        names = {p.name for p in m.params}
        if all(n in names for n in needs) and not any(n in names for n in excludes):
            chosen.append(m)
    return tuple(chosen)


def build(scope: str) -> dict:
    """{name: object} for one scope: faithful classes, then Pythonic functions."""
    out = {}
    classes = registry.classes()
    for cls in classes.values():
        if cls.scope == scope:
            out[cls.name] = PrimitiveClass(scope, cls)
    for row in registry.package().PYTHONIC:
        if row.scope != scope:
            continue
        cls = classes[row.cls]
        if row.object:  # an object factory: a constructor call, or inferred from a method's
            infer = None if row.object == "constructor" else row.object
            out[row.name] = Primitive(f"{scope}.{row.name}", cls, {"": cls.constructors},
                                      constructor=True, infer=infer, bind=row.bind,
                                      aliases=dict(row.methods))
            continue
        methods = {sel: _filtered(cls, m, row.needs, row.excludes) for sel, m in row.methods}
        methods = {k: v for k, v in methods.items() if v}
        if methods:
            out[row.name] = Primitive(f"{scope}.{row.name}", cls, methods, select=row.select)
    _set_docstrings(scope, out)
    return out


def _set_docstrings(scope: str, objects: dict) -> None:
    """``help()`` shows the API reference's sections, generated with the bindings and keyed by
    the names users write (``block.BlockScan``, ``block.BlockScan.ExclusiveSum``, ``block.sum``)."""
    try:
        docs = importlib.import_module(f"{registry.package().__name__}.docstrings").DOCSTRINGS
    except ModuleNotFoundError:  # bindings generated before the docs were: `coopgen generate`
        docs = {}
    for name, obj in objects.items():
        obj.__doc__ = docs.get(f"{scope}.{name}")
        for method in getattr(obj, "_methods", {}).values():
            method.__doc__ = docs.get(method.name)
