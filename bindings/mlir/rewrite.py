"""A whole-function planner for calls numba-cuda-mlir's typing cannot see through: its own
``cuda.local.array``/``cuda.shared.array`` of a constant shape, in a function that calls
coopgen, become coopgen's, whose type carries the shape (items per thread and bins are inferred
from it); coopgen's enum members become their names. Sizes read from a launch's kernel
arguments are not possible here: the planner is given the launch's shape, not its arguments."""
from numba_cuda_mlir import cuda
from numba_cuda_mlir import extending as ext
from numba_cuda_mlir.numba_cuda.core import ir
from numba_cuda_mlir.numba_cuda.core.ir_utils import get_definition, guard, mk_unique_var

from ..types.enums import CoopEnum
from .arrays import ARRAYS
from .bundle import uses_coopgen

_NUMBA_ARRAYS = {id(cuda.local.array): "local", id(cuda.shared.array): "shared"}
_UNKNOWN = object()


def _value(func_ir, var):
    """The Python value of an IR variable made of globals, constants and attributes."""
    d = guard(get_definition, func_ir, var)
    if isinstance(d, (ir.Global, ir.FreeVar, ir.Const)):
        return d.value
    if isinstance(d, ir.Expr) and d.op == "getattr":
        base = _value(func_ir, d.value)
        return _UNKNOWN if base is _UNKNOWN else getattr(base, d.attr, _UNKNOWN)
    if isinstance(d, ir.Expr) and d.op == "build_tuple":
        items = tuple(_value(func_ir, v) for v in d.items)
        return _UNKNOWN if _UNKNOWN in items else items
    return _UNKNOWN


def _enum_member(func_ir, stmt):
    """The coopgen enum member ``stmt`` assigns (``BlockLoadAlgorithm.DIRECT``), else None."""
    value = stmt.value if isinstance(stmt, ir.Assign) else None
    if isinstance(value, ir.Expr) and value.op == "getattr":
        value = getattr(_value(func_ir, value.value), value.attr, None)
    elif isinstance(value, (ir.Global, ir.FreeVar)):
        value = value.value
    return value if isinstance(value, CoopEnum) else None


def _constant_shape(shape) -> bool:
    dims = shape if isinstance(shape, tuple) else (shape,)
    return bool(dims) and all(isinstance(n, int) and n > 0 for n in dims)


@ext.register_planner
class SizedArrays(ext.WholeFunctionPlanner):
    def run(self) -> bool:
        func_ir = self.state.func_ir
        if not uses_coopgen(func_ir):
            return False
        changed = False
        for block in func_ir.blocks.values():
            for stmt in list(block.body):
                member = _enum_member(func_ir, stmt)
                if member is not None:  # numba-cuda-mlir would type it as a run-time int
                    stmt.value, changed = ir.Const(member.name, stmt.loc), True
                expr = stmt.value if isinstance(stmt, ir.Assign) else None
                if not isinstance(expr, ir.Expr) or expr.op != "call":
                    continue
                space = _NUMBA_ARRAYS.get(id(_value(func_ir, expr.func)))
                shape = expr.args[0] if expr.args else dict(expr.kws).get("shape")
                if space is None or shape is None or not _constant_shape(
                        _value(func_ir, shape)):
                    continue
                fn = ir.Var(stmt.target.scope, mk_unique_var(f"$coopgen_{space}_array"),
                            stmt.loc)
                block.body.insert(block.body.index(stmt), ir.Assign(
                    ir.Global(f"coopgen_{space}_array", ARRAYS[space], stmt.loc), fn, stmt.loc))
                expr.func = fn
                changed = True
        return changed
