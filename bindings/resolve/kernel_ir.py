"""The rewrite both backends make of a kernel's IR before typing, for what typing cannot see,
on calls of coopgen objects: ``prim[ts](...)`` is ``prim(..., temp_storage=ts)``; objects made
from constants (``coop.TempStorage(n)``) are made on the host; ``ThreadData(n)`` is
``local.array(n, dtype)``. The two compilers' IR classes are copies of one another, so this
works on either's, given as ``IrClasses``; the values the host knows are traced (``Trace``),
from the launch's kernel arguments too where a backend gives them."""
import collections
import dataclasses
import operator
import types

import numpy as np

from ..model.errors import CoopgenError
from ..types.desc import host_dtype
from .object_forms import ObjectForms

#: Attributes of an array argument known on the host; other objects' public attributes are too.
ARRAY_ATTRIBUTES = ("shape", "size", "ndim")
#: The integer arithmetic the host does for the kernel, and the operands of each expression
#: whose value it may compute from theirs.
_ARITHMETIC = (operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
               operator.lshift, operator.rshift, operator.neg)
_OPERANDS = {"build_tuple": lambda d: d.items, "static_getitem": lambda d: (d.value,),
             "getitem": lambda d: (d.value, d.index), "binop": lambda d: (d.lhs, d.rhs),
             "unary": lambda d: (d.value,)}
UNKNOWN = object()
NOT_KNOWN = (UNKNOWN, False)
_UNSUPPORTED = {}  # a backend's error class -> the same, a NotImplementedError too


@dataclasses.dataclass(frozen=True)
class IrClasses:
    """A compiler's IR: the classes of constants, globals (and free variables), arguments,
    expressions and assignments (tuples, for isinstance), their constructors, and
    ``definition(func_ir, var)``: a variable's single definition or None."""
    const: tuple
    glob: tuple
    arg: tuple
    expr: tuple
    assign: tuple
    Assign: type
    Const: type
    Global: type
    Expr: type
    definition: object


def is_host_constant(v) -> bool:
    """Values a kernel may be specialised on: integers, booleans, strings and tuples of them."""
    return all(map(is_host_constant, v)) if isinstance(v, tuple) else \
        isinstance(v, (int, bool, str, np.integer, np.bool_))


def plain(v):
    """numpy scalars as Python ones (IR constants type as literals only then)."""
    return tuple(map(plain, v)) if isinstance(v, tuple) else \
        v.item() if isinstance(v, np.generic) else v


def in_coopgen(obj) -> bool:
    """A callable of coopgen's (its primitives, two-phase objects, cuda.coop's helpers)."""
    return callable(obj) and f"{getattr(obj, '__module__', '') or ''}.".startswith("coopgen.")


def is_op(ir, d, *ops) -> bool:
    """Whether IR definition ``d`` is an expression of one of ``ops``."""
    return isinstance(d, ir.expr) and d.op in ops


def is_call(ir, stmt) -> bool:
    return isinstance(stmt, ir.assign) and is_op(ir, stmt.value, "call")


