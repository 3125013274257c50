"""numba-cuda's types <-> coopgen's descriptions (coopgen.types.desc), which are all the
numba-free stages see of a call's arguments."""
import functools

import numpy as np
from numba import cuda
from numba.cuda import types
from numba.cuda.datamodel.models import StructModel
from numba.cuda.np import numpy_support
from numba.cuda.typing.templates import builtin_registry
from numba.cuda.typing.typeof import Purpose, typeof, typeof_impl
from numba.cuda.vector_types import VectorType, vector_types

from ..resolve.operators import FUNCTION_NAMES, STATEFUL_CALLS, describe_function
from ..types import desc
from .arrays import SizedArray, TempStorageType, ThreadDataArray, vector_type

#: numba type (its name) of an extension type -> its ``__call__`` as a device function (None:
#: it has none)
_CLASS_CALLS: dict = {}


def _size(ty) -> int:
    return ty.bitwidth // 8 if hasattr(ty, "bitwidth") else 1


def record_alignment(rec) -> int:
    """Natural alignment of a record whose fields sit at multiples of their sizes, else 1."""
    align = 1
    for f in rec.fields.values():
        size = _size(f.type)
        if size & (size - 1) or f.offset % size:
            return 1
        align = max(align, size)
    return align if rec.size % align == 0 else 1


def udt_layout(dt) -> tuple[int, int] | None:
    """(size, alignment) of a user-defined numba type whose data model is a struct (a numba
    extension type such as ``Complex`` or ``Float2``), else None."""
    if not isinstance(dt, types.Type) or (type(dt).__module__ or "").split(".")[0] in (
            "numba", "numba_cuda", "coopgen"):
        return None  # numba's own types (strings, tuples, ...) are no user's structs
    from numba.cuda.descriptor import cuda_target
    ctx = cuda_target.target_context
    try:
        model = ctx.data_model_manager[dt]
    except KeyError:
        return None
    if not isinstance(model, StructModel) and type(model).__name__ != "StructModel":
        return None
    ll = ctx.get_data_type(dt)
    return ctx.get_abi_sizeof(ll), ctx.get_abi_alignment(ll)


def dtype_of(dt):
    """A numba dtype -> Scalar / Struct (a record or a user's struct type) / Other."""
    dt = types.unliteral(dt)
    if isinstance(dt, (types.Number, types.Boolean, VectorType)):
        return desc.Scalar("bool" if isinstance(dt, types.Boolean) else "bfloat16"
                           if dt == types.bfloat16 else str(dt))
    if isinstance(dt, types.Record):
        fields = tuple(desc.Field(n, dtype_of(f.type) if isinstance(
            f.type, (types.Number, types.Boolean)) else None, f.offset, _size(f.type))
            for n, f in dt.fields.items())
        return desc.Struct(str(dt.dtype.descr), dt.size, record_alignment(dt), fields, True,
                           text=str(dt), ref=dt)
    if (layout := udt_layout(dt)) is not None:
        return desc.Struct(f"{dt!r}:{layout}", layout[0], layout[1], text=str(dt), ref=dt)
    return desc.Other(str(dt))


def stateful_function(dtype):
    """The prefix callback an array of ``dtype`` stands for: a registered ``StatefulFunction``,
    else the ``__call__(self_ptr, block_aggregate)`` of the extension type ``dtype`` is
    (cuda.coop's documented ``BlockPrefixCallbackOp``)."""
    if (call := STATEFUL_CALLS.get(dtype_of(dtype))) is not None:
        return device_function(call)
    key = str(dtype)
    if key not in _CLASS_CALLS and udt_layout(dtype) is not None:
        cls = _class_typed_as(dtype)
        _CLASS_CALLS[key] = device_function(cls.__call__) if cls is not None else None
    return _CLASS_CALLS.get(key)


@functools.cache
def device_function(fn):
    """A plain Python function used as an operator, compiled as a device function (once)."""
    return cuda.jit(device=True)(fn)


def _own_call(cls) -> bool:
    call = cls.__dict__.get("__call__") if isinstance(cls, type) else None
    return call is not None and hasattr(call, "__code__")


