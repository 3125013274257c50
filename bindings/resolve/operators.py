"""Operators: CUB's built-in functors by name, or Python functions (``Function``), which the
backend compiles with :func:`operator_signatures`' C signature under :meth:`Operator.symbol`
and the shim wraps in a functor of the shape CUB expects. A stateful operator is a
``(function, state_array)`` pair: the functor holds the state's pointer, passed first."""
import functools
import hashlib
import importlib
import operator
import re
from dataclasses import dataclass

import numpy as np

from ..model.errors import CoopgenError
from ..types.cpp import CPP_OF, by_pointer, is_struct
from ..types.desc import (BOOL, INT32, UINT32, VOID, Array, Function, Literal, Pointer, Scalar,
                          Struct, Tuple, host_dtype, item_type)


def cell_value(cell):
    """What a closure cell holds; None for an empty one."""
    try:
        return cell.cell_contents
    except ValueError:
        return None


def function_identity(fn, depth: int = 0) -> tuple:
    """What a Python function compiles to: its code, the names it reads and what its closure
    captured (device functions by their own identity). Closures of one factory, or lambdas of
    one bytecode calling cutlass.max and cutlass.min, differ there: one kernel may use both."""
    code = fn.__code__
    captured = []
    for value in map(cell_value, fn.__closure__ or ()):
        inner = getattr(value, "py_func", None)
        captured.append(function_identity(inner, depth + 1) if inner is not None and depth < 8
                        else repr(value))
    return fn.__module__, fn.__qualname__, _code(code), captured


def _code(code) -> tuple:
    """Bytecode, names read and constants; inner code objects by content, not address."""
    return code.co_code, code.co_names, tuple(_code(c) if hasattr(c, "co_code") else c
                                              for c in code.co_consts)


def describe_function(disp, text: str = "") -> Function:
    """A device function (either compiler's dispatcher, ``py_func`` its Python function) as an
    operator."""
    fn = disp.py_func
    identity = hashlib.sha256(repr(function_identity(fn)).encode()).hexdigest()
    return Function(fn.__name__, fn.__code__.co_argcount, None, identity,
                    text=text or str(fn.__name__), ref=disp)