class Trace:
    """Values of IR variables that the host knows: constants, globals and, during a launch,
    what is computed from the kernel's arguments (``launch_args``; ``keeps(v)``: whether an
    argument's value other than a constant may be read)."""

    def __init__(self, ir: IrClasses, func_ir, launch_args=None, keeps=lambda v: False):
        self.ir, self.func_ir = ir, func_ir
        self.args = launch_args  # None: no launch (or not the launched kernel)
        self.keeps = keeps
        self.keys: list = []  # (argument index, attribute path) the values depend on

    def definition(self, var):
        return self.ir.definition(self.func_ir, var)

    def value(self, var):
        """(value, computed from a kernel argument) or (UNKNOWN, False)."""
        d, ir = self.definition(var), self.ir
        if isinstance(d, ir.const + ir.glob):
            return d.value, False
        if isinstance(d, ir.arg):
            return self._argument(d.index, ())
        if is_op(ir, d, "getattr"):
            return self._attribute(d)
        if is_op(ir, d, "call") and getattr(callee := self.callee(d.func), "_coopgen_host_call",
                                            False):
            return self.host_object(d, callee)[0], False  # (UNKNOWN, False): not known
        operands = _OPERANDS.get(d.op) if isinstance(d, ir.expr) else None
        known = [self.value(x) for x in operands(d)] if operands is not None else [NOT_KNOWN]
        if any(v is UNKNOWN for v, _ in known):
            return NOT_KNOWN
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
        return NOT_KNOWN

    def _attribute(self, expr):
        path, d = [expr.attr], self.definition(expr.value)
        while is_op(self.ir, d, "getattr"):
            path.insert(0, d.attr)
            d = self.definition(d.value)
        if isinstance(d, self.ir.arg):
            return self._argument(d.index, tuple(path))
        base, dep = self.value(expr.value)
        value = getattr(base, expr.attr, UNKNOWN) if base is not UNKNOWN else UNKNOWN
        return (value, dep) if value is not UNKNOWN else NOT_KNOWN

    def _argument(self, index: int, path: tuple):
        if self.args is None or index >= len(self.args):
            return NOT_KNOWN
        v = self.args[index]
        for attr in path:
            is_array = hasattr(v, "__cuda_array_interface__") or isinstance(v, np.ndarray)
            if attr.startswith("_") or is_array and attr not in ARRAY_ATTRIBUTES:
                return NOT_KNOWN
            v = getattr(v, attr, UNKNOWN)
        if v is UNKNOWN or not (is_host_constant(v) or self.keeps(v)):
            return NOT_KNOWN
        self.keys.append((index, path))
        return v, True

    def host_object(self, expr, callee):
        """(what a call made on the host, ``coop.TempStorage(n)``, gives, None), or (UNKNOWN,
        the argument not known): made once per call, so each block's rewrite sees it."""
        made = self.func_ir.__dict__.setdefault("_coopgen_host_objects", {})
        if made.get(id(expr), (None,))[0] is expr:
            return made[id(expr)][1], None
        values = {}
        for k, var in list(enumerate(expr.args)) + list(expr.kws):
            values[k] = plain(self.value(var)[0])
            if values[k] is UNKNOWN:
                return UNKNOWN, k
        obj = callee(*[values[i] for i in range(len(expr.args))],
                     **{k: v for k, v in values.items() if not isinstance(k, int)})
        made[id(expr)] = (expr, obj)
        return obj, None

    def callee(self, var):
        """The Python object a call calls, when the host knows it."""
        return None if (value := self.value(var)[0]) is UNKNOWN else value