def _typing_registries() -> list:
    """(typeof functions, typing templates) a class may be registered with: numba.cuda's, and
    numba.core's (numba-cuda keeps them apart; kernels take both, as cuda.coop's suite uses)."""
    try:
        from numba.core.typing.templates import builtin_registry as core_registry
        from numba.core.typing.typeof import typeof_impl as core_typeof
    except ImportError:  # numba-cuda without numba
        return [(typeof_impl, builtin_registry)]
    return [(typeof_impl, builtin_registry), (core_typeof, core_registry)]


def _class_typed_as(dtype):
    """The Python class with a ``__call__`` of its own whose numba type is ``dtype``: the one
    ``typeof`` types so, else one made constructible in kernels (``type_callable``) that the
    type is named after (``BlockPrefixCallbackOp`` for ``BlockPrefixCallbackOpType``)."""
    registries = _typing_registries()
    for typeof_fn, _ in registries:
        for cls, typer in list(typeof_fn.registry.items()):
            try:
                if _own_call(cls) and typer(object.__new__(cls), None) == dtype:
                    return cls
            except Exception:  # a typer that needs a real value or a context: not this one
                continue
    names = {str(dtype), type(dtype).__name__, type(dtype).__name__.removesuffix("Type")}
    named = {f for _, reg in registries for f, _ in reg.globals
             if _own_call(f) and f.__name__ in names}
    return named.pop() if len(named) == 1 else None


def describe(ty):
    """The description of a numba argument type."""
    text = str(ty)
    if isinstance(ty, TempStorageType):
        return desc.Storage(ty.obj, ty.obj.symbol)
    if isinstance(ty, types.Array):
        state, sized = stateful_function(ty.dtype), isinstance(ty, SizedArray)
        return desc.Array(dtype_of(ty.dtype), ty.ndim, ty.layout in ("C", "F"),
                          ty.size if sized else None, ty.space if sized else None,
                          describe_function(state) if state is not None else None,
                          isinstance(ty, ThreadDataArray), text=text)
    if isinstance(ty, types.Literal):  # a string is no dtype
        return desc.Literal(ty.literal_value, None if isinstance(ty, types.StringLiteral)
                            else dtype_of(ty.literal_type), text=text)
    if isinstance(ty, (types.NumberClass, types.DType)):
        return desc.DtypeValue(dtype_of(ty.dtype), ref=ty)
    if isinstance(ty, (types.Omitted, types.NoneType)):
        return desc.Omitted(getattr(ty, "value", None))
    if (disp := getattr(ty, "dispatcher", None)) is not None:
        return describe_function(disp, text)
    try:
        named = FUNCTION_NAMES.get(getattr(ty, "typing_key", None))
    except TypeError:  # an unhashable key names no built-in
        named = None
    if named is not None:
        return desc.Function(text, builtin=named, text=text)
    if isinstance(ty, types.BaseTuple):
        return desc.Tuple(tuple(describe(t) for t in ty))
    if isinstance(ty, (types.Function, types.FunctionType)):
        return desc.Other(text, callable=True)
    return dtype_of(ty)


def constant_type(value) -> types.Type:
    """The numba type of a Python value a call passes as a compile-time constant."""
    if isinstance(value, (str, bool, int)) and not isinstance(value, np.integer):
        return types.literal(value)
    if isinstance(value, tuple):
        return types.Tuple([constant_type(v) for v in value])
    return typeof(value, Purpose.constant)


def to_numba(d) -> types.Type:
    """A dtype or operator signature part the stages computed -> its numba type."""
    if isinstance(d, desc.Scalar):
        return {"bool": types.boolean, "bfloat16": types.bfloat16}.get(d.name) or getattr(
            types, d.name, None) or vector_types[d.name]
    if isinstance(d, desc.Struct):
        return d.ref
    if isinstance(d, desc.Pointer):
        return types.CPointer(to_numba(d.to))
    if d == desc.VOID:
        return types.none
    raise TypeError(f"no numba type for {d}")


def host_dtype(value):
    """A dtype given on the host: numba types (scalars, records, user structs), numpy dtypes
    and their names (registered as coopgen.types.desc's way of reading them)."""
    value = vector_type(value) or value  # numba.cuda.float32x2 -> its numba type
    if isinstance(value, types.Type):
        dt = value.dtype if isinstance(value, (types.NumberClass, types.DType)) else value
    else:
        try:
            dt = numpy_support.from_dtype(np.dtype(value))
        except (TypeError, ValueError):  # not a dtype (ValueError: np.dtype((np.int32, -1)))
            return None
    return dtype_of(dt)
