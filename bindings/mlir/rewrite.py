"""The IR rewrite, as a whole-function planner (after inlining, before typing), in functions
that call coopgen: cuda.coop's forms (``prim[ts](...)``, ``TempStorage()`` made in the kernel,
``ThreadData(n)``: coopgen.resolve.kernel_ir, as on numba-cuda); numba-cuda-mlir's own
``cuda.local.array``/``cuda.shared.array`` of a constant shape become coopgen's, whose type
carries the shape (items per thread and bins are inferred from it). The planner is given the
launch's shape, not its arguments: ``ThreadData(n)`` of a kernel argument ``n`` comes through
numba's literal dispatch (coopgen.mlir.arrays), other sizes must be constants."""
from numba_cuda_mlir import cuda
from numba_cuda_mlir import extending as ext
from numba_cuda_mlir._mlir import ir as mlir_ir
from numba_cuda_mlir._mlir.dialects import llvm
from numba_cuda_mlir.numba_cuda import types
from numba_cuda_mlir.numba_cuda.core import inline_closurecall, ir, postproc
from numba_cuda_mlir.numba_cuda.core.analysis import compute_cfg_from_blocks
from numba_cuda_mlir.numba_cuda.core.ir_utils import (build_definitions, get_definition, guard,
                                                      simplify_CFG)
from numba_cuda_mlir.numba_cuda.typing.templates import AbstractTemplate, signature

from ..resolve.group_calls import GroupCallRewrite
from ..resolve.kernel_ir import UNKNOWN, IrClasses, Trace, in_coopgen, is_call
from ..resolve.kernel_ir import is_op
from ..types.enums import CoopEnum
from .arrays import ARRAYS, PrimitiveClassType
from .bundle import calls_coopgen, uses_coopgen
from .describe import device_function
from .typing import CoopgenTypeError

def ptx(text: str, returns: bool):
    """A device function of one PTX statement: ``() -> uint32`` (its ``$0``) or ``() -> None``
    (numba-cuda-mlir's translation to NVVM IR takes inline PTX, not LLVM's intrinsics)."""
    def statement():
        """Device code only."""
    result = signature(types.uint32 if returns else types.none)

    class Template(AbstractTemplate):
        key = statement
        generic = lambda self, args, kws: None if args or kws else result  # noqa: E731

    def lower(builder, target, args, kws):
        out = llvm.inline_asm(mlir_ir.IntegerType.get_signless(32) if returns else None, [],
                              text, "=r" if returns else "", has_side_effects=True)
        if returns:
            builder.store_var(target, out)
    ext.typing_registry.register_global(statement, types.Function(Template))
    ext.lower_builtin(statement)(lower)
    return statement


#: PTX ``trap``: the kernel stops with a launch failure (cuda.coop's run-time checks)
device_trap = ptx("trap;", False)


IR = IrClasses((ir.Const,), (ir.Global, ir.FreeVar), (ir.Arg,), (ir.Expr,), (ir.Assign,),
               ir.Assign, ir.Const, ir.Global, ir.Expr,
               lambda func_ir, var: guard(get_definition, func_ir, var))
_NUMBA_ARRAYS = {id(cuda.local.array): "local", id(cuda.shared.array): "shared"}


def _constant_shape(shape) -> bool:
    dims = shape if isinstance(shape, tuple) else (shape,)
    return bool(dims) and all(isinstance(n, int) and n > 0 for n in dims)


