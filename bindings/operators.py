"""Operators: CUB's built-in functors by name, or Python device functions wrapped in a C++ functor.

A Python operator is a ``@cuda.jit(device=True)`` function. At lowering it is compiled to LTO-IR
with a C ABI under a name derived from the function and its signature, and the shim declares
it and wraps it in a functor struct of the shape CUB expects for that parameter kind. Stateful
operators are ``(function, state_array)`` pairs: the functor holds a pointer to the state, which
the function receives first (as a pointer it can index).
"""
from __future__ import annotations

import hashlib
import operator
from dataclasses import dataclass

import numpy as np

from numba.cuda import types

from numba.cuda.cudadrv.linkable_code import LTOIR

from .ctypes_map import udt_layout
from .errors import CoopgenTypeError
from .shimcall import _current_arch

#: Built-in functor names per parameter kind -> C++ functor expression (cuda.coop's names too).
_PLUS, _TIMES = "::cuda::std::plus<>{}", "::cuda::std::multiplies<>{}"
_MIN, _MAX = "::cuda::minimum<>{}", "::cuda::maximum<>{}"
_AND, _OR, _XOR = "::cuda::std::bit_and<>{}", "::cuda::std::bit_or<>{}", "::cuda::std::bit_xor<>{}"
_ARITH = {"+": _PLUS, "add": _PLUS, "sum": _PLUS, "plus": _PLUS,
          "*": _TIMES, "mul": _TIMES, "multiplies": _TIMES,
          "min": _MIN, "minimum": _MIN, "max": _MAX, "maximum": _MAX,
          "&": _AND, "bit_and": _AND, "|": _OR, "bit_or": _OR, "^": _XOR, "bit_xor": _XOR}
#: numpy's and the operator module's functions that name a built-in.
FUNCTION_NAMES = {np.add: "+", np.multiply: "*", np.minimum: "min", np.maximum: "max",
                  np.bitwise_and: "&", np.bitwise_or: "|", np.bitwise_xor: "^",
                  operator.add: "+", operator.mul: "*", operator.and_: "&", operator.or_: "|",
                  operator.xor: "^", min: "min", max: "max"}
_COMPARE = {"<": "::cuda::std::less<>{}", "less": "::cuda::std::less<>{}",
            ">": "::cuda::std::greater<>{}", "greater": "::cuda::std::greater<>{}"}
_EQUALITY = {"!=": "::cuda::std::not_equal_to<>{}", "==": "::cuda::std::equal_to<>{}"}
BUILTINS = {
    "ReductionOp": _ARITH, "ScanOp": _ARITH, "CompareOp": _COMPARE, "FlagOp": _EQUALITY,
    "DifferenceOpT": {"-": "::cuda::std::minus<>{}", **_ARITH},
}

#: Python arities accepted per kind (the state pointer of a stateful operator not counted).
#: (For record dtypes, operators that return a value take one more argument: the output.)
ARITY = {"ReductionOp": (2, 3), "ScanOp": (2, 3), "CompareOp": (2,), "FlagOp": (2, 3),
         "DifferenceOpT": (2, 3), "DigitExtractorT": (1,), "CountsCallback": (1,),
         "BlockPrefixCallbackOp": (1, 2)}


@dataclass(frozen=True)
class Operator:
    kind: str  # the C++ parameter type: ReductionOp, ScanOp, ..., BlockPrefixCallbackOp
    param: str  # the parameter name, for messages
    builtin: str | None  # C++ functor expression for built-ins
    function: object | None  # the numba dispatcher of a Python device function
    state: types.Type | None  # the state array type of a stateful operator
    arity: int
    fields: tuple[str, ...] = ()  # a decomposer: the key's fields, most significant first

    @property
    def state_ctype(self) -> str:
        return "void*" if self.state is not None else ""

    def symbol(self, argtypes: tuple) -> str:
        """C ABI name of the compiled device function: from what it is, not a counter."""
        fn = self.function.py_func
        # Closure values too: functions made by one factory share their code, not what they
        # captured, and one kernel may use several of them.
        h = hashlib.sha256(repr((_function_identity(fn), tuple(str(a) for a in argtypes)))
                           .encode()).hexdigest()[:16]
        return f"coopgen_op_{fn.__name__}_{h}"


def _function_identity(fn, depth: int = 0) -> tuple:
    """What a Python function compiles to: its code and what its closure captured (device
    functions by their own identity). Two closures made by one factory share their code; the
    captured values tell them apart, so one kernel may use both."""
    code = fn.__code__
    captured = []
    for cell in fn.__closure__ or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            value = None
        inner = getattr(value, "py_func", None)
        captured.append(_function_identity(inner, depth + 1) if inner is not None and depth < 8
                        else repr(value))
    return (fn.__module__, fn.__qualname__, code.co_code, code.co_consts, tuple(captured))


