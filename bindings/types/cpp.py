"""C++ spellings: dtypes (scalars, records, user structs), enum values and template arguments."""
import hashlib
from enum import Enum

import numpy as np

from ..model.errors import CoopgenError
from .desc import Scalar, Struct, host_dtype, unliteral

CPP_OF = {"int8": "signed char", "uint8": "unsigned char", "int16": "short",
          "uint16": "unsigned short", "int32": "int", "uint32": "unsigned int",
          "int64": "long long", "uint64": "unsigned long long", "float32": "float",
          "float64": "double", "bool": "bool"}
#: Numbers a C function takes by value; every other type crosses a shim by pointer.
C_NUMBERS = frozenset(CPP_OF)
_LANES = {"int8": "char", "uint8": "uchar", "int16": "short", "uint16": "ushort", "int32": "int",
          "uint32": "uint", "int64": "longlong", "uint64": "ulonglong", "float32": "float",
          "float64": "double"}
CPP_OF.update({"float16": "__half", "bfloat16": "__nv_bfloat16",
               "complex64": "::cuda::std::complex<float>",
               "complex128": "::cuda::std::complex<double>"})
# numba-cuda's vector types as CUDA's (4 lanes of 64 bits: CUDA 13's 16-byte aligned spelling)
CPP_OF.update({f"{lane}x{n}": f"{c}{n}" + ("_16a" if n == 4 and lane[-2:] == "64" else "")
               for lane, c in _LANES.items() for n in (1, 2, 3, 4)})
#: C++ spelling -> kind (int, float, complex, vector, ...; records and structs: "struct").
KIND_OF_CPP = {cpp: Scalar(name).kind for name, cpp in CPP_OF.items()}
#: Headers the types need in every translation unit (cuda_fp16.h/cuda_bf16.h are pre-included).
TYPE_HEADERS = ("cuda/std/complex",)
#: C++ parameter types that are concrete in CUB's signatures (int (&ranks)[N], ...).
FIXED_CPP_TYPES = {"int": Scalar("int32"), "unsigned int": Scalar("uint32"),
                   "bool": Scalar("bool"), "unsigned": Scalar("uint32"),
                   "float": Scalar("float32"), "double": Scalar("float64"),
                   "__half": Scalar("float16"), "__nv_bfloat16": Scalar("bfloat16")}
SUPPORTED = ", ".join(n for n in CPP_OF if "x" not in n) + ", vector types (float32x2, ...)"
#: C++ name -> declaration of every struct type spelled so far (a two-phase object's layout
#: is computed from its template arguments' spellings alone).
STRUCT_DECLS: dict[str, str] = {}


def struct_name(dt: Struct) -> str:
    prefix = "coopgen_rec_" if dt.record else "coopgen_udt_"
    return prefix + hashlib.sha256(dt.key.encode()).hexdigest()[:12]


def _typed_members(dt: Struct) -> str | None:
    """``float m0; float m1; ...`` at numpy's offsets, or None where that cannot match numpy:
    copies then move whole numbers, and a record in a thread's items stays in registers after
    LTO (a byte array would be copied and reassembled byte by byte)."""
    if not dt.record or (dt.align == 1 and dt.size > 1):
        return None  # opaque, or packed (typed members would move unaligned fields)
    members, end = [], 0
    for i, f in enumerate(sorted(dt.fields, key=lambda f: f.offset)):
        ct = CPP_OF[f.type.name] if f.type is not None and f.type.name in C_NUMBERS else None
        if ct is None or f.offset < end:
            return None
        if f.offset > end:
            members.append(f"unsigned char pad{i}[{f.offset - end}];")
        members.append(f"{ct} m{i};")
        end = f.offset + f.size
    if end < dt.size:
        members.append(f"unsigned char pad_end[{dt.size - end}];")
    return " ".join(members)


def struct_decl(dt: Struct) -> str:
    """A C++ struct of the type's size and alignment (typed members where they match numpy,
    else bytes): C++ only copies it; operators (the backend's code) read its fields."""
    name = struct_name(dt)
    members = _typed_members(dt) or f"unsigned char bytes[{dt.size}];"
    check = (f"static_assert(sizeof({name}) == {dt.size}, \"numpy's record size\");\n"
             if dt.record else "")
    decl = (f"#ifndef COOPGEN_DEFINED_{name}\n#define COOPGEN_DEFINED_{name}\n"
            f"struct alignas({dt.align}) {name} {{ {members} }};\n{check}#endif")
    STRUCT_DECLS[name] = decl
    return decl