@ext.register_planner
class KernelRewrite(GroupCallRewrite, ext.WholeFunctionPlanner):
    ir, error, arrays = IR, CoopgenTypeError, ARRAYS
    device_function = staticmethod(device_function)
    cuda_module = cuda  # what the group helpers' device functions read as ``cuda``
    trap = staticmethod(device_trap)
    ptx = staticmethod(ptx)
    known_values = "a constant or a global: numba-cuda-mlir's planners see no kernel arguments"

    def takes_constants(self, obj) -> bool:
        return in_coopgen(obj) or id(obj) in _NUMBA_ARRAYS

    def run(self) -> bool:
        self.func_ir, self.changed = self.state.func_ir, False
        # numba-cuda-mlir's own inlining (device=True, inline=True) leaves the definitions of
        # the inlined variables out
        self.func_ir._definitions = build_definitions(self.func_ir.blocks)
        if not self.is_device_function:
            self._inline_device_functions()
        if not uses_coopgen(self.func_ir):
            return False
        self._no_objects_as_arguments()
        # a kernel argument typed as its value (literal dispatch of a size: coopgen.mlir.arrays)
        # is known here; the others are run-time values
        literal = tuple(ty.literal_value if isinstance(ty, types.IntegerLiteral) else UNKNOWN
                        for ty in getattr(self.state, "args", None) or ())
        self.trace = Trace(IR, self.func_ir, literal if any(
            v is not UNKNOWN for v in literal) else None)
        self.inline_calls = []
        for self.block in list(self.func_ir.blocks.values()):
            new = []
            for index, stmt in enumerate(self.block.body):
                if is_call(IR, stmt) and not self.rewrite_call(new, stmt, index):
                    self._call(new, stmt)
                elif is_op(IR, getattr(stmt, "value", None), "getattr") and isinstance(
                        member := self.trace.value(stmt.target)[0], CoopEnum):
                    # an enum member (coop.BlockLoadAlgorithm.WARP_TRANSPOSE): a constant
                    self._replace_value(stmt, ir.Global(member.name, member, stmt.loc))
                new.append(stmt)
            self.block.body = new
        if self.inline_calls:
            self._inline(self.inline_calls)
        return self.changed

    def _inline(self, targets) -> None:
        """The group helpers that call a primitive, inlined (a device function's own shims are
        not linked into its kernel), as numba-cuda-mlir's inlining pass does."""
        for name in targets:
            block, i = next((b, i) for b in self.func_ir.blocks.values()
                            for i, s in enumerate(b.body)
                            if isinstance(s, ir.Assign) and s.target.name == name)
            self._inline_at(block, i, self.trace.value(block.body[i].value.func)[0].py_func)

    def _inline_device_functions(self) -> None:
        """The kernel's device functions that call coopgen, inlined (nested ones too): their
        calls are planned with the kernel's launch, and a device function's own shims are not
        linked into its kernel."""
        while True:
            found = next(((b, i, d.py_func) for b in self.func_ir.blocks.values()
                          for i, s in enumerate(b.body) if is_call(IR, s)
                          for d in [guard(get_definition, self.func_ir, s.value.func)]
                          if isinstance(d, (ir.Global, ir.FreeVar)) and not in_coopgen(d.value)
                          and getattr(d.value, "targetoptions", {}).get("inline") != "never"
                          and calls_coopgen(getattr(d.value, "py_func", None))), None)
            if found is None:
                return
            self._inline_at(*found)
            self.changed = True

    def _inline_at(self, block, index, py_func) -> None:
        inline_closurecall.InlineWorker(
            self.state.typingctx, self.state.targetctx, self.state.locals, self.state.pipeline,
            self.state.flags, validator=inline_closurecall.callee_ir_validator).inline_function(
            self.func_ir, block, index, py_func)
        for dead in compute_cfg_from_blocks(self.func_ir.blocks).dead_nodes():
            del self.func_ir.blocks[dead]
        postproc.PostProcessor(self.func_ir).run()
        self.func_ir.blocks = simplify_CFG(self.func_ir.blocks)

    def _no_objects_as_arguments(self) -> None:
        args = () if self.is_device_function else getattr(self.state, "args", None) or ()
        for name, ty in zip(self.func_ir.arg_names, args):
            if isinstance(ty, (types.Function, PrimitiveClassType)) and in_coopgen(
                    key := getattr(ty.templates[0], "key", None)):
                raise CoopgenTypeError(
                    f"{key.name}: the two-phase object passed as the kernel argument {name!r} "
                    f"cannot be a kernel argument on numba-cuda-mlir (its kernel parameters "
                    f"are run-time values); use it as a global or a closure variable")

    def _call(self, new, stmt):
        expr = stmt.value
        callee = self.trace.callee(expr.func)
        if in_coopgen(callee):
            for var in list(expr.args) + [v for _, v in expr.kws]:
                self.python_argument(var, self.trace.value(var)[0])
        space = _NUMBA_ARRAYS.get(id(callee))
        shape = expr.args[0] if expr.args else dict(expr.kws).get("shape")
        if space is None or shape is None:
            return
        value, _ = self.trace.value(shape)
        if value is not UNKNOWN and _constant_shape(value) or isinstance(
                self.trace.definition(shape), ir.Arg):  # a kernel argument: literal dispatch
            expr.func = self._array_function(new, ARRAYS[space], stmt.loc)
            self.changed = True
