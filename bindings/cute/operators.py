"""Python operators (``scan_op``, ``compare_op``, ``binary_op``) in CuTe DSL kernels: the
function is traced once more, into a function of the GPU module named as the shim's functor
calls it (``extern "C"``, numbers by value), so CuTe DSL's own arithmetic builds its body and the
linked shim calls it. A ``@cute.jit`` function works, and so does a plain Python function of
straight-line arithmetic (branching on a traced value needs ``@cute.jit`` or
``cutlass.select_``)."""
from cutlass._mlir import ir
from cutlass._mlir.dialects import func

from ..model.errors import CoopgenError
from ..types import desc
from ..types.cpp import by_pointer
from .describe import number_class


def _module_block(kernel):
    """The block of the GPU module holding ``kernel``: where its functions go."""
    op = kernel
    while op is not None and op.name not in ("gpu.module", "builtin.module"):
        op = op.parent
    if op is None:
        raise CoopgenError("no GPU module around the traced kernel")
    return op, op.regions[0].blocks[0]


def _number(prim: str, what: str, t):
    if isinstance(t, desc.Pointer) or by_pointer(t):
        raise CoopgenError(f"{prim}: a Python operator on {t} (passed by pointer): "
                           f"coopgen.cute compiles operators on C numbers only")
    return number_class(t)


def define(prim: str, kernel, symbol: str, fn, argtypes, restype) -> None:
    """Define ``symbol`` (once per module) as ``fn`` traced on ``argtypes``."""
    module, block = _module_block(kernel)
    if symbol in ir.SymbolTable(module.operation):
        return
    args = [_number(prim, "argument", t) for t in argtypes]
    result = None if restype == desc.VOID else _number(prim, "result", restype)
    with ir.InsertionPoint.at_block_begin(block):
        f = func.FuncOp(symbol, ([a.mlir_type for a in args],
                                 [result.mlir_type] if result else []))
    f.sym_visibility = ir.StringAttr.get("public")
    entry = f.add_entry_block()
    with ir.InsertionPoint(entry):
        try:
            out = fn(*(cls(v) for cls, v in zip(args, entry.arguments)))
        except Exception as e:  # noqa: BLE001 (whatever the operator's body raised)
            raise CoopgenError(f"{prim}: the operator {getattr(fn, '__name__', fn)!r} does not "
                               f"trace on {', '.join(map(str, argtypes))}: {e}") from e
        func.ReturnOp([result(out).ir_value()] if result else [])
