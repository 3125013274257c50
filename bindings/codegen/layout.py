"""Temp-storage size and alignment of a two-phase object, computed by NVRTC (no GPU needed):
``sizeof``/``alignof`` of its TempStorage as two ``__device__`` constants, read back from the
PTX (cached on disk like every compile); and explicit storage checked against them."""
import functools
import re

from ..model import registry
from ..model.errors import CoopgenError
from ..resolve.templates import class_template_args
from ..types.cpp import STRUCT_DECLS, TYPE_HEADERS
from ..types.desc import Array, Storage
from . import nvrtc
from .shims import cfg_struct

_VALUE = re.compile(r"\.u64 (coopgen_ts_(?:size|align))\s*=\s*(\d+);")


def temp_storage_layout(cls, fixed: dict) -> tuple[int, int]:
    """(bytes, alignment) of ``cls``'s TempStorage for the template keywords ``fixed``."""
    args = class_template_args(f"{cls.scope}.{cls.name}", cls, fixed, registry.enums())
    return resolved_layout(cls, args)


@functools.lru_cache(maxsize=None)
def resolved_layout(cls, args: tuple) -> tuple[int, int]:
    """(bytes, alignment) of ``cls``'s TempStorage for template arguments ``args``, as
    (TParam, C++ spelling) pairs."""
    structs = "".join(STRUCT_DECLS[v] + "\n" for _, v in args if v in STRUCT_DECLS)
    includes = "".join(f"#include <{h}>\n" for h in (*TYPE_HEADERS, cls.header))
    source = (includes + structs + cfg_struct("coopgen_layout", cls, args)
              + '\nextern "C" __device__ const unsigned long long coopgen_ts_size = '
              "sizeof(typename ::cub::coopgen_layout::prim::TempStorage);\n"
              'extern "C" __device__ const unsigned long long coopgen_ts_align = '
              "alignof(typename ::cub::coopgen_layout::prim::TempStorage);\n")
    values = dict(_VALUE.findall(nvrtc.compile_ptx(source)))
    return int(values["coopgen_ts_size"]), int(values["coopgen_ts_align"])


def check_storage_fits(prim: str, r) -> None:
    """Explicit storage whose size the kernel's types know must hold the class's TempStorage
    (CUB would silently run past its end)."""
    ty = r.temp_storage_arg[1] if r.temp_storage_arg else None
    if isinstance(ty, Array) and ty.length is not None:
        given, what, given_align = ty.length * max(1, getattr(ty.dtype, "bits", 8) // 8), \
            f"temp_storage={ty}", None
    elif isinstance(ty, Storage) and (ty.obj.size, ty.obj.alignment) != (None, None):
        given, what, given_align = ty.obj.size, f"temp_storage={ty.obj!r}", ty.obj.alignment
    else:
        return
    try:
        need, align = resolved_layout(r.cls, r.template_args)
    except nvrtc.NvrtcError:  # CUB rejects these template arguments: the kernel's compile says why
        return
    args = ", ".join(v for _, v in r.template_args)
    if given is not None and need > given:
        raise CoopgenError(f"{prim}: {what} holds {given} bytes, but the TempStorage of "
                           f"{r.cls.cpp}<{args}> needs {need} bytes (alignment {align}): "
                           f"size_in_bytes is smaller than required")
    if given_align is not None and align > given_align:
        raise CoopgenError(f"{prim}: {what} is {given_align}-byte aligned, but the TempStorage "
                           f"of {r.cls.cpp}<{args}> needs {align}-byte alignment: alignment is "
                           f"smaller than required")