def is_struct(dt) -> bool:
    """Records and user-defined struct types: passed to C++ by pointer, never by value."""
    return isinstance(unliteral(dt), Struct)


def by_pointer(dt) -> bool:
    """Structs, half and bfloat16 numbers, complex numbers and vector types: passed to C++ (and
    to Python operators) by pointer, so both sides read the same bytes whatever their ABI."""
    dt = unliteral(dt)
    return is_struct(dt) or isinstance(dt, Scalar) and dt.name not in C_NUMBERS


def ctype(dt, prim: str, what: str) -> str:
    dt = unliteral(dt)
    if isinstance(dt, Struct):
        for f in dt.fields:
            if f.type is not None:
                ctype(f.type, prim, f"{what} field")
        struct_decl(dt)
        return struct_name(dt)
    cpp = CPP_OF.get(dt.name) if isinstance(dt, Scalar) else None
    if cpp is None:
        raise CoopgenError(f"{prim}: {what} has unsupported dtype {dt}; supported: {SUPPORTED}")
    return cpp


def scalar_ctype(dt, prim: str, what: str) -> str:
    """C type of a scalar passed by value: booleans travel as unsigned char."""
    return "unsigned char" if unliteral(dt) == Scalar("bool") else ctype(dt, prim, what)


def as_dtype(value, prim: str, what: str):
    """A dtype given on the host (numpy/numba type or name, record dtype) -> its description."""
    dt = value if isinstance(value, (Scalar, Struct)) else host_dtype(value)
    if dt is None:
        raise CoopgenError(f"{prim}: {what}={value!r} is not a dtype")
    if not isinstance(dt, Struct) and getattr(dt, "name", None) not in CPP_OF:
        raise CoopgenError(f"{prim}: {what}={value!r} is an unsupported dtype; supported: "
                           f"{SUPPORTED}, numpy records and numba struct types")
    return dt


def is_whole(value) -> bool:
    """An integer, numpy's included, and not a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))


def short_name(name: str, names: list[str]) -> str:
    """BLOCK_LOAD_WARP_TRANSPOSE -> WARP_TRANSPOSE: drop the prefix all values share."""
    prefix = names[0]
    for n in names[1:]:
        while not n.startswith(prefix):
            prefix = prefix[:-1]
    prefix = prefix[:prefix.rfind("_") + 1] if "_" in prefix else ""
    return name[len(prefix):] or name


def template_value(prim: str, tparam, value, enums) -> str:
    """A template keyword's Python value -> its C++ template argument. An enum's is
    "warp_transpose", "BLOCK_LOAD_WARP_TRANSPOSE", a member of that name (coopgen.enums) or an
    int counted from 1 in CUB's order, as cuda.coop's IntEnums do (CUB's own start at 0)."""
    enum = enums.get(tparam.cpp_type)
    if enum is not None:
        names = [n for n, _ in enum.values]
        short = {short_name(n, names).lower(): n for n in names}
        if isinstance(value, (str, Enum)):
            key = value.name if isinstance(value, Enum) else value.strip()
            name = key.upper() if key.upper() in names else short.get(key.lower())
        else:
            in_range = is_whole(value) and 1 <= value <= len(names)
            name = sorted(enum.values, key=lambda nv: nv[1])[value - 1][0] if in_range else None
        if name is None:
            allowed = ", ".join(map(repr, short))
            raise CoopgenError(f"{prim}: unknown {tparam.keyword}={value!r}; allowed: {allowed} "
                               f"(or 1 to {len(names)}, in that order)")
        return f"cub::{name}"
    if tparam.cpp_type == "bool":
        if not isinstance(value, (bool, np.bool_)):
            raise CoopgenError(f"{prim}: {tparam.keyword}={value!r} must be True or False")
        return "true" if value else "false"
    if not is_whole(value):
        raise CoopgenError(f"{prim}: {tparam.keyword}={value!r} must be an integer "
                           f"({tparam.cpp_type} {tparam.name})")
    return str(int(value))