#: Built-in functor names per parameter kind -> C++ functor expression (cuda.coop's names too).
_PLUS, _TIMES = "::cuda::std::plus<>{}", "::cuda::std::multiplies<>{}"
_MIN, _MAX = "::cuda::minimum<>{}", "::cuda::maximum<>{}"
_AND, _OR, _XOR = "::cuda::std::bit_and<>{}", "::cuda::std::bit_or<>{}", "::cuda::std::bit_xor<>{}"
_ARITH = {"+": _PLUS, "add": _PLUS, "sum": _PLUS, "plus": _PLUS,
          "*": _TIMES, "mul": _TIMES, "multiplies": _TIMES, "multiply": _TIMES,
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
_NAME = {f: n for t in BUILTINS.values() for n, f in reversed(t.items())}  # a functor's 1st name
#: Per item kind, the built-ins C++ does not define for it, and why (the other kinds: all).
_ORDER = {_MIN, _MAX, *_COMPARE.values()}
_ALL = {f for t in BUILTINS.values() for f in t.values()}
UNDEFINED = {
    "float": ({_AND, _OR, _XOR}, "C++ has no bitwise operators on floating point numbers"),
    "complex": ({_AND, _OR, _XOR} | _ORDER, "C++ does not order complex numbers (no <, min, "
                "max) and has no bitwise operators on them"),
    "vector": (_ALL, "CUDA's vector types have no operators"),
    "struct": (_ALL, "a struct to C++ is opaque bytes with no operators (a Python operator "
               "takes it as op(out, a, b) on pointers)"),
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
    function: Function | None  # a Python function
    state: Array | None  # the state array of a stateful operator
    arity: int
    fields: tuple[str, ...] = ()  # a decomposer: the key's fields, most significant first

    def symbol(self, argtypes: tuple) -> str:
        """C ABI name of the compiled function: from what it is (its code and what its
        closure captured, the backend's ``Function.identity``) and its signature."""
        h = hashlib.sha256(repr((self.function.identity, tuple(map(str, argtypes))))
                           .encode()).hexdigest()[:16]
        name = re.sub(r"\W", "_", self.function.name)  # a lambda's name is "<lambda>"
        return f"coopgen_op_{name}_{h}"


def _name_of(ty) -> str | None:
    """The built-in an argument names: a string, or np.add / operator.mul / ..."""
    if isinstance(ty, Literal) and isinstance(ty.value, str):
        return ty.value
    return ty.builtin if isinstance(ty, Function) else None


def identity_of(op_ty, dtype) -> object | None:
    """A built-in operator's identity for ``dtype`` as a numpy scalar, or None. (cuda.coop seeds
    scans with Python functions from 0, wrong for a product or a max: give initial_value=.)"""
    functor = _ARITH.get(_name_of(op_ty))
    kind = dtype.kind if isinstance(dtype, Scalar) else None
    if functor is None or kind not in ("int", "uint", "float") \
            or functor == _AND and kind == "float":
        return None
    try:  # bfloat16: numpy knows it only through ml_dtypes, whose finfo numpy's does not read
        np_type = np.dtype(dtype.name).type
        info = np.finfo(np_type) if kind == "float" else np.iinfo(np_type)
    except (TypeError, ValueError):
        try:
            info = importlib.import_module("ml_dtypes").finfo(np_type)
        except (ImportError, UnboundLocalError, ValueError):
            return None
    table = {_PLUS: 0, _OR: 0, _XOR: 0, _TIMES: 1, _MIN: info.max, _MAX: info.min,
             _AND: -1 if kind == "int" else info.max}
    return np_type(table[functor])


def as_operator(prim: str, p, ty) -> Operator | None:
    """The Operator a call passes for parameter ``p`` (None when ``ty`` is not an operator)."""
    kind = p.base
    if kind == "DecomposerT":
        # CUB's decomposer returns a tuple of references to the key's members; from Python it
        # is the tuple of field names of the record key to sort by, most significant first
        names = []
        for t in (ty.items if isinstance(ty, Tuple) else [ty]):
            if isinstance(t, Literal) and isinstance(t.value, str):
                names.append(t.value)
            elif isinstance(t, Function):
                raise CoopgenError(
                    f"{prim}: {p.name} must name the key's fields, e.g. ('a', 'b'): a decomposer "
                    f"returns references to the key's members, and a device function returns "
                    f"values, not references")
            else:
                return None
        return Operator(kind, p.name, None, None, None, 0, tuple(names)) if names else None
    fn, state = ty, None
    if isinstance(ty, Tuple) and len(ty.items) == 2 and isinstance(ty.items[0], Function) \
            and ty.items[0].builtin is None and isinstance(ty.items[1], Array):
        fn, state = ty.items
    elif p.role == "prefix_callback" and isinstance(ty, Array) and ty.stateful is not None:
        # cuda.coop's spelling: the state array alone; its dtype names the function (for
        # prefix callbacks only: any other operator given an array is a wrong call)
        return Operator(kind, p.name, None, ty.stateful, ty, ty.stateful.argcount - 1)
    name = _name_of(fn)
    if name is not None:
        table = BUILTINS.get(kind, {})
        if name not in table:
            allowed = ", ".join(repr(k) for k in table) or "none (pass a device function)"
            raise CoopgenError(f"{prim}: unknown {p.name}={name!r}; built-ins: {allowed}, or "
                               f"a @cuda.jit(device=True) function")
        return Operator(kind, p.name, table[name], None, None, 0)
    if not isinstance(fn, Function):
        return None
    n = fn.argcount - (1 if state is not None else 0)
    allowed = ARITY.get(kind, (2,))
    if n not in allowed:
        extra = " plus the state pointer" if state is not None else ""
        raise CoopgenError(f"{prim}: {p.name}={fn.name} takes {n} argument(s){extra}; a {kind} "
                           f"takes {' or '.join(map(str, allowed))}")
    return Operator(kind, p.name, None, fn, state, n)


def _user_struct(t) -> bool:
    return isinstance(t, Struct) and not t.record


def operator_signatures(prim: str, r) -> dict[int, tuple]:
    """(argtypes, restype) of each Python operator, from the kind of functor CUB expects.
    Raises CoopgenError for an operator whose arity does not fit the dtypes."""
    dtypes = argument_dtypes(r)
    t = dtypes.get(r.cls.value_type.name if r.cls.value_type else None)
    key, difference = dtypes.get("KeyT", t), dtypes.get("OutputType", dtypes.get("OutputT", t))
    out = {}
    for i, b in enumerate(r.bindings):
        op = b.operator
        if op is None or op.function is None:
            continue
        # the functor CUB calls for an operator of this kind (else a prefix callback)
        args, res = {
            "ReductionOp": ((t, t), t), "ScanOp": ((t, t), t), "CompareOp": ((key, key), BOOL),
            "FlagOp": ((t, t, INT32)[:op.arity], BOOL), "DifferenceOpT": ((t, t), difference),
            "DigitExtractorT": ((dtypes.get("UnsignedBits"),), UINT32),
            "CountsCallback": ((Pointer(INT32),), VOID)}.get(op.kind, ((t,), t))
        fn = op.function.name
        if _user_struct(res):
            # a user-defined struct type: cuda.coop's op(out, a, b) on pointers, writing out[0];
            # its prefix callbacks take the out pointer last, (state, aggregate, out)
            last = op.kind == "BlockPrefixCallbackOp"
            if op.arity != len(args) + 1:
                raise CoopgenError(
                    f"{prim}: {op.param}={fn} works on {res}: it must take {len(args) + 1} "
                    f"pointers, {'(aggregate, out) after its state' if last else 'op(out, a, b)'}, "
                    f"and write its result to out[0]")
            ptrs = [Pointer(a) for a in args]
            args, res = tuple(ptrs + [Pointer(res)] if last else [Pointer(res)] + ptrs), VOID
        elif any(_user_struct(a) for a in args):
            # struct operands of an operator with another result (a comparison, a flag):
            # cuda.coop passes them as pointers too, op(a_ptr, b_ptr) reading a_ptr[0]
            args = tuple(Pointer(a) if _user_struct(a) else a for a in args)
        elif isinstance(res, Struct):
            # a record cannot be returned by value: the operator writes its result into a
            # last argument, op(a, b, out), like an out-parameter in C
            if op.arity != len(args) + 1:
                raise CoopgenError(
                    f"{prim}: {op.param}={fn} works on records ({res}): it must take "
                    f"{len(args) + 1} arguments, the last one the record to write the result to")
            args, res = args + (res,), VOID
        elif op.arity == len(args) + 1 and op.kind != "FlagOp":
            raise CoopgenError(f"{prim}: {op.param}={fn} takes {op.arity} arguments; an output "
                               f"argument is only for record dtypes")
        if op.state is not None:
            args = (Pointer(op.state.dtype),) + args
        out[i] = (args, res)
    return out


def key_record(r):
    """The record dtype of the call's keys (None when they are not records)."""
    return next((b.type.dtype for b in r.bindings if b.param.base == "KeyT"
                 and isinstance(b.type, Array) and isinstance(b.type.dtype, Struct)
                 and b.type.dtype.record), None)


def decomposer_fields(prim: str, r, op) -> list[tuple[str, int]]:
    """(C++ type, byte offset) of each key field a decomposer names, most significant first."""
    rec = key_record(r)
    if rec is None:
        raise CoopgenError(f"{prim}: {op.param}= needs keys of a record dtype (numpy "
                           f"structured dtype)")
    fields = {f.name: f for f in rec.fields}
    out = []
    for name in op.fields:
        if name not in fields:
            raise CoopgenError(f"{prim}: {op.param}: the key record has no field {name!r}; "
                               f"fields: {', '.join(fields)}")
        f = fields[name]
        ct = CPP_OF.get(f.type.name) if f.type is not None else None
        if ct is None or ct == "bool":
            raise CoopgenError(f"{prim}: {op.param}: field {name!r} has type {f.type}, which "
                               f"radix sort cannot order")
        out.append((ct, f.offset))
    return out


def check_operators(prim: str, r) -> None:
    """Everything about the call's operators that can be known before lowering."""
    operator_signatures(prim, r)
    for b in r.bindings:
        if b.operator is not None and b.operator.fields:
            decomposer_fields(prim, r, b.operator)
    # The built-in operators, and CUB's sums (which add with +) and maxima, the items lack
    # (UNDEFINED: structs and vector types have none, complex and floating point numbers some).
    dtypes = argument_dtypes(r)
    item = dtypes.get(r.cls.value_type.name if r.cls.value_type else None, dtypes.get("KeyT"))
    kind = "struct" if item is not None and is_struct(item) else getattr(item, "kind", None)
    undefined, why = UNDEFINED.get(kind, ((), ""))
    for b in r.bindings:
        builtin = b.operator.builtin if b.operator is not None else None
        if builtin in undefined:
            raise CoopgenError(f"{prim}: {b.param.name}={_NAME[builtin]!r} is not defined for "
                               f"items of {item}: {why}; pass a @cuda.jit(device=True) function")
    if _PLUS in undefined and "Sum" in r.method.name:
        raise CoopgenError(f"{prim}: CUB's {r.method.name} adds items with +, which items of "
                           f"{item} do not have: {why}")
    if r.method.name in ("Max", "Min") and {_MAX, _MIN} & set(undefined):  # WarpReduce.Max/Min
        raise CoopgenError(f"{prim}: CUB's {r.method.name} is not defined for items of {item}: "
                           f"{why}; use Reduce with a @cuda.jit(device=True) function")


_BY_CPP = {v: Scalar(k) for k, v in CPP_OF.items()}


def argument_dtypes(r) -> dict:
    """C++ type name -> dtype, from the bound arguments and template arguments."""
    out = {t.name: _BY_CPP[v] for t, v in r.template_args
           if t.kind == "type" and v in _BY_CPP}
    for b in r.bindings:
        if b.type is not None and b.operator is None:
            out.setdefault(b.param.base.split("[")[0].strip(), item_type(b.type))
    return out


def _by_value_pointer(t) -> bool:
    """A number the C side passes by pointer (half, bfloat16, complex, vector types) that the
    Python operator takes and returns by value."""
    return isinstance(t, Scalar) and by_pointer(t)


def operator_forms(op: Operator, argtypes: tuple, restype) -> list[tuple]:
    """(Python function, argument types, result type) a backend compiles for ``op``, the first
    that compiles: where the C side passes numbers by pointer, the operator by value through
    those pointers, else on the pointers themselves (as cuda.coop's operators take them)."""
    py_func = op.function.ref.py_func
    if not any(_by_value_pointer(t) for t in (*argtypes, restype)):
        return [(py_func, argtypes, restype)]
    flags = [_by_value_pointer(t) for t in argtypes]
    names = [f"a{i}" for i in range(len(argtypes))]
    call = f"fn({', '.join(n + '[0]' if f else n for n, f in zip(names, flags))})"
    out = _by_value_pointer(restype)
    src = (f"def through_pointers({', '.join(names + ['out'] * out)}):\n"
           f"    {'out[0] = ' if out else 'return '}{call}\n")
    namespace = {"fn": op.function.ref}  # the backend's device function
    exec(src, namespace)
    args = tuple(Pointer(t) if f else t for t, f in zip(argtypes, flags))
    if out:
        args, restype = args + (Pointer(restype),), VOID
    return [(namespace["through_pointers"], args, restype), (py_func, args, restype)]


#: The dtype (description) of a stateful operator's state -> its Python ``__call__`` (cuda.coop's
#: StatefulFunction), which each backend compiles as its own device function.
STATEFUL_CALLS: dict = {}


class StatefulFunction:
    """cuda.coop's stateful operator: ``op_class.__call__(state_ptr, value)`` (or a device
    function ``op_class(state_ptr, value)``) gets a pointer to the one-item ``numba_type``
    array passed as the operator (``prefix_op=state``), updates ``state_ptr[0]`` and returns
    its result. A later registration for one type replaces it."""

    def __init__(self, op_class, numba_type, name=None):
        call = getattr(op_class, "py_func", None) or getattr(op_class, "__call__", None)
        if call is None or not hasattr(call, "__code__"):
            raise TypeError(f"StatefulFunction: {op_class!r} has no Python __call__")
        self.op_class = op_class
        self.numba_type = numba_type
        self.name = name or getattr(op_class, "__name__", "stateful_function")
        STATEFUL_CALLS[host_dtype(numba_type) or str(numba_type)] = call


def key_order(dtype: str | None):
    """``(kind, width)`` of keys of numpy's ``dtype`` a radix rank orders by value (signed
    integers "i", 32- and 64-bit floats "f"); None for those ranked by their raw bits."""
    kind, width = (np.dtype(dtype).kind, 8 * np.dtype(dtype).itemsize) if dtype else ("u", 0)
    return (kind, width) if kind == "i" or (kind == "f" and width in (32, 64)) else None


def ordered_key_bits(raw, kind: str, width: int, unsigned, select):
    """CUB's twiddle of a key's bits ``raw`` (of ``unsigned``, its width's unsigned class) into
    bits that order as its value; ``select(condition, a, b)`` picks, so that traced values
    (CuTe DSL) and numpy arrays take it alike."""
    sign = unsigned(1 << (width - 1))
    if kind == "i":
        return raw ^ sign
    raw = select(raw == sign, unsigned(0), raw)  # -0.0 is +0.0
    return raw ^ select(raw < sign, sign, unsigned((1 << width) - 1))


@functools.cache
def bit_field_digits(device_function, libdevice, begin: int, bits: int, dtype: str | None = None):
    """A digit extractor of the key bits [begin, begin + bits), compiled by the backend's
    ``device_function`` (its ``libdevice`` reads a float's bits). Keys of a signed or floating
    ``dtype`` (numpy's name) are ranked by their order, as CUB's radix sort ranks them: the
    bits of the key made unsigned with its sign bit flipped (every bit of a negative float;
    -0.0 is +0.0 first)."""
    import numpy as np  # a closure cell of key_bits, part of its identity (its symbol)
    mask = (1 << bits) - 1
    kind, width = (np.dtype(dtype).kind, 8 * np.dtype(dtype).itemsize) if dtype else ("u", 0)
    if kind not in "if" or (kind == "f" and width not in (32, 64)):
        def key_bits(key):
            return np.uint32((key >> np.uint32(begin)) & np.uint32(mask))
        return device_function(key_bits)
    unsigned, top = getattr(np, f"uint{width}"), width - 1
    if kind == "i":
        def key_bits(key):
            ordered = unsigned(key) ^ (unsigned(1) << unsigned(top))
            return np.uint32((ordered >> unsigned(begin)) & unsigned(mask))
        return device_function(key_bits)
    bits_of = libdevice.float_as_int if width == 32 else libdevice.double_as_longlong

    def key_bits(key):
        sign = unsigned(1) << unsigned(top)
        raw = unsigned(bits_of(key))
        if raw == sign:  # -0.0
            raw = unsigned(0)
        flip = sign if raw < sign else ~unsigned(0)
        return np.uint32(((raw ^ flip) >> unsigned(begin)) & unsigned(mask))
    return device_function(key_bits)
