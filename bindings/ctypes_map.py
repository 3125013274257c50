"""numba dtypes <-> C++ type spellings, and Python template keyword values -> C++ arguments."""
from __future__ import annotations

from enum import Enum

import numpy as np
from numba.cuda import types
from numba.cuda.np import numpy_support

from .errors import CoopgenTypeError

CPP_OF = {
    types.int8: "signed char", types.uint8: "unsigned char",
    types.int16: "short", types.uint16: "unsigned short",
    types.int32: "int", types.uint32: "unsigned int",
    types.int64: "long long", types.uint64: "unsigned long long",
    types.float32: "float", types.float64: "double",
    types.boolean: "bool",
}
#: C++ parameter types that are concrete in CUB's signatures (int (&ranks)[N], ...).
FIXED_CPP_TYPES = {"int": types.int32, "unsigned int": types.uint32, "bool": types.boolean,
                   "unsigned": types.uint32, "float": types.float32, "double": types.float64}
SUPPORTED = ", ".join(str(t) for t in CPP_OF)


def record_alignment(rec) -> int:
    """Natural alignment of a record whose fields sit at multiples of their sizes, else 1."""
    align = 1
    for f in rec.fields.values():
        size = f.type.bitwidth // 8 if hasattr(f.type, "bitwidth") else 1
        if size & (size - 1) or f.offset % size:
            return 1
        align = max(align, size)
    return align if rec.size % align == 0 else 1


def record_name(rec) -> str:
    import hashlib
    return "coopgen_rec_" + hashlib.sha256(str(rec.dtype.descr).encode()).hexdigest()[:12]


def record_struct(rec) -> str:
    """A C++ struct with the record's size and alignment. Numeric fields become typed members
    at numpy's offsets (padding spelled out), so copies move whole numbers and a record in a
    thread's items stays in registers after LTO; a byte array would be copied and reassembled
    byte by byte. Records the members cannot spell (nested, sub-arrays, packed) stay bytes.
    Decomposers reach fields by offset either way."""
    name = record_name(rec)
    members = _typed_members(rec) or f"unsigned char bytes[{rec.size}];"
    return (f"#ifndef COOPGEN_DEFINED_{name}\n#define COOPGEN_DEFINED_{name}\n"
            f"struct alignas({record_alignment(rec)}) {name} {{ {members} }};\n"
            f"static_assert(sizeof({name}) == {rec.size}, \"numpy's record size\");\n"
            f"#endif")


def udt_layout(dt) -> tuple[int, int] | None:
    """(size, alignment) of a user-defined numba type whose data model is a struct (a numba
    extension type such as ``Complex`` or ``Float2``), else None."""
    if not isinstance(dt, types.Type) or (type(dt).__module__ or "").split(".")[0] in (
            "numba", "numba_cuda", "coopgen"):
        return None  # numba's own types (strings, tuples, ...) are no user's structs
    from numba.cuda.datamodel.models import StructModel
    from numba.cuda.descriptor import cuda_target

    struct_models = (StructModel,)
    try:
        from numba.core.datamodel.models import StructModel as CoreStructModel
        struct_models += (CoreStructModel,)
    except ImportError:
        pass
    ctx = cuda_target.target_context
    try:
        model = ctx.data_model_manager[dt]
    except KeyError:
        return None
    if not isinstance(model, struct_models):
        return None
    ll = ctx.get_data_type(dt)
    return ctx.get_abi_sizeof(ll), ctx.get_abi_alignment(ll)


def struct_name(dt) -> str:
    """C++ name of a record or user-defined type (an opaque struct of its size)."""
    import hashlib
    if isinstance(dt, types.Record):
        return record_name(dt)
    return "coopgen_udt_" + hashlib.sha256(f"{dt!r}:{udt_layout(dt)}".encode()).hexdigest()[:12]


def struct_decl(dt) -> str:
    """The opaque C++ struct of a record or user-defined type: its size and alignment; C++
    only copies it, and operators (numba code) read its fields."""
    if isinstance(dt, types.Record):
        decl = record_struct(dt)
    else:
        size, align = udt_layout(dt)
        name = struct_name(dt)
        decl = (f"#ifndef COOPGEN_DEFINED_{name}\n#define COOPGEN_DEFINED_{name}\n"
                f"struct alignas({align}) {name} {{ unsigned char bytes[{size}]; }};\n#endif")
    STRUCT_DECLS[struct_name(dt)] = decl
    return decl


#: C++ name -> declaration of every struct type spelled so far (a two-phase object's layout
#: is computed from its template arguments' spellings alone).
STRUCT_DECLS: dict[str, str] = {}


def is_struct(dt) -> bool:
    """Records and user-defined struct types: passed to C++ by pointer, never by value."""
    dt = types.unliteral(dt)
    return isinstance(dt, types.Record) or udt_layout(dt) is not None