def _dispatcher_of(ty):
    return getattr(ty, "dispatcher", None)


def identity_of(op_ty, dtype) -> object | None:
    """The identity of a built-in operator for ``dtype`` as a numpy scalar (0 for + | ^, 1 for
    *, the dtype's max for min and min for max, all ones for &); None where there is none to
    give. cuda.coop seeds scans with Python functions from 0, which is wrong for any function
    whose identity is not 0 (a product, a max of negatives): those need initial_value=."""
    if not isinstance(dtype, (types.Integer, types.Float)):
        return None
    np_type = np.dtype(str(dtype)).type
    info = np.iinfo(np_type) if isinstance(dtype, types.Integer) else np.finfo(np_type)
    named = _builtin_function_name(op_ty)
    if named is None and isinstance(op_ty, types.StringLiteral):
        named = op_ty.literal_value
    functor = _ARITH.get(named) if named is not None else None
    if functor is None:
        return None
    table = {_PLUS: 0, _OR: 0, _XOR: 0, _TIMES: 1, _MIN: info.max, _MAX: info.min,
             _AND: -1 if isinstance(dtype, types.Integer) and dtype.signed else info.max}
    if functor == _AND and isinstance(dtype, types.Float):
        return None
    return np_type(table[functor])


def _builtin_function_name(ty) -> str | None:
    """``np.add``, ``operator.mul``, ... passed as an operator: the built-in they name."""
    key = getattr(ty, "typing_key", None)
    try:
        return FUNCTION_NAMES.get(key)
    except TypeError:  # an unhashable key names no built-in
        return None


def as_operator(prim: str, p, ty) -> Operator | None:
    """The Operator a call passes for parameter ``p`` (None when ``ty`` is not an operator)."""
    kind = p.base
    if kind == "DecomposerT":
        return _decomposer(prim, p, ty)
    state = None
    if isinstance(ty, types.BaseTuple) and len(ty) == 2 and _dispatcher_of(ty[0]) is not None \
            and isinstance(ty[1], types.Array):
        fn_ty, state = ty[0], ty[1]
    elif p.role == "prefix_callback" and isinstance(ty, types.Array) \
            and str(ty.dtype) in STATEFUL_FUNCTIONS:
        # cuda.coop's spelling: the state array alone; its dtype names the function (for
        # prefix callbacks only: any other operator given an array is a wrong call)
        disp = STATEFUL_FUNCTIONS[str(ty.dtype)]
        return Operator(kind, p.name, None, disp, ty, disp.py_func.__code__.co_argcount - 1)
    else:
        fn_ty = ty
    named = _builtin_function_name(fn_ty)
    if isinstance(fn_ty, types.StringLiteral) or named is not None:
        table = BUILTINS.get(kind, {})
        name = named if named is not None else fn_ty.literal_value
        if name not in table:
            allowed = ", ".join(repr(k) for k in table) or "none (pass a device function)"
            raise CoopgenTypeError(f"{prim}: unknown {p.name}={name!r}; built-ins: {allowed}, or "
                                   f"a @cuda.jit(device=True) function")
        return Operator(kind, p.name, table[name], None, None, 0)
    disp = _dispatcher_of(fn_ty)
    if disp is None:
        return None
    code = disp.py_func.__code__
    n = code.co_argcount - (1 if state is not None else 0)
    allowed = ARITY.get(kind, (2,))
    if n not in allowed:
        want = " or ".join(str(a) for a in allowed)
        extra = " plus the state pointer" if state is not None else ""
        raise CoopgenTypeError(f"{prim}: {p.name}={disp.py_func.__name__} takes {n} "
                               f"argument(s){extra}; a {kind} takes {want}")
    return Operator(kind, p.name, None, disp, state, n)


#: numba type (its name) of a stateful operator's state -> the device function.
STATEFUL_FUNCTIONS: dict = {}


class StatefulFunction:
    """cuda.coop's stateful operator: ``op_class.__call__(state_ptr, value)`` is the function
    and ``numba_type`` its state's type. In a kernel the state is an array of one
    ``numba_type`` (``coop.local.array(1, dtype=numba_type)``) passed as the operator
    (``prefix_op=state``); the function gets a pointer to it, updates ``state_ptr[0]`` and
    returns its result. Registering a second function for the same state type replaces the
    first."""

    def __init__(self, op_class, numba_type, name=None):
        from numba import cuda

        call = getattr(op_class, "__call__", None)
        if call is None or not hasattr(call, "__code__"):
            raise TypeError(f"StatefulFunction: {op_class!r} has no Python __call__")
        self.op_class = op_class
        self.numba_type = numba_type
        self.name = name or getattr(op_class, "__name__", "stateful_function")
        self.function = cuda.jit(device=True)(call)
        STATEFUL_FUNCTIONS[str(numba_type)] = self.function