class CallRewrite(ObjectForms):
    """The rewrite of one block's calls (``func_ir``, ``block``, ``trace``, ``changed``; new
    statements go to ``new``, the block's statements before the one rewritten). A backend
    gives its IR classes, its error class, its array functions (``arrays``: "local" and
    "thread_data", a local array whose uses must agree on its dtype) and which callees take
    constants."""
    ir: IrClasses
    error = CoopgenError
    arrays: dict = {}
    #: what a host-made object's arguments may be (in its error)
    known_values = "a constant, a global, or a kernel argument of the launch"

    def takes_constants(self, obj) -> bool:
        raise NotImplementedError

    def device_function(self, fn):
        """A plain Python function as the backend's device function."""
        raise NotImplementedError

    def python_argument(self, var, value) -> None:
        """An argument of a coopgen call: cuda.coop's objects coopgen refuses are refused; a
        plain Python function (an operator) is compiled as a device function."""
        if isinstance(rejected := getattr(value, "_coopgen_rejected", None), str):
            raise ValueError(rejected)
        if isinstance(value, types.FunctionType) and not in_coopgen(value):
            d = self.trace.definition(var)  # its global now names its device function
            self._redefine(d, self.ir.Global(value.__name__, self.device_function(value),
                                             d.loc))

    def rewrite_call(self, new, stmt, index) -> bool:
        """cuda.coop's forms of a call: True when the call is rewritten whole."""
        expr = stmt.value
        fdef = self.trace.definition(expr.func)
        if is_op(self.ir, fdef, "getitem", "static_getitem") and \
                self.takes_constants(self.trace.callee(fdef.value)):
            self._temp_storage_subscript(new, expr, fdef)
        callee = self.trace.callee(expr.func)
        kws = dict(expr.kws)
        if getattr(getattr(callee, "shape", None), "offset_first", False) and expr.args \
                and "offset" in kws:  # f(src, ..., offset=n) -> f(src[n:], ...)
            expr.args = [self._from_offset(new, expr.args[0], kws.pop("offset"), expr.loc),
                         *expr.args[1:]]
            expr.kws, self.changed = list(kws.items()), True
        declared = [(k, v) for k, v in kws.items() if getattr(callee, "shape", None) is not None
                    and callee.shape.declared is not None and expr.args and
                    hasattr(self.trace.value(v)[0], "op_class")]
        for k, v in declared:  # _block.exclusive_sum(x, out, state, prefix_op=Stateful): its
            kws[k] = expr.args[-1]  # state is the last positional, the operator's 1-item array
            expr.args, expr.kws, self.changed = expr.args[:-1], list(kws.items()), True
            self._drop_unused([v])
        if getattr(callee, "_coopgen_shared_array", False):  # TempStorage.reserve(n, dtype)
            self._reserve(new, stmt, fdef)
            return True
        if getattr(callee, "_coopgen_thread_data", False):
            self._thread_data(new, stmt, index)
            return True
        if getattr(callee, "_coopgen_fused_call", False):
            self._fused_call(new, stmt, callee)
            return True
        self._positive_counts(callee, expr)
        if getattr(callee, "_coopgen_host_call", False):
            self._host_call(new, stmt, callee)
            return True
        return False

    def _reserve(self, new, stmt, fdef):
        """``storage.reserve(n, dtype, alignment=None)`` (or through a copy of the method)
        -> ``reserved(n, dtype, alignment, storage)``: its array in the storage."""
        expr, loc = stmt.value, stmt.loc
        kws, args = dict(expr.kws), list(expr.args)
        for name in ("num_elems", "dtype", "alignment")[len(args):]:
            if name not in kws:  # a later keyword without this one stays in kws: refused
                break
            args.append(kws.pop(name))
        if kws or not 2 <= len(args) <= 3 or not is_op(self.ir, fdef, "getattr"):
            raise self.error("TempStorage.reserve: takes (num_elems, dtype, alignment=None), "
                             "called on a coop.TempStorage")
        count = self.trace.value(args[0])[0]
        if isinstance(count, (int, np.integer)):  # a constant expression: its value
            args[0] = self._define(new, self.ir.Const(int(count), loc), loc)
        if len(args) == 2:
            args.append(self._define(new, self.ir.Const(None, loc), loc))
        func = self._array_function(new, self.arrays["reserved"], loc)
        self._replace_value(stmt, self.ir.Expr.call(func, [*args, fdef.value], (), loc))
        self._drop_unused([expr.func])

    def _from_offset(self, new, source, offset, loc):
        """``source[offset:]``."""
        none = self._define(new, self.ir.Const(None, loc), loc)
        slice_fn = self._define(new, self.ir.Global("slice", slice, loc), loc)
        index = self._define(new, self.ir.Expr.call(slice_fn, [offset, none], (), loc), loc)
        return self._define(new, self.ir.Expr.getitem(source, index, loc), loc)

    def _define(self, new, value, loc, name="$coopgen"):
        var = self.block.scope.redefine(name, loc)
        new.append(self.ir.Assign(value, var, loc))
        self.func_ir._definitions[var.name] = [value]
        return var

    def raised(self, e: CoopgenError):
        """``e`` as this backend's error; a NotImplementedError stays one."""
        return (self.unsupported if isinstance(e, NotImplementedError) else self.error)(str(e))

    def unsupported(self, message: str):
        """This backend's error that is a NotImplementedError too (cuda.coop's type for a form
        outside what it serves)."""
        cls = _UNSUPPORTED.get(self.error) or _UNSUPPORTED.setdefault(self.error, type(
            self.error.__name__, (self.error, NotImplementedError),
            {"__module__": self.error.__module__}))
        return cls(message)

    def _drop_callee(self, func):
        """A replaced function's lookup would still be typed: make it a plain constant."""
        for stmt in self._assignments(lambda s: s.target.name == func.name):
            if func.name.startswith("$") or self._only_called(func.name):
                self._replace_value(stmt, self.ir.Const(None, stmt.loc))

    def _only_called(self, name: str) -> bool:
        """Whether a variable is read only as the function of calls (a temporary of inlined
        code, whose name lost its ``$``)."""
        for block in self.func_ir.blocks.values():
            for stmt in block.body:
                value = getattr(stmt, "value", None)
                func = value.func if is_op(self.ir, value, "call") else None
                reads = [v.name for v in stmt.list_vars()
                         if v is not func and v is not getattr(stmt, "target", None)]
                if name in reads:
                    return False
        return True

    def _assignments(self, test):
        return [s for s in self.block.body if isinstance(s, self.ir.assign) and test(s)]

    def _replace_value(self, stmt, value):
        stmt.value = value
        self.func_ir._definitions[stmt.target.name] = [value]
        self.changed = True

    def _redefine(self, definition, value):
        """The (first) assignment of ``definition`` now assigns ``value``."""
        for stmt in self._assignments(lambda s: s.value is definition)[:1]:
            self._replace_value(stmt, value)

    def _array_function(self, new, array, loc):
        return self._define(new, self.ir.Global(
            f"coopgen_{array.__qualname__.replace('.', '_')}", array, loc), loc)

    def _temp_storage_subscript(self, new, expr, fdef):
        """``prim[ts](...)`` -> ``prim(..., temp_storage=ts)``."""
        if any(k == "temp_storage" for k, _ in expr.kws):
            raise self.error(f"{self.trace.callee(fdef.value)!r}: cannot use both getitem "
                             f"temp_storage syntax and temp_storage keyword")
        ts = fdef.index if fdef.op == "getitem" else fdef.index_var
        if ts is None:
            ts = self._define(new, self.ir.Const(fdef.index, expr.loc), expr.loc)
        expr.kws = list(expr.kws) + [("temp_storage", ts)]
        self._redefine(fdef, fdef.value)  # the subscript now just names the primitive
        expr.func = fdef.value
        self.changed = True

    def _host_call(self, new, stmt, callee):
        expr = stmt.value
        obj, k = self.trace.host_object(expr, callee)
        if obj is UNKNOWN:
            which = f"argument {k + 1}" if isinstance(k, int) else f"{k}="
            raise self.error(f"{getattr(callee, '__qualname__', callee)}: {which} must be known "
                             f"when the kernel compiles ({self.known_values})")
        self._drop_callee(expr.func)
        self._replace_value(stmt, self.ir.Global(f"coopgen_{type(obj).__name__}", obj,
                                                 expr.loc))
        self._drop_unused(expr.list_vars())
        if getattr(getattr(obj, "reserve", None), "_coopgen_shared_array", False):
            self._storage_items(new, stmt.target.name, obj, expr.loc)

    def _storage_items(self, new, name, storage, loc):
        """``ts[i]`` of a TempStorage ``ts``: its ``size_in_bytes`` bytes, a uint8 shared array
        of their own beside the primitives' scratch (as ``ts.reserve(size, uint8)``)."""
        uses = [s for b in self.func_ir.blocks.values() for s in b.body
                if type(s).__name__ in ("SetItem", "StaticSetItem") and s.target.name == name
                or isinstance(s, self.ir.assign) and is_op(self.ir, s.value, "getitem",
                                                           "static_getitem")
                and s.value.value.name == name]
        if not uses:
            return
        if storage.size is None:
            raise self.error("coop.TempStorage: indexing it needs its size_in_bytes")
        args = [self._define(new, self.ir.Const(storage.size, loc), loc),
                self._define(new, self.ir.Global("uint8", np.uint8, loc), loc)]
        kws = [("alignment", self._define(new, self.ir.Const(storage.alignment, loc), loc))]
        array = self._define(new, self.ir.Expr.call(self._array_function(
            new, self.arrays["shared"], loc), args, kws if storage.alignment else (), loc), loc)
        for s in uses:
            if isinstance(s, self.ir.assign):
                s.value.value = array
            else:
                s.target = array

    def _drop_unused(self, variables):
        """What computed a host-made object's arguments is done on the host: variables defined
        once and used nowhere else go (typing ``sort.temp_storage_bytes`` would fail)."""
        uses = collections.Counter(v.name for b in self.func_ir.blocks.values()
                                   for s in b.body for v in s.list_vars())
        uses.subtract(s.target.name for b in self.func_ir.blocks.values() for s in b.body
                      if isinstance(s, self.ir.assign))
        while variables:
            var = variables.pop()
            if uses[var.name] > 0 or len(self.func_ir._definitions.get(var.name, ())) > 1:
                continue
            for stmt in self._assignments(lambda s: s.target.name == var.name
                                          and not isinstance(s.value, self.ir.arg)):
                inputs = [v for v in stmt.list_vars() if v.name != var.name]
                uses.subtract(v.name for v in inputs)
                variables += inputs
                self._replace_value(stmt, self.ir.Const(None, stmt.loc))

    def _thread_data(self, new, stmt, index):
        """``ThreadData(n, dtype=None)`` -> ``local.array(n, dtype)``; ``.items_per_thread``
        is its ``size``."""
        expr, target = stmt.value, stmt.target.name
        kws, args = dict(expr.kws), list(expr.args)
        shape = args[0] if args else kws.pop("items_per_thread", None)
        dtype = args[1] if len(args) > 1 else kws.pop("dtype", None)
        align = kws.pop("alignment", kws.pop("alignas", None))
        if shape is None or len(args) > 2 or kws:
            raise self.error("coop.ThreadData: takes (items_per_thread, dtype=None), and "
                             "alignment= by keyword")
        if self.trace.value(shape)[0] is UNKNOWN and not isinstance(
                self.trace.definition(shape), self.ir.arg):  # a kernel argument: literal dispatch
            raise self.error("coop.ThreadData: items_per_thread must be known when the kernel "
                             "compiles: a constant, a global or a kernel argument (one kernel "
                             "per value); got a value computed at run time")
        array = self.arrays["local"]
        given = self.trace.value(dtype)[0] if dtype is not None else None
        if given in (int, float):  # cuda.coop: Python's int and float are 32-bit
            dtype = self._define(new, self.ir.Global(
                "dtype", np.int32 if given is int else np.float32, stmt.loc), stmt.loc)
        if dtype is None or given is None:  # not given, or None (a constant or a global)
            root, is_dtype = self._first_use_source(stmt.target, index)
            dtype = self._define(new, self.ir.Global("dtype", root, stmt.loc) if is_dtype else
                                 self.ir.Expr.getattr(root, "dtype", stmt.loc), stmt.loc)
            array = self.arrays["thread_data"]  # its uses are checked to agree with that dtype
        func = self._array_function(new, array, stmt.loc)
        self._drop_callee(expr.func)
        self._replace_value(stmt, self.ir.Expr.call(
            func, [shape, dtype] + ([align] if align is not None else []), (), stmt.loc))
        for use in (s for b in self.func_ir.blocks.values() for s in b.body):  # its attribute
            if isinstance(use, self.ir.assign) and is_op(self.ir, use.value, "getattr") and \
                    use.value.attr == "items_per_thread" and use.value.value.name == target:
                self._replace_value(use, self.ir.Expr.getattr(use.value.value, "size", use.loc))

    def _called(self, func):
        """What a call calls, seen through cuda.coop's ``prim[temp_storage]`` subscript (which
        a later statement's rewrite may not have removed yet)."""
        fdef = self.trace.definition(func)
        return self.trace.callee(fdef.value if is_op(self.ir, fdef, "getitem", "static_getitem")
                                 else func)

    def _copies(self, name: str) -> set:
        """``name`` and the variables that copy it (``b = a``), through copies of copies."""
        names, grew = {name}, True
        copies = [(s.target.name, s.value.name) for b in self.func_ir.blocks.values()
                  for s in b.body if isinstance(s, self.ir.assign) and
                  type(s.value).__name__ == "Var"]
        while grew:
            grew = False
            for new, old in copies:
                if old in names and new not in names:
                    names.add(new)
                    grew = True
        return names

    def _first_use_source(self, target, index):
        """(The array, defined before ThreadData ``target``, whose dtype it takes, False), from
        its first use: the array an item written into it comes from (``items[i] = d_in[j]``),
        or another array (or a slice or element of one) of the first coopgen call using it;
        or (a dtype, True) where an item written is cast to one (``items[i] = int32(x)``)."""
        ir, blocks = self.ir, self.func_ir.blocks
        here = next(label for label, b in blocks.items() if b is self.block)
        before = {s.target.name for label, b in blocks.items() if label < here
                  for s in b.body if isinstance(s, ir.assign)}
        before |= {s.target.name for s in self.block.body[:index] if isinstance(s, ir.assign)}

        names = self._copies(target.name)  # inlined device functions pass it on in copies

        def source(root):
            d = self.trace.definition(root)
            while is_op(ir, d, "getitem", "static_getitem"):  # d_in of d_in[base:]
                root, d = d.value, self.trace.definition(d.value)
            if root.name not in names and (isinstance(d, ir.arg) or is_op(
                    ir, d, "call") and root.name in before and not getattr(
                    self._called(d.func), "_coopgen_group_factory", False)):
                return root
            return None

        for stmt in (s for label in sorted(blocks) for s in blocks[label].body):
            if type(stmt).__name__ in ("SetItem", "StaticSetItem") and \
                    stmt.target.name in names:
                d = self.trace.definition(stmt.value)
                if is_op(ir, d, "getitem", "static_getitem") and (root := source(d.value)):
                    return root, False
                cast = self.trace.callee(d.func) if is_op(ir, d, "call") else None
                if cast not in (int, float, bool, None) and not isinstance(cast, str) \
                        and host_dtype(cast) is not None:
                    return cast, True
                continue
            if not is_call(ir, stmt):
                continue
            callee = self._called(stmt.value.func)
            args = list(stmt.value.args)
            used = args + [v for _, v in stmt.value.kws]
            if not self.takes_constants(callee) or not any(v.name in names for v in used):
                continue
            if getattr(callee, "_coopgen_group_call", False):  # its arrays are positional
                used = args[1:]
            for root in used:
                if (found := source(root)) is not None:
                    return found, False
            raise self.error(
                f"coop.ThreadData: cannot infer the dtype of {target.name!r} from its first "
                f"use (line {stmt.loc.line}): no other array there is defined before it. "
                f"Pass dtype=, e.g. coop.ThreadData(4, dtype=d_in.dtype)")
        raise self.error(f"coop.ThreadData: {target.name!r} is never passed to a "
                         f"primitive, so its dtype cannot be inferred; pass dtype=")
