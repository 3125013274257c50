"""A pass over a kernel's IR before type inference, for what numba's typing cannot see, on calls
of coopgen objects only: arguments computed from the launch's kernel arguments become constants
the dispatcher keys its kernels on (as on the block shape); objects made from constants
(``coop.TempStorage(n)``) are made on the host; ``prim[ts](...)`` is ``prim(...,
temp_storage=ts)``; Python operators become device functions; ``ThreadData(n)`` is
``local.array(n, dtype)``; numba's local/shared arrays passed to a primitive become coopgen's,
whose type carries the shape (items per thread and bins are inferred from it)."""
import contextvars
import types as pytypes

from llvmlite import ir as llvm_ir
from numba import cuda as _cuda
from numba.cuda import types
from numba.cuda.core import ir
from numba.cuda.core.inline_closurecall import InlineWorker
from numba.cuda.core.ir_utils import build_definitions, get_definition, guard
from numba.cuda.core.rewrites import Rewrite, register_rewrite
from numba.cuda.extending import intrinsic

from ..resolve.entry import Entry
from ..resolve.group_calls import GroupCallRewrite
from ..resolve.kernel_ir import NOT_KNOWN, UNKNOWN, IrClasses, Trace
from ..resolve.kernel_ir import in_coopgen, is_call, is_host_constant, is_op, plain
from ..resolve.operators import cell_value
from . import host_objects
from .arrays import local_array, reserved_array, shared_array, thread_data_array
from .describe import device_function
from .errors import CoopgenTypeError
from .bundle import launch_config

@intrinsic
def device_trap(typingctx):
    """PTX ``trap``: the kernel stops with a launch failure (cuda.coop's run-time checks)."""
    def codegen(context, builder, signature, args):
        builder.call(builder.module.declare_intrinsic("llvm.trap", fnty=llvm_ir.FunctionType(
            llvm_ir.VoidType(), ())), ())
        return context.get_dummy_value()
    return types.none(), codegen


def ptx(text: str, returns: bool):
    """A device function of one PTX statement: ``() -> uint32`` (its ``$0``) or ``() -> None``."""
    @intrinsic
    def statement(typingctx):
        def codegen(context, builder, signature, args):
            out = builder.asm(llvm_ir.FunctionType(llvm_ir.IntType(32) if returns else
                                                   llvm_ir.VoidType(), ()), text,
                              "=r" if returns else "", (), side_effect=True)
            return out if returns else context.get_dummy_value()
        return (types.uint32 if returns else types.none)(), codegen
    return statement


IR = IrClasses(ir.const_types, ir.global_types + ir.freevar_types, ir.arg_types, ir.expr_types,
               ir.assign_types, ir.Assign, ir.Const, ir.Global, ir.Expr,
               lambda func_ir, var: guard(get_definition, func_ir, var))


def _is_coopgen(obj) -> bool:
    return isinstance(obj, host_objects.ENTRY_CLASSES) or in_coopgen(obj)


#: How many times the rewrite goes over a function at most (a pass may leave calls for the next).
_PASSES = 8
#: Set while a device function is inlined here: its own rewrite then leaves it as it is.
_inlining: contextvars.ContextVar = contextvars.ContextVar("coopgen_inlining", default=False)


def _device_function_calling_primitives(obj, args=()) -> bool:
    """A ``@cuda.jit(device=True)`` function reading a name of coopgen's (globals, closure),
    or given one of coopgen's objects (``args``: the host values of a call's arguments):
    compiled once per signature, it would keep the first launch's block shape, so it is
    inlined into its caller (numba-cuda's ``inline=`` defaults to "never" and cannot tell)."""
    options = getattr(obj, "targetoptions", None)
    fn = getattr(obj, "py_func", None)
    if not isinstance(options, dict) or not options.get("device") or fn is None:
        return False
    if any(f"{type(v).__module__}.".startswith("coopgen.") for v in args):
        return True
    names, codes = set(), [fn.__code__]
    while codes:
        code = codes.pop()
        names |= set(code.co_names) | set(code.co_freevars)
        codes += [c for c in code.co_consts if isinstance(c, pytypes.CodeType)]
    values = [fn.__globals__.get(n) for n in names] + list(map(cell_value, fn.__closure__ or ()))
    return any(_is_coopgen(v) or isinstance(v, pytypes.ModuleType)
               and f"{v.__name__}.".startswith("coopgen.") for v in values)