def device_function(fn):
    """A plain Python function used as an operator, compiled as a device function (once)."""
    from numba import cuda

    disp = _DEVICE_FUNCTIONS.get(fn)
    if disp is None:
        disp = _DEVICE_FUNCTIONS[fn] = cuda.jit(device=True)(fn)
    return disp


_DEVICE_FUNCTIONS: dict = {}


def _decomposer(prim: str, p, ty) -> Operator | None:
    """CUB's decomposer returns a tuple of references to the key's members. From Python it is
    the tuple of field names of the record key to sort by, most significant first."""
    names = []
    items = list(ty) if isinstance(ty, types.BaseTuple) else [ty]
    for t in items:
        if isinstance(t, types.StringLiteral):
            names.append(t.literal_value)
        elif _dispatcher_of(t) is not None:
            raise CoopgenTypeError(
                f"{prim}: {p.name} must name the key's fields, e.g. ('a', 'b'): a decomposer "
                f"returns references to the key's members, and a device function returns "
                f"values, not references")
        else:
            return None
    if not names:
        return None
    return Operator("DecomposerT", p.name, None, None, None, 0, tuple(names))


# --- at lowering: the functor's C signature, and the compiled Python function ---------

def operator_signatures(prim: str, r) -> dict[int, tuple]:
    """(argtypes, restype) of each Python operator, from the kind of functor CUB expects.
    Raises CoopgenTypeError for an operator whose arity does not fit the dtypes."""
    first_type = r.cls.value_type.name if r.cls.value_type else None
    dtypes = argument_dtypes(r)
    out = {}
    for i, b in enumerate(r.bindings):
        op = b.operator
        if op is None or op.function is None:
            continue
        t = dtypes.get(first_type)
        kind = op.kind
        if kind in ("ReductionOp", "ScanOp"):
            sig = ((t, t), t)
        elif kind == "CompareOp":
            k = dtypes.get("KeyT", t)
            sig = ((k, k), types.boolean)
        elif kind == "FlagOp":
            sig = ((t, t, types.int32)[:op.arity], types.boolean)
        elif kind == "DifferenceOpT":
            o = dtypes.get("OutputType", dtypes.get("OutputT", t))
            sig = ((t, t), o)
        elif kind == "DigitExtractorT":
            sig = ((dtypes.get("UnsignedBits"),), types.uint32)
        elif kind == "CountsCallback":
            sig = ((types.CPointer(types.int32),), types.none)
        else:  # BlockPrefixCallbackOp
            sig = ((t,), t)
        if udt_layout(sig[1]) is not None:
            # a user-defined struct type: cuda.coop's op(out, a, b) on pointers, writing out[0]
            if op.arity != len(sig[0]) + 1:
                raise CoopgenTypeError(
                    f"{prim}: {op.param}={op.function.py_func.__name__} works on {sig[1]}: "
                    f"it must take {len(sig[0]) + 1} pointers, op(out, a, b), and write its "
                    f"result to out[0]")
            sig = ((types.CPointer(sig[1]),) + tuple(types.CPointer(a) for a in sig[0]),
                   types.none)
        elif any(udt_layout(a) is not None for a in sig[0]):
            # struct operands of an operator with another result (a comparison, a flag):
            # cuda.coop passes them as pointers too, op(a_ptr, b_ptr) reading a_ptr[0]
            sig = (tuple(types.CPointer(a) if udt_layout(a) is not None else a
                         for a in sig[0]), sig[1])
        elif isinstance(sig[1], types.Record):
            # numba cannot return a record by value: the operator writes its result into a
            # third argument, op(a, b, out), like an out-parameter in C.
            if op.arity != len(sig[0]) + 1:
                raise CoopgenTypeError(
                    f"{prim}: {op.param}={op.function.py_func.__name__} works on records "
                    f"({sig[1]}): it must take {len(sig[0]) + 1} arguments, the last one the "
                    f"record to write the result to")
            sig = (sig[0] + (sig[1],), types.none)
        elif op.arity == len(sig[0]) + 1 and op.kind != "FlagOp":
            raise CoopgenTypeError(f"{prim}: {op.param}={op.function.py_func.__name__} takes "
                                   f"{op.arity} arguments; an output argument is only for "
                                   f"record dtypes")
        if op.state is not None:
            sig = ((types.CPointer(op.state.dtype),) + sig[0], sig[1])
        out[i] = sig
    return out