def _typed_members(rec) -> str | None:
    """``float m0; float m1; ...`` at numpy's offsets, or None where that cannot match numpy."""
    if record_alignment(rec) == 1 and rec.size > 1:
        return None  # packed (unaligned fields): typed members would move them
    members, end = [], 0
    for i, f in enumerate(sorted(rec.fields.values(), key=lambda f: f.offset)):
        ct = CPP_OF.get(f.type)
        if ct is None or f.offset < end:
            return None
        if f.offset > end:
            members.append(f"unsigned char pad{i}[{f.offset - end}];")
        members.append(f"{ct} m{i};")
        end = f.offset + f.type.bitwidth // 8
    if end < rec.size:
        members.append(f"unsigned char pad_end[{rec.size - end}];")
    return " ".join(members)


def ctype(dt, prim: str, what: str) -> str:
    dt = types.unliteral(dt)
    if isinstance(dt, types.Record):
        for f in dt.fields.values():
            ctype(f.type, prim, f"{what} field")
        struct_decl(dt)
        return record_name(dt)
    if udt_layout(dt) is not None:
        struct_decl(dt)
        return struct_name(dt)
    try:
        return CPP_OF[dt]
    except KeyError:
        raise CoopgenTypeError(f"{prim}: {what} has unsupported dtype {dt}; supported: "
                               f"{SUPPORTED}") from None


def scalar_ctype(dt, prim: str, what: str) -> str:
    """C type of a scalar passed by value: numba's i1 booleans travel as unsigned char."""
    dt = types.unliteral(dt)
    return "unsigned char" if dt == types.boolean else ctype(dt, prim, what)


def from_cpp(name: str):
    return FIXED_CPP_TYPES.get(name)


def as_dtype(value, prim: str, what: str):
    """A numpy dtype, numpy scalar type, numba type or dtype name -> a numba scalar type."""
    if isinstance(value, types.Type):
        dt = value.dtype if isinstance(value, (types.NumberClass, types.DType)) else value
    else:
        try:
            dt = numpy_support.from_dtype(np.dtype(value))
        except TypeError:
            raise CoopgenTypeError(f"{prim}: {what}={value!r} is not a dtype") from None
    if dt not in CPP_OF and not is_struct(dt):
        raise CoopgenTypeError(f"{prim}: {what}={value!r} is an unsupported dtype; supported: "
                               f"{SUPPORTED}, numpy records and numba struct types")
    return dt


def enum_spelling(prim: str, keyword: str, enum, value) -> str:
    """"warp_transpose", "BLOCK_LOAD_WARP_TRANSPOSE", an enum member of that name
    (coopgen.enums) or its int -> cub::BLOCK_LOAD_WARP_TRANSPOSE. Members map by name and ints
    count from 1 in CUB's order, as cuda.coop's IntEnums do (CUB's own values start at 0)."""
    names = [n for n, _ in enum.values]
    short = {_short_name(n, names).lower(): n for n in names}
    if isinstance(value, Enum):
        value = value.name
    if isinstance(value, str):
        key = value.strip()
        for n in names:
            if key.upper() == n:
                return f"cub::{n}"
        if key.lower() in short:
            return f"cub::{short[key.lower()]}"
    elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        ordered = [n for n, _ in sorted(enum.values, key=lambda nv: nv[1])]
        if 1 <= value <= len(ordered):
            return f"cub::{ordered[value - 1]}"
    allowed = ", ".join(repr(s) for s in short)
    raise CoopgenTypeError(f"{prim}: unknown {keyword}={value!r}; allowed: {allowed} (or 1 to "
                           f"{len(names)}, in that order)")


def _short_name(name: str, names: list[str]) -> str:
    """BLOCK_LOAD_WARP_TRANSPOSE -> WARP_TRANSPOSE: drop the prefix all values share."""
    prefix = names[0]
    for n in names[1:]:
        while not n.startswith(prefix):
            prefix = prefix[:-1]
    prefix = prefix[:prefix.rfind("_") + 1] if "_" in prefix else ""
    return name[len(prefix):] or name


def template_value(prim: str, tparam, value, enums) -> str:
    """A template keyword's Python value -> its C++ template argument."""
    enum = enums.get(tparam.cpp_type)
    if enum is not None:
        return enum_spelling(prim, tparam.keyword, enum, value)
    if tparam.cpp_type == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise CoopgenTypeError(f"{prim}: {tparam.keyword}={value!r} must be True or False")
        return "true" if value else "false"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise CoopgenTypeError(f"{prim}: {tparam.keyword}={value!r} must be an integer "
                               f"({tparam.cpp_type} {tparam.name})")
    return str(int(value))