_NUMBA_ARRAYS = (_cuda.local.array, _cuda.shared.array)


def takes_constants(obj) -> bool:
    """Calls whose sizes, dtypes and template arguments may come from kernel arguments."""
    return _is_coopgen(obj) or obj in _NUMBA_ARRAYS


@register_rewrite("before-inference")
class CoopgenRewrite(GroupCallRewrite, Rewrite):
    ir, error = IR, CoopgenTypeError
    arrays = {"local": local_array, "thread_data": thread_data_array, "shared": shared_array,
              "reserved": reserved_array}
    device_function = staticmethod(device_function)
    cuda_module = _cuda  # what the group helpers' device functions read as ``cuda``
    trap = staticmethod(device_trap)
    ptx = staticmethod(ptx)

    def takes_constants(self, obj) -> bool:
        return takes_constants(obj)

    def __init__(self, state=None):
        super().__init__(state)
        self.state = state

    def match(self, func_ir, block, typemap, calltypes):
        """The whole function at its first block (numba offers them last first): its device
        functions that call coopgen inlined, then every block in order, until nothing
        changes; the blocks' statements are replaced in place."""
        if _inlining.get() or func_ir.__dict__.get("_coopgen_rewritten"):
            return False
        func_ir._coopgen_rewritten = self.given = block
        cfg = launch_config()
        launched = cfg is not None and func_ir.func_id.func is getattr(cfg.dispatcher,
                                                                       "py_func", None)
        launch_args = (getattr(cfg, "args", None) or ()) if launched else None
        self.func_ir, self.changed = func_ir, False
        self._inline_device_functions()
        changed, self.changed = self.changed, True
        for _ in range(_PASSES):
            if not self.changed:
                break
            self.changed = False
            self.trace = Trace(IR, func_ir, launch_args, _is_coopgen)
            for _, self.block in sorted(func_ir.blocks.items()):
                new = self.block.copy()
                new.clear()
                for index, stmt in enumerate(self.block.body):
                    if is_call(IR, stmt):
                        self._call(new, stmt, index)
                    new.append(stmt)
                self.block.body = new.body
            if self.trace.keys:
                depends_on(cfg.dispatcher, self.trace.keys)
            changed |= self.changed
        if launched and any(host_objects.is_host_object(a) for a in launch_args):
            host_objects.pass_host_objects()
        return changed

    def apply(self):
        return self.given

    def _inline_device_functions(self) -> None:
        """The device functions that call coopgen, inlined here (nested ones too, numba's
        inline="always" ones among them) before any call is rewritten: a group, a
        ThreadData or a TempStorage passed to one is then the kernel's own."""
        worker = InlineWorker(self.state.typingctx, self.state.targetctx, self.state.locals,
                              self.state.pipeline, self.state.flags)
        while True:
            trace = Trace(IR, self.func_ir)
            found = next(((b, i, trace.callee(s.value.func).py_func)
                          for b in self.func_ir.blocks.values() for i, s in enumerate(b.body)
                          if is_call(IR, s) and _device_function_calling_primitives(
                              trace.callee(s.value.func), [trace.value(v)[0] for v in (
                                  *s.value.args, *dict(s.value.kws).values())])), None)
            if found is None:
                return
            # the blocks inlined join a copy of the function's table: numba's rewrite loop
            # still holds (and checks) the table it started with
            self.func_ir.blocks = dict(self.func_ir.blocks)
            token = _inlining.set(True)  # its own rewrite leaves it to this function's
            try:
                worker.inline_function(self.func_ir, *found)
            finally:
                _inlining.reset(token)
            self.func_ir._definitions = build_definitions(self.func_ir.blocks)
            self.changed = True

    def _constant(self, new, value, loc):
        """A variable holding ``value``; a tuple built from items (to type as literals)."""
        expr = ir.Expr.build_tuple([self._constant(new, v, loc) for v in value], loc) \
            if isinstance(value, tuple) else ir.Const(value, loc)
        return self._define(new, expr, loc, "$coopgen_launch")

    def _call(self, new, stmt, index):
        if self.rewrite_call(new, stmt, index):
            return
        expr = stmt.value
        callee = self.trace.callee(expr.func)
        if not takes_constants(callee):
            return
        if callee in _NUMBA_ARRAYS:
            self._sized_numba_array(new, stmt, callee)
        consts = {}
        for var in list(expr.args) + [v for _, v in expr.kws]:
            value, from_launch = self.trace.value(var)
            self.python_argument(var, value)
            if from_launch and is_host_constant(value):
                consts[var.name] = self._constant(new, plain(value), var.loc)
        if consts:
            expr.args = [consts.get(v.name, v) for v in expr.args]
            expr.kws = [(k, consts.get(v.name, v)) for k, v in expr.kws]
            self.changed = True

    def _sized_numba_array(self, new, stmt, callee):
        """numba's local/shared array passed to a primitive becomes coopgen's, whose type
        carries its size; others, and dynamic shared memory (shape 0), stay numba's."""
        expr = stmt.value
        shape = expr.args[0] if expr.args else dict(expr.kws).get("shape")
        value, _ = self.trace.value(shape) if shape is not None else NOT_KNOWN
        local = callee is _cuda.local.array
        # a thread's own array as temp storage would give each thread its own copy: as
        # coopgen's local array the primitive can see that and refuse it
        if value is UNKNOWN or value == 0 or not self._passed_to_primitive(
                stmt.target, as_storage=local):
            return
        self._drop_callee(expr.func)
        expr.func = self._array_function(new, local_array if local else shared_array, stmt.loc)
        self.changed = True

    def _passed_to_primitive(self, var, as_storage: bool = False) -> bool:
        """Whether ``var`` is an argument of a coopgen primitive (or of a method of an object
        one returned: ``histo.composite(items)``) other than its temp storage, whose size no
        primitive infers."""
        for stmt in (s for b in self.func_ir.blocks.values() for s in b.body if is_call(IR, s)):
            expr = stmt.value
            callee = self.trace.callee(expr.func)
            args = list(expr.args)
            if isinstance(callee, Entry) and callee.fixed and not as_storage:
                args = args[1:]  # maybe its storage: cuda.coop passes that first
            if var.name not in [v.name for v in args] + \
                    [v.name for k, v in expr.kws if k != "temp_storage" or as_storage]:
                continue
            fdef = self.trace.definition(expr.func)
            made = self.trace.definition(fdef.value) if is_op(IR, fdef, "getattr") else None
            if _is_coopgen(callee) or is_op(IR, made, "call") and \
                    _is_coopgen(self.trace.callee(made.func)):
                return True
        return False

def depends_on(dispatcher, keys) -> None:
    """Add the launch-argument values at ``keys`` to ``dispatcher``'s launch key."""
    dispatcher.mark_launch_config_sensitive()
    known = dispatcher.__dict__.setdefault("_coopgen_value_keys", [])
    known += [k for k in dict.fromkeys(keys) if k not in known]
    if "_launch_config_key" in dispatcher.__dict__:
        return
    base = type(dispatcher)._launch_config_key

    def launch_key(cfg):
        args = getattr(cfg, "args", None) or ()
        values = []
        for index, path in known:
            v = args[index] if index < len(args) else None
            for attr in path:
                v = getattr(v, attr, None)
            values.append(v if is_host_constant(v) else id(v))
        return base(cfg) + tuple(values)

    dispatcher._launch_config_key = launch_key
