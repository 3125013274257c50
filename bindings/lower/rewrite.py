"""A pass over a kernel's IR before type inference, for what numba's typing cannot see, on calls
of coopgen objects only: arguments computed from the launch's kernel arguments become constants
the dispatcher keys its kernels on (as on the block shape); objects made from constants
(``coop.TempStorage(n)``) are made on the host; ``prim[ts](...)`` is ``prim(...,
temp_storage=ts)``; Python operators become device functions; ``ThreadData(n)`` is
``local.array(n, dtype)``; numba's local/shared arrays passed to a primitive become coopgen's,
whose type carries the shape (items per thread and bins are inferred from it)."""
import operator
import types as pytypes

import numpy as np
from numba import cuda as _cuda
from numba.cuda.core import ir
from numba.cuda.core.ir_utils import get_definition, guard
from numba.cuda.core.rewrites import Rewrite, register_rewrite

from ..resolve.entry import Entry
from . import host_objects
from .arrays import local_array, shared_array, thread_data_array
from .describe import cell_value
from .errors import CoopgenTypeError
from .bundle import launch_config
from .operators import device_function

#: Attributes of an array argument known on the host; other objects' public attributes are too.
ARRAY_ATTRIBUTES = ("shape", "size", "ndim")
#: The integer arithmetic the host does for the kernel, and the operands of each expression
#: whose value it may compute from theirs.
_ARITHMETIC = (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
               operator.lshift, operator.rshift, operator.neg)
_OPERANDS = {"build_tuple": lambda d: d.items, "static_getitem": lambda d: (d.value,),
             "getitem": lambda d: (d.value, d.index), "binop": lambda d: (d.lhs, d.rhs),
             "unary": lambda d: (d.value,)}
_UNKNOWN = object()
_NOT_KNOWN = (_UNKNOWN, False)


def _is_host_constant(v) -> bool:
    """Values a kernel may be specialised on: integers, booleans, strings and tuples of them."""
    return all(map(_is_host_constant, v)) if isinstance(v, tuple) else \
        isinstance(v, (int, bool, str, np.integer, np.bool_))


def _plain(v):
    """numpy scalars as Python ones (IR constants type as literals only then)."""
    return tuple(map(_plain, v)) if isinstance(v, tuple) else \
        v.item() if isinstance(v, np.generic) else v


