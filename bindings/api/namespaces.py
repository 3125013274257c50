"""Build the ``block`` and ``warp`` namespaces from the generated specs and naming table."""
from ..model import backends, registry
from ..resolve.shape import CallShape
from ..types import enums
from .primitives import Primitive, PrimitiveClass


def build(scope: str) -> dict:
    """{name: object} for one scope: faithful classes, then Pythonic functions, then the
    enums of their selectors (``block.BlockExchangeType``)."""
    classes = registry.classes()
    out = dict(enums.SELECTORS[scope])
    out.update({c.name: PrimitiveClass(scope, c) for c in classes.values() if c.scope == scope})
    functions = registry.functions()
    for f in functions.values():  # faithful free functions: block.LoadDirectStriped(...)
        if f.scope == scope:
            out[f.name] = Primitive(f"{scope}.{f.name}", f, {"": f.overloads(f.name)})
            # the enums its keywords take (thread.CacheLoadModifier)
            out.update({t.cpp_type: enums.ALGORITHMS[t.cpp_type] for m in f.methods
                        for t in m.keywords if t.cpp_type in enums.ALGORITHMS})
    classes = {**classes, **functions}
    pkg = registry.package()
    for row in pkg.PYTHONIC:
        if row.scope != scope:
            continue
        cls = classes[row.cls]
        name = f"{scope}.{row.name}"
        shape = CallShape.of_row(name, row, pkg.PYTHONIC_KEYWORDS)
        if row.object:  # an object factory: a constructor call, or inferred from a method's
            infer = None if row.object == "constructor" else row.object
            out[row.name] = Primitive(name, cls, {"": cls.constructors}, constructor=True,
                                      infer=infer, bind=row.bind, aliases=dict(row.methods),
                                      shape=shape, host=row.host, instance=row.instance,
                                      method_args=dict(row.method_args))
            continue
        methods: dict = {}  # selector value -> overloads (a value may name several methods)
        for sel, m in row.methods:  # the overloads with every parameter of needs, none of excludes
            methods[sel] = methods.get(sel, ()) + tuple(
                o for o in cls.overloads(m) if {x.name for x in o.params} >= set(row.needs)
                and not {x.name for x in o.params} & set(row.excludes))
        methods = {k: v for k, v in methods.items() if v}
        if methods:
            out[row.name] = Primitive(name, cls, methods, select=row.select, shape=shape,
                                      host=row.host, instance=row.instance)
    return out


def array_function(space: str):
    """``coopgen.local.array``/``coopgen.shared.array``: every backend types its calls."""
    def array(shape, dtype, alignment=None):
        """Allocate a per-thread (local) or per-block (shared) array inside a kernel."""
        raise NotImplementedError(f"coopgen.{space}.array can only be called inside a kernel")

    array.__qualname__ = f"{space}.array"
    array.__module__ = f"coopgen.{space}"
    backends.register("array", array, space=space)
    return array
