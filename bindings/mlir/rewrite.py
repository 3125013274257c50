"""The IR rewrite, as a whole-function planner (after inlining, before typing), in functions
that call coopgen: cuda.coop's forms (``prim[ts](...)``, ``TempStorage()`` made in the kernel,
``ThreadData(n)``: coopgen.resolve.kernel_ir, as on numba-cuda); numba-cuda-mlir's own
``cuda.local.array``/``cuda.shared.array`` of a constant shape become coopgen's, whose type
carries the shape (items per thread and bins are inferred from it). Sizes read from a launch's
kernel arguments are not possible here: the planner is given the launch's shape, not its
arguments."""
from numba_cuda_mlir import cuda
from numba_cuda_mlir import extending as ext
from numba_cuda_mlir.numba_cuda.core import ir
from numba_cuda_mlir.numba_cuda.core.ir_utils import get_definition, guard

from ..resolve.kernel_ir import UNKNOWN, CallRewrite, IrClasses, Trace, in_coopgen, is_call
from ..resolve.kernel_ir import is_op
from ..types.enums import CoopEnum
from .arrays import ARRAYS
from .bundle import uses_coopgen
from .typing import CoopgenTypeError

IR = IrClasses((ir.Const,), (ir.Global, ir.FreeVar), (ir.Arg,), (ir.Expr,), (ir.Assign,),
               ir.Assign, ir.Const, ir.Global, ir.Expr,
               lambda func_ir, var: guard(get_definition, func_ir, var))
_NUMBA_ARRAYS = {id(cuda.local.array): "local", id(cuda.shared.array): "shared"}


def _constant_shape(shape) -> bool:
    dims = shape if isinstance(shape, tuple) else (shape,)
    return bool(dims) and all(isinstance(n, int) and n > 0 for n in dims)


@ext.register_planner
class KernelRewrite(CallRewrite, ext.WholeFunctionPlanner):
    ir, error, arrays = IR, CoopgenTypeError, ARRAYS
    known_values = ("a constant or a global: numba-cuda-mlir's planners are given the launch's "
                    "block shape, not its arguments")

    def takes_constants(self, obj) -> bool:
        return in_coopgen(obj) or id(obj) in _NUMBA_ARRAYS

    def run(self) -> bool:
        self.func_ir, self.changed = self.state.func_ir, False
        if not uses_coopgen(self.func_ir):
            return False
        self.trace = Trace(IR, self.func_ir)
        for self.block in list(self.func_ir.blocks.values()):
            new = []
            for index, stmt in enumerate(self.block.body):
                if is_call(IR, stmt) and not self.rewrite_call(new, stmt, index):
                    self._sized_numba_array(new, stmt)
                elif is_op(IR, getattr(stmt, "value", None), "getattr") and isinstance(
                        member := self.trace.value(stmt.target)[0], CoopEnum):
                    # an enum member (coop.BlockLoadAlgorithm.WARP_TRANSPOSE): a constant
                    self._replace_value(stmt, ir.Global(member.name, member, stmt.loc))
                new.append(stmt)
            self.block.body = new
        return self.changed

    def _sized_numba_array(self, new, stmt):
        expr = stmt.value
        space = _NUMBA_ARRAYS.get(id(self.trace.callee(expr.func)))
        shape = expr.args[0] if expr.args else dict(expr.kws).get("shape")
        if space is None or shape is None:
            return
        value, _ = self.trace.value(shape)
        if value is not UNKNOWN and _constant_shape(value):
            expr.func = self._array_function(new, ARRAYS[space], stmt.loc)
            self.changed = True
