"""numba-cuda-mlir's types (its own copy of numba-cuda's) <-> coopgen's descriptions."""
import enum
import functools

import numpy as np
from numba_cuda_mlir import cuda
from numba_cuda_mlir.numba_cuda import types
from numba_cuda_mlir.numba_cuda.np import numpy_support
from numba_cuda_mlir.numba_cuda.typing.typeof import Purpose, typeof
from numba_cuda_mlir.type_defs.vector_types import VectorType

from ..resolve.operators import FUNCTION_NAMES, STATEFUL_CALLS, describe_function
from ..types import desc
from .arrays import SizedArray, TempStorageType, ThreadDataArray


def _field(name: str, f) -> desc.Field:
    scalar = isinstance(f.type, (types.Number, types.Boolean))
    size = f.type.bitwidth // 8 if hasattr(f.type, "bitwidth") else 1
    return desc.Field(name, dtype_of(f.type) if scalar else None, f.offset, size)


def _alignment(fields, size: int) -> int:
    """Natural alignment of a record whose fields sit at multiples of their sizes, else 1."""
    align = 1
    for f in fields:
        if f.size & (f.size - 1) or f.offset % f.size:
            return 1
        align = max(align, f.size)
    return align if size % align == 0 else 1


def dtype_of(dt):
    """A dtype -> Scalar / Struct (a record) / Other."""
    dt = types.unliteral(dt)
    if isinstance(dt, (types.Number, types.Boolean, VectorType)):  # (bfloat16's str is its C name)
        return desc.Scalar("bool" if isinstance(dt, types.Boolean) else
                           "bfloat16" if dt == types.bfloat16 else str(dt))
    if isinstance(dt, types.Record):
        fields = tuple(_field(n, f) for n, f in dt.fields.items())
        return desc.Struct(str(dt.dtype.descr), dt.size, _alignment(fields, dt.size), fields,
                           True, text=str(dt), ref=dt)
    return desc.Other(str(dt))


@functools.cache
def device_function(fn):
    """A plain Python function used as an operator, compiled as a device function (once)."""
    return cuda.jit(device=True)(fn)


def describe(ty):
    """The description of an argument type."""
    text = str(ty)
    if isinstance(ty, TempStorageType):
        return desc.Storage(ty.obj, ty.obj.symbol)
    if isinstance(ty, types.Array):
        sized = isinstance(ty, SizedArray)
        call = STATEFUL_CALLS.get(dtype_of(ty.dtype))  # cuda.coop's StatefulFunction's state
        return desc.Array(dtype_of(ty.dtype), ty.ndim, ty.layout in ("C", "F"),
                          ty.size if sized else None, ty.space if sized else None,
                          describe_function(device_function(call)) if call else None,
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


def constant_type(value):
    """The type of a Python value a call passes as a compile-time constant."""
    if isinstance(value, (str, bool, int)) and not isinstance(value, (np.integer, enum.Enum)):
        return types.literal(value)  # (an enum member's literal: typeof, coopgen.mlir.arrays)
    if isinstance(value, tuple):
        return types.Tuple([constant_type(v) for v in value])
    return typeof(value, Purpose.constant)


def to_numba(d):
    """A dtype or operator signature part the stages computed -> its type."""
    if isinstance(d, desc.Scalar):  # numbers, then vector types (cuda.float32x2)
        return types.boolean if d.name == "bool" else getattr(types, d.name, None) or getattr(
            cuda, d.name)
    if isinstance(d, desc.Struct):
        return d.ref
    if isinstance(d, desc.Pointer):
        return types.CPointer(to_numba(d.to))
    if d == desc.VOID:
        return types.none
    raise TypeError(f"no numba-cuda-mlir type for {d}")


def host_dtype(value):
    """A dtype given on the host: numba-cuda-mlir's types, numpy dtypes and their names."""
    if isinstance(value, types.Type):
        dt = value.dtype if isinstance(value, (types.NumberClass, types.DType)) else value
    else:
        try:
            dt = numpy_support.from_dtype(np.dtype(value))
        except (TypeError, ValueError):  # not a dtype (ValueError: np.dtype((np.int32, -1)))
            return None
    return dtype_of(dt)