class _Trace:
    """Values of IR variables that the host knows: constants, globals and, during a launch,
    what is computed from the kernel's arguments."""

    def __init__(self, func_ir, launch_args):
        self.func_ir = func_ir
        self.args = launch_args  # None: no launch (or not the launched kernel)
        self.keys: list = []  # (argument index, attribute path) the values depend on

    def definition(self, var):
        return guard(get_definition, self.func_ir, var)

    def value(self, var):
        """(value, computed from a kernel argument) or (_UNKNOWN, False)."""
        d = self.definition(var)
        if isinstance(d, ir.const_types + ir.global_types + ir.freevar_types):
            return d.value, False
        if isinstance(d, ir.arg_types):
            return self._argument(d.index, ())
        if _is_op(d, "getattr"):
            return self._attribute(d)
        operands = _OPERANDS.get(d.op) if isinstance(d, ir.expr_types) else None
        known = [self.value(x) for x in operands(d)] if operands is not None else [_NOT_KNOWN]
        if any(v is _UNKNOWN for v, _ in known):
            return _NOT_KNOWN
        values, dep = [v for v, _ in known], any(dep for _, dep in known)
        try:
            if d.op == "build_tuple":
                return tuple(values), dep
            if d.op.endswith("getitem") and isinstance(values[0], tuple):
                return values[0][d.index if d.op == "static_getitem" else values[1]], dep
            if d.op in ("binop", "unary") and d.fn in _ARITHMETIC and all(isinstance(
                    v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in values):
                return d.fn(*values), dep
        except (IndexError, TypeError, ArithmeticError):
            pass
        return _NOT_KNOWN

    def _attribute(self, expr):
        path, d = [expr.attr], self.definition(expr.value)
        while _is_op(d, "getattr"):
            path.insert(0, d.attr)
            d = self.definition(d.value)
        if isinstance(d, ir.arg_types):
            return self._argument(d.index, tuple(path))
        base, dep = self.value(expr.value)
        value = getattr(base, expr.attr, _UNKNOWN) if base is not _UNKNOWN else _UNKNOWN
        return (value, dep) if value is not _UNKNOWN else _NOT_KNOWN

    def _argument(self, index: int, path: tuple):
        if self.args is None or index >= len(self.args):
            return _NOT_KNOWN
        v = self.args[index]
        for attr in path:
            is_array = hasattr(v, "__cuda_array_interface__") or isinstance(v, np.ndarray)
            if attr.startswith("_") or is_array and attr not in ARRAY_ATTRIBUTES:
                return _NOT_KNOWN
            v = getattr(v, attr, _UNKNOWN)
        if v is _UNKNOWN or not (_is_host_constant(v) or _is_coopgen(v)):
            return _NOT_KNOWN
        self.keys.append((index, path))
        return v, True

    def callee(self, var):
        """The Python object a call calls, when the host knows it."""
        return None if (value := self.value(var)[0]) is _UNKNOWN else value


def _in_coopgen(module_name) -> bool:
    return f"{module_name}.".startswith("coopgen.")


def _is_coopgen(obj) -> bool:
    return isinstance(obj, host_objects.ENTRY_CLASSES) or callable(obj) and _in_coopgen(
        getattr(obj, "__module__", "") or "")


def _device_function_calling_primitives(obj) -> bool:
    """A ``@cuda.jit(device=True)`` function reading a name of coopgen's (globals, closure)."""
    options = getattr(obj, "targetoptions", None)
    fn = getattr(obj, "py_func", None)
    if not isinstance(options, dict) or not options.get("device") or fn is None \
            or options.get("inline") == "always":
        return False
    names, codes = set(), [fn.__code__]
    while codes:
        code = codes.pop()
        names |= set(code.co_names) | set(code.co_freevars)
        codes += [c for c in code.co_consts if isinstance(c, pytypes.CodeType)]
    values = [fn.__globals__.get(n) for n in names] + list(map(cell_value, fn.__closure__ or ()))
    return any(_is_coopgen(v) or isinstance(v, pytypes.ModuleType) and _in_coopgen(v.__name__)
               for v in values)


_NUMBA_ARRAYS = (_cuda.local.array, _cuda.shared.array)


def takes_constants(obj) -> bool:
    """Calls whose sizes, dtypes and template arguments may come from kernel arguments."""
    return _is_coopgen(obj) or obj in _NUMBA_ARRAYS


def _is_op(d, *ops) -> bool:
    """Whether IR definition ``d`` is an expression of one of ``ops``."""
    return isinstance(d, ir.expr_types) and d.op in ops


def _is_call(stmt) -> bool:
    return isinstance(stmt, ir.assign_types) and _is_op(stmt.value, "call")


@register_rewrite("before-inference")
class CoopgenRewrite(Rewrite):
    def match(self, func_ir, block, typemap, calltypes):
        cfg = launch_config()
        launched = cfg is not None and func_ir.func_id.func is getattr(cfg.dispatcher,
                                                                       "py_func", None)
        launch_args = (getattr(cfg, "args", None) or ()) if launched else None
        self.func_ir, self.block, self.changed = func_ir, block, False
        self.trace = _Trace(func_ir, launch_args)
        new = block.copy()
        new.clear()
        for index, stmt in enumerate(block.body):
            if _is_call(stmt):
                self._call(new, stmt, index)
            new.append(stmt)
        if self.trace.keys:
            depends_on(cfg.dispatcher, self.trace.keys)
        if launched and any(host_objects.is_host_object(a) for a in launch_args):
            host_objects.pass_host_objects()
        self.new_block = new
        return self.changed

    def apply(self):
        return self.new_block

    def _define(self, new, value, loc, name="$coopgen"):
        var = self.block.scope.redefine(name, loc)
        new.append(ir.Assign(value, var, loc))
        self.func_ir._definitions[var.name] = [value]
        return var

    def _constant(self, new, value, loc):
        """A variable holding ``value``; a tuple built from items (to type as literals)."""
        expr = ir.Expr.build_tuple([self._constant(new, v, loc) for v in value], loc) \
            if isinstance(value, tuple) else ir.Const(value, loc)
        return self._define(new, expr, loc, "$coopgen_launch")

    def _drop_callee(self, func):
        """A replaced function's lookup would still be typed: make it a plain constant."""
        for stmt in self._assignments(lambda s: s.target.name == func.name):
            if func.name.startswith("$"):
                self._replace_value(stmt, ir.Const(None, stmt.loc))

    def _assignments(self, test):
        return [s for s in self.block.body if isinstance(s, ir.assign_types) and test(s)]

    def _replace_value(self, stmt, value):
        stmt.value = value
        self.func_ir._definitions[stmt.target.name] = [value]
        self.changed = True

    def _redefine(self, definition, value):
        """The (first) assignment of ``definition`` now assigns ``value``."""
        for stmt in self._assignments(lambda s: s.value is definition)[:1]:
            self._replace_value(stmt, value)

    def _call(self, new, stmt, index):
        expr = stmt.value
        fdef = self.trace.definition(expr.func)
        if _is_op(fdef, "getitem", "static_getitem") and \
                takes_constants(self.trace.callee(fdef.value)):
            self._temp_storage_subscript(new, expr, fdef)
        callee = self.trace.callee(expr.func)
        if _device_function_calling_primitives(callee):
            # compiled once per signature, it would keep the first launch's block shape:
            # inlined (numba's inline pass runs next), its primitives are the kernel's
            callee.targetoptions["inline"] = "always"
        if not takes_constants(callee):
            return
        if callee in _NUMBA_ARRAYS:
            self._sized_numba_array(new, stmt, callee)
        if getattr(callee, "_coopgen_thread_data", False):
            self._thread_data(new, stmt, index)
            return
        if getattr(callee, "_coopgen_host_call", False):
            self._host_call(stmt, callee)
            return
        consts = {}
        for var in list(expr.args) + [v for _, v in expr.kws]:
            value, from_launch = self.trace.value(var)
            if isinstance(rejected := getattr(value, "_coopgen_rejected", None), str):
                raise ValueError(rejected)
            if isinstance(value, pytypes.FunctionType) and not _is_coopgen(value):
                d = self.trace.definition(var)  # its global now names its device function
                self._redefine(d, ir.Global(value.__name__, device_function(value), d.loc))
            if from_launch and _is_host_constant(value):
                consts[var.name] = self._constant(new, _plain(value), var.loc)
        if consts:
            expr.args = [consts.get(v.name, v) for v in expr.args]
            expr.kws = [(k, consts.get(v.name, v)) for k, v in expr.kws]
            self.changed = True

    def _sized_numba_array(self, new, stmt, callee):
        """numba's local/shared array passed to a primitive becomes coopgen's, whose type
        carries its size; others, and dynamic shared memory (shape 0), stay numba's."""
        expr = stmt.value
        shape = expr.args[0] if expr.args else dict(expr.kws).get("shape")
        value, _ = self.trace.value(shape) if shape is not None else _NOT_KNOWN
        local = callee is _cuda.local.array
        # a thread's own array as temp storage would give each thread its own copy: as
        # coopgen's local array the primitive can see that and refuse it
        if value is _UNKNOWN or value == 0 or not self._passed_to_primitive(
                stmt.target, as_storage=local):
            return
        self._drop_callee(expr.func)
        expr.func = self._array_function(new, local_array if local else shared_array, stmt.loc)
        self.changed = True

    def _array_function(self, new, array, loc):
        return self._define(new, ir.Global(f"coopgen_{array.__qualname__.replace('.', '_')}",
                                           array, loc), loc)

    def _passed_to_primitive(self, var, as_storage: bool = False) -> bool:
        """Whether ``var`` is an argument of a coopgen primitive (or of a method of an object
        one returned: ``histo.composite(items)``) other than its temp storage, whose size no
        primitive infers."""
        for stmt in (s for b in self.func_ir.blocks.values() for s in b.body if _is_call(s)):
            expr = stmt.value
            callee = self.trace.callee(expr.func)
            args = list(expr.args)
            if isinstance(callee, Entry) and callee.fixed and not as_storage:
                args = args[1:]  # maybe its storage: cuda.coop passes that first
            if var.name not in [v.name for v in args] + \
                    [v.name for k, v in expr.kws if k != "temp_storage" or as_storage]:
                continue
            fdef = self.trace.definition(expr.func)
            made = self.trace.definition(fdef.value) if _is_op(fdef, "getattr") else None
            if _is_coopgen(callee) or _is_op(made, "call") and \
                    _is_coopgen(self.trace.callee(made.func)):
                return True
        return False

    def _temp_storage_subscript(self, new, expr, fdef):
        """``prim[ts](...)`` -> ``prim(..., temp_storage=ts)``."""
        if any(k == "temp_storage" for k, _ in expr.kws):
            raise CoopgenTypeError(f"{self.trace.callee(fdef.value)!r}: cannot use both getitem "
                                   f"temp_storage syntax and temp_storage keyword")
        ts = fdef.index if fdef.op == "getitem" else fdef.index_var
        if ts is None:
            ts = self._define(new, ir.Const(fdef.index, expr.loc), expr.loc)
        expr.kws = list(expr.kws) + [("temp_storage", ts)]
        self._redefine(fdef, fdef.value)  # the subscript now just names the primitive
        expr.func = fdef.value
        self.changed = True

    def _host_call(self, stmt, callee):
        expr = stmt.value
        values = {}
        for k, var in list(enumerate(expr.args)) + list(expr.kws):
            value, _ = self.trace.value(var)
            if value is _UNKNOWN:
                which = f"argument {k + 1}" if isinstance(k, int) else f"{k}="
                raise CoopgenTypeError(
                    f"{getattr(callee, '__qualname__', callee)}: {which} must be known when "
                    f"the kernel compiles (a constant, a global, or a kernel argument of the "
                    f"launch)")
            values[k] = _plain(value)
        obj = callee(*[values[i] for i in range(len(expr.args))],
                     **{k: v for k, v in values.items() if not isinstance(k, int)})
        self._drop_callee(expr.func)
        self._replace_value(stmt, ir.Global(f"coopgen_{type(obj).__name__}", obj, expr.loc))

    def _thread_data(self, new, stmt, index):
        """``ThreadData(n, dtype=None)`` -> ``local.array(n, dtype)``."""
        expr = stmt.value
        kws, args = dict(expr.kws), list(expr.args)
        shape = args[0] if args else kws.pop("items_per_thread", None)
        dtype = args[1] if len(args) > 1 else kws.pop("dtype", None)
        if shape is None or len(args) > 2 or kws:
            raise CoopgenTypeError("coop.ThreadData: takes (items_per_thread, dtype=None)")
        array = local_array
        if dtype is None or isinstance(d := self.trace.definition(dtype), ir.const_types) \
                and d.value is None:
            root = self._first_use_source(stmt.target, index)
            dtype = self._define(new, ir.Expr.getattr(root, "dtype", stmt.loc), stmt.loc)
            array = thread_data_array  # its uses are checked to agree with that dtype
        func = self._array_function(new, array, stmt.loc)
        self._drop_callee(expr.func)
        self._replace_value(stmt, ir.Expr.call(func, [shape, dtype], (), stmt.loc))

    def _called(self, func):
        """What a call calls, seen through cuda.coop's ``prim[temp_storage]`` subscript (which
        a later statement's rewrite may not have removed yet)."""
        fdef = self.trace.definition(func)
        return self.trace.callee(fdef.value if _is_op(fdef, "getitem", "static_getitem")
                                 else func)

    def _first_use_source(self, target, index):
        """The array, defined before ThreadData ``target``, whose dtype it takes: another
        array (or a slice or element of one) of the first coopgen call using ``target``."""
        blocks = self.func_ir.blocks
        before = {s.target.name for s in self.block.body[:index] if isinstance(s, ir.assign_types)}
        for stmt in (s for label in sorted(blocks) for s in blocks[label].body if _is_call(s)):
            used = list(stmt.value.args) + [v for _, v in stmt.value.kws]
            if not takes_constants(self._called(stmt.value.func)) or \
                    not any(v.name == target.name for v in used):
                continue
            for root in used:
                d = self.trace.definition(root)
                while _is_op(d, "getitem", "static_getitem"):  # d_in of d_in[base:]
                    root, d = d.value, self.trace.definition(d.value)
                if root.name != target.name and (isinstance(d, ir.arg_types) or _is_op(
                        d, "call") and root.name in before):
                    return root
            raise CoopgenTypeError(
                f"coop.ThreadData: cannot infer the dtype of {target.name!r} from its first "
                f"use (line {stmt.loc.line}): no other array there is defined before it. "
                f"Pass dtype=, e.g. coop.ThreadData(4, dtype=d_in.dtype)")
        raise CoopgenTypeError(f"coop.ThreadData: {target.name!r} is never passed to a "
                               f"primitive, so its dtype cannot be inferred; pass dtype=")


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
            values.append(v if _is_host_constant(v) else id(v))
        return base(cfg) + tuple(values)

    dispatcher._launch_config_key = launch_key
