"""``coopgen.local.array`` / ``coopgen.shared.array``: numba arrays whose shape is in the type.

numba's ``cuda.local.array`` types carry no shape, so a primitive could not infer
``items_per_thread`` from them. These arrays are the same data model and lowering as numba's,
with the static shape and memory space added to the type (and dropped by slicing, as it should).
"""
from __future__ import annotations

from numba.cuda import types
from numba.cuda.cudaimpl import _generic_array, _get_unique_smem_id
from numba.cuda.cudadrv import nvvm
from numba.cuda.datamodel.models import ArrayModel
from numba.cuda.extending import lower_builtin, register_model, typeof_impl  # noqa: F401
from numba.cuda.typing.npydecl import parse_dtype
from numba.cuda.typing.templates import AbstractTemplate, infer_global, signature


SHARED_ALIGNMENT = 16


class SizedArray(types.Array):
    """A C-contiguous array in local or shared memory with a compile-time shape."""

    def __init__(self, dtype, shape: tuple[int, ...], space: str):
        self.shape = tuple(shape)
        self.space = space
        super().__init__(dtype, len(shape), "C")
        self.name = f"{space}.array({dtype}, {self.shape})"

    @property
    def key(self):
        return super().key + (self.shape, self.space)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n


register_model(SizedArray)(ArrayModel)


def static_length(aryty) -> int | None:
    """Items in an array type whose shape the type knows (None for plain numba arrays)."""
    return aryty.size if isinstance(aryty, SizedArray) else None


def _literal_shape(shape) -> tuple[int, ...] | None:
    if isinstance(shape, types.IntegerLiteral):
        return (shape.literal_value,)
    if isinstance(shape, types.BaseTuple) and all(
            isinstance(s, types.IntegerLiteral) for s in shape):
        return tuple(s.literal_value for s in shape)
    return None


def _make_array_function(space: str):
    def array(shape, dtype):
        """Allocate a per-thread (local) or per-block (shared) array inside a kernel."""
        raise NotImplementedError(f"coopgen.{space}.array can only be called inside a kernel")

    array.__qualname__ = f"{space}.array"

    class Template(AbstractTemplate):
        key = array
        prefer_literal = True

        def generic(self, args, kws):
            if kws or len(args) != 2:
                return None
            shape = _literal_shape(args[0])
            dtype = parse_dtype(args[1])
            if shape is None or dtype is None:
                return None
            return signature(SizedArray(dtype, shape, space), *args)

    infer_global(array, types.Function(Template))

    @lower_builtin(array, types.Any, types.Any)
    def lower(context, builder, sig, args):
        ret = sig.return_type
        if space == "local":
            # Records are reached by typed field offsets in C++: give them room to be aligned.
            align = SHARED_ALIGNMENT if isinstance(ret.dtype, types.Record) else None
            name, addrspace = "_coopgen_lmem", nvvm.ADDRSPACE_LOCAL
        else:
            # 16-byte aligned, so a uint8 array can hold any CUB TempStorage.
            name, addrspace, align = (_get_unique_smem_id("_coopgen_smem"),
                                      nvvm.ADDRSPACE_SHARED, SHARED_ALIGNMENT)
        return _generic_array(context, builder, shape=ret.shape, dtype=ret.dtype,
                              symbol_name=name, addrspace=addrspace, alignment=align)

    return array


local_array = _make_array_function("local")
shared_array = _make_array_function("shared")
