"""Temp-storage size and alignment of a two-phase object, computed by NVRTC (no GPU needed).

The source declares two ``__device__`` constants holding ``sizeof``/``alignof`` of the
primitive's TempStorage; NVRTC compiles it to PTX (cached on disk like every compile) and the
values are read back from their initialisers.
"""
from __future__ import annotations

import functools
import re

from . import nvrtc
from .model import registry
from .ctypes_map import STRUCT_DECLS
from .resolve import class_template_args
from .shims import cfg_struct

_VALUE = re.compile(r"\.u64 (coopgen_ts_(?:size|align))\s*=\s*(\d+);")


def temp_storage_layout(cls, fixed: dict) -> tuple[int, int]:
    """(bytes, alignment) of ``cls``'s TempStorage for the template keywords ``fixed``."""
    key = tuple(sorted((k, repr(v)) for k, v in fixed.items()))
    return _layout(cls, key, tuple(fixed.items()))


@functools.lru_cache(maxsize=None)
def _layout(cls, key, items) -> tuple[int, int]:
    args = class_template_args(f"{cls.scope}.{cls.name}", cls, dict(items), registry.enums())
    return resolved_layout(cls, args)


@functools.lru_cache(maxsize=None)
def resolved_layout(cls, args: tuple) -> tuple[int, int]:
    """(bytes, alignment) of ``cls``'s TempStorage for template arguments ``args``, as
    (TParam, C++ spelling) pairs."""
    structs = "".join(STRUCT_DECLS[v] + "\n" for _, v in args if v in STRUCT_DECLS)
    source = (f"#include <{cls.header}>\n" + structs + cfg_struct("coopgen_layout", cls, args)
              + "\n"
              'extern "C" __device__ const unsigned long long coopgen_ts_size = '
              "sizeof(typename ::cub::coopgen_layout::prim::TempStorage);\n"
              'extern "C" __device__ const unsigned long long coopgen_ts_align = '
              "alignof(typename ::cub::coopgen_layout::prim::TempStorage);\n")
    values = dict(_VALUE.findall(nvrtc.compile_ptx(source)))
    return int(values["coopgen_ts_size"]), int(values["coopgen_ts_align"])
