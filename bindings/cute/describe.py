"""CuTe DSL's values (cute.Tensor, cutlass numbers, their classes) <-> coopgen's descriptions.
A CuTe kernel is traced, not typed: a call sees the values themselves, so what numba learns from
types is read here from the values (a fragment's static size, a tensor's memory space)."""
import dataclasses
import enum
import hashlib
import inspect
import warnings

import cutlass
import cutlass.cute as cute
import numpy as np
from cutlass.base_dsl.enums import AddressSpace

from ..codegen.storage import TempStorage
from ..model.errors import CoopgenError
from ..resolve.operators import FUNCTION_NAMES, function_identity
from ..types import desc

#: cutlass's number classes by numpy's name (coopgen's Scalar names).
NUMBERS = {"bool": cutlass.Boolean, "int8": cutlass.Int8, "int16": cutlass.Int16,
           "int32": cutlass.Int32, "int64": cutlass.Int64, "uint8": cutlass.Uint8,
           "uint16": cutlass.Uint16, "uint32": cutlass.Uint32, "uint64": cutlass.Uint64,
           "float16": cutlass.Float16, "bfloat16": cutlass.BFloat16,
           "float32": cutlass.Float32, "float64": cutlass.Float64}
NAMES = {cls: name for name, cls in NUMBERS.items()}
SPACES = {AddressSpace.rmem: "local", AddressSpace.smem: "shared", AddressSpace.gmem: None,
          AddressSpace.generic: None}


def number_class(d: desc.Scalar):
    """cutlass's class of a Scalar (Int32 for int32)."""
    cls = NUMBERS.get(getattr(d, "name", None))
    if cls is None:
        raise CoopgenError(f"{d} has no CuTe DSL number type (coopgen.cute takes "
                           f"{', '.join(NUMBERS)})")
    return cls


def dtype_of(value) -> desc.Dtype:
    """A dtype given as a cutlass number class, numpy dtype or name."""
    if isinstance(value, type) and value in NAMES:
        return desc.Scalar(NAMES[value])
    try:
        return desc.Scalar(np.dtype(value).name)
    except (TypeError, ValueError):
        return desc.Other(str(value))


def _numpy_number(value) -> bool:
    """A numpy scalar of a number dtype, ml_dtypes' bfloat16 (no np.floating) included."""
    return isinstance(value, np.generic) and value.dtype.name in NUMBERS


def _is_dtype(value) -> bool:
    if isinstance(value, type) and (value in NAMES or issubclass(value, np.generic)):
        return True
    return isinstance(value, np.dtype)


def _static_int(x):
    return x if isinstance(x, int) else None


def _flat(x) -> tuple:
    return tuple(v for e in x for v in _flat(e)) if isinstance(x, tuple) else (x,)


def _item_order(layout) -> bool:
    """Whether item i of the layout sits at offset i (what a pointer to the first item
    means to CUB): a compact column-major layout, strides known at compile time."""
    shape, stride = _flat(layout.shape), _flat(layout.stride)
    expected = 1
    for n, s in zip(shape, stride):
        if isinstance(n, int) and n == 1:
            continue
        if not isinstance(s, int) or s != expected:
            return False
        if not isinstance(n, int):
            return len(shape) == 1 or n is shape[-1]
        expected *= n
    return True


def _array(t) -> desc.Array:
    """A tensor. A register fragment is copied item by item (any layout); a shared or global
    tensor passes its first item's address, so its items must be in order."""
    space = SPACES.get(t.memspace, "other")
    if space == "other":
        raise CoopgenError(f"a tensor in {t.memspace} memory: coopgen takes register, shared "
                           f"and global tensors")
    length = _static_int(cute.size(t)) if cute.is_static(t.shape) else None
    contiguous = space == "local" or _item_order(t.layout)
    return desc.Array(dtype_of(t.element_type), 1, bool(contiguous), length, space,
                      text=f"cute.Tensor({t.element_type}, {t.memspace}, {t.layout})")


#: The signed dtype CuTe DSL 4.8.1 reports for a tensor of unsigned items made from a pointer.
SIGNED = {"uint8": "int8", "uint16": "int16", "uint32": "int32", "uint64": "int64"}


class CuteSignednessWarning(UserWarning):
    """A tensor typed signed beside unsigned register fragments (read as their dtype)."""