def key_record(r):
    """The record dtype of the call's keys (None when they are not records)."""
    for b in r.bindings:
        t = b.nbtype
        if b.param.base == "KeyT" and isinstance(t, types.Array) and isinstance(t.dtype, types.Record):
            return t.dtype
    return None


def decomposer_fields(prim: str, r, op) -> list[tuple[str, int]]:
    """(C++ type, byte offset) of each key field a decomposer names, most significant first."""
    from .ctypes_map import CPP_OF
    rec = key_record(r)
    if rec is None:
        raise CoopgenTypeError(f"{prim}: {op.param}= needs keys of a record dtype "
                               f"(numpy structured dtype)")
    out = []
    for name in op.fields:
        if name not in rec.fields:
            raise CoopgenTypeError(f"{prim}: {op.param}: the key record has no field {name!r}; "
                                   f"fields: {', '.join(rec.fields)}")
        f = rec.fields[name]
        ct = CPP_OF.get(f.type)
        if ct is None or ct == "bool":
            raise CoopgenTypeError(f"{prim}: {op.param}: field {name!r} has type {f.type}, "
                                   f"which radix sort cannot order")
        out.append((ct, f.offset))
    return out


def check_operators(prim: str, r) -> None:
    """Everything about the call's operators that can be known before lowering."""
    operator_signatures(prim, r)
    for b in r.bindings:
        if b.operator is not None and b.operator.fields:
            decomposer_fields(prim, r, b.operator)
    _check_struct_arithmetic(prim, r)


def _check_struct_arithmetic(prim: str, r) -> None:
    """Items of a struct type (records, numba struct types, complex numbers) are opaque bytes to
    C++: CUB's built-in operators, and its sums (which add with +), cannot work on them."""
    from .ctypes_map import is_struct
    dtypes = argument_dtypes(r)
    item = dtypes.get(r.cls.value_type.name if r.cls.value_type else None, dtypes.get("KeyT"))
    if item is None or not is_struct(item):
        return
    for b in r.bindings:
        op = b.operator
        if op is not None and op.builtin is not None:
            raise CoopgenTypeError(f"{prim}: {b.param.name}= is a C++ built-in, which items of "
                                   f"{item} (a struct to C++) do not have; pass a Python "
                                   f"function, op(out, a, b) on pointers")
    if "Sum" in r.method.name:
        raise CoopgenTypeError(f"{prim}: items of {item} are a struct to C++, which CUB's "
                               f"{r.method.name} cannot add; use the reduce/scan form with a "
                               f"Python function op(out, a, b) on pointers")


def argument_dtypes(r) -> dict:
    """C++ type name -> numba dtype, from the bound arguments and template arguments."""
    from .ctypes_map import CPP_OF
    by_cpp = {v: k for k, v in CPP_OF.items()}
    out = {}
    for t, v in r.template_args:
        if t.kind == "type" and v in by_cpp:
            out[t.name] = by_cpp[v]
    for b in r.bindings:
        if b.nbtype is None or b.operator is not None:
            continue
        base = b.param.base.split("[")[0].strip()
        dt = b.nbtype.dtype if isinstance(b.nbtype, types.Array) else b.nbtype
        out.setdefault(base, types.unliteral(dt))
    return out


def compile_operator(context, sym: str, op, argtypes, restype, prim: str = "") -> None:
    """Compile a Python operator to LTO-IR with a C ABI and link it into this library."""
    from numba import cuda
    from numba.core.errors import TypingError

    library = context.active_code_library
    done = library.__dict__.setdefault("_coopgen_ops", set())
    if sym in done:
        return
    arch = _current_arch()
    cc = (int(arch.split("_")[1][:-1]), int(arch.split("_")[1][-1]))
    try:
        code, _ = cuda.compile(op.function.py_func, restype(*argtypes), device=True, abi="c",
                               abi_info={"abi_name": sym}, output="ltoir", cc=cc)
    except TypingError as e:  # the function's body does not fit what CUB calls it with
        wants = f"({', '.join(map(str, argtypes))}) -> {restype}"
        raise CoopgenTypeError(f"{prim}: {op.param}={op.function.py_func.__name__} must work as "
                               f"a {op.kind} {wants}; compiling it so failed:\n{e}") from None
    library.add_linking_file(LTOIR(code, name=sym))
    done.add(sym)