def unsigned_tensors(prim: str, descs: list) -> list:
    """A call's argument descriptions, each shared or global tensor of the signed twin of its
    register fragments' unsigned dtype read as that dtype. CuTe DSL 4.8.1 types a tensor made
    from a pointer by its MLIR element type, which has no sign (Uint16 -> Int16); a conversion
    between integers of one width keeps every bit, so no value changes, and CUB's vectorized
    loads and stores (a pointer to the items' own type) compile. The warning says what this
    cannot fix: the kernel's own reads of the tensor (docs/cute.md, Unsigned items)."""
    local = {d.dtype.name for d in descs if isinstance(d, desc.Array) and d.space == "local"
             and isinstance(d.dtype, desc.Scalar)}
    out = []
    for d in descs:
        twin = [u for u in local if isinstance(d, desc.Array) and d.space != "local"
                and isinstance(d.dtype, desc.Scalar) and SIGNED.get(u) == d.dtype.name]
        if twin and d.dtype.name not in local:
            cls = NUMBERS[twin[0]].__name__
            warnings.warn(
                f"{prim}: a {d.space or 'global'} tensor of {NUMBERS[d.dtype.name].__name__} "
                f"items with register fragments of {cls}: read as {cls} (CuTe DSL types a "
                f"tensor made from a pointer by its MLIR element type, which has no sign). "
                f"Values the kernel reads from it (x[i]) are signed: "
                f"cute.recast_tensor(x, cutlass.{cls}), in the kernel or its @cute.jit "
                f"launcher, types it {cls}", CuteSignednessWarning, stacklevel=2)
            d = dataclasses.replace(d, dtype=desc.Scalar(twin[0]),
                                    text=f"{d.text} (read as {cls})")
        out.append(d)
    return out


def describe(value):
    """The description of a value a kernel passes."""
    if isinstance(value, cute.Tensor):
        return _array(value)
    if isinstance(value, TempStorage):
        return desc.Storage(value, value.symbol)
    if isinstance(value, cutlass.Numeric):
        return desc.Scalar(NAMES[type(value)])
    if isinstance(value, (bool, int, float, str)) and not isinstance(value, enum.Enum):
        return constant(value)
    if _numpy_number(value):
        return desc.Literal(value.item(), desc.Scalar(value.dtype.name))
    if isinstance(value, enum.Enum):
        return desc.Literal(value, None)
    if _is_dtype(value):
        return desc.DtypeValue(dtype_of(value), ref=value)
    if value is None:
        return desc.Omitted(None)
    if isinstance(value, tuple):
        return desc.Tuple(tuple(describe(v) for v in value))
    try:
        named = FUNCTION_NAMES.get(value)
    except TypeError:  # unhashable: no built-in
        named = None
    if named is not None:
        return desc.Function(getattr(value, "__name__", str(value)), builtin=named)
    if callable(value):
        return describe_operator(value)
    return desc.Other(type(value).__name__)


def describe_operator(fn) -> desc.Function:
    """A Python function passed as an operator."""
    plain = inspect.unwrap(fn)
    code = getattr(plain, "__code__", None)
    if code is None:
        return desc.Other(getattr(fn, "__name__", repr(fn)), callable=True)
    identity = hashlib.sha256(repr(function_identity(plain)).encode()).hexdigest()
    name = getattr(plain, "__name__", "operator")
    return desc.Function(name, code.co_argcount, None, identity, text=name, ref=fn)


def constant(value):
    """A Python constant (an operator's identity, a digit range, ``items_per_thread=4``)."""
    if isinstance(value, str):
        return desc.Literal(value, None)
    if isinstance(value, bool):
        return desc.Literal(value, desc.BOOL)
    if isinstance(value, int):
        return desc.Literal(value, desc.Scalar("int64"))
    if isinstance(value, float):
        return desc.Literal(value, desc.Scalar("float64"))
    if _numpy_number(value):
        return desc.Literal(value.item(), desc.Scalar(value.dtype.name))
    if isinstance(value, tuple):
        return desc.Tuple(tuple(constant(v) for v in value))
    if callable(value):
        return describe(value)
    return desc.Literal(value, None)


__all__ = ["CuteSignednessWarning", "describe", "constant", "dtype_of", "number_class",
           "unsigned_tensors"]
