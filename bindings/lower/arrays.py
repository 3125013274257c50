"""``coopgen.local.array``/``coopgen.shared.array``: numba's arrays with the static shape and
memory space in the type (numba's carry no shape to infer ``items_per_thread`` from); slicing
drops them. ``coopgen.TempStorage``: a type whose value is nothing at run time (the shims reach
the storage by its symbol). coopgen's enums: members are compile-time constants, classes are
values whose attributes are members."""
import hashlib
import inspect
import math

from llvmlite import ir
from numba.cuda import cgutils, types
from numba.cuda.core.imputils import lower_cast, lower_constant, lower_getattr_generic
from numba.cuda.cudaimpl import _generic_array, _get_unique_smem_id
from numba.cuda.cudadrv import nvvm
from numba.cuda.datamodel.models import ArrayModel, IntegerModel, OpaqueModel
from numba.cuda.extending import lower_builtin, register_model, typeof_impl
from numba.cuda.typing.npydecl import parse_dtype
from numba.cuda.typing.templates import (AbstractTemplate, AttributeTemplate, infer_getattr,
                                         infer_global, signature)
from numba.cuda.typing.typeof import Purpose
from numba.cuda.vector_types import VectorType, vector_types

from ..codegen.bundle import Shim
from ..codegen.shims import SHARED_ALIGNMENT, STORAGE
from ..codegen.storage import TempStorage, reservation
from ..types.enums import CoopEnum, CoopEnumMeta
from .bundle import bundle_for
from .errors import CoopgenTypeError
from .numba_internals import lowering_site

#: A coopgen.shared.array this large joins the kernel's coopgen storage (shared_placement), so
#: that it moves to dynamic shared memory with it past the static limit; smaller ones stay
#: numba's static arrays (and count toward the limit).
STORAGE_ARRAY_BYTES = 16 * 1024


class SizedArray(types.Array):
    """A C-contiguous array in local or shared memory with a compile-time shape."""

    def __init__(self, dtype, shape: tuple[int, ...], space: str, alignment: int | None = None):
        self.shape = tuple(shape)
        self.space = space
        self.alignment = alignment  # requested at allocation (alignment=); None: the default
        super().__init__(dtype, len(shape), "C")
        align = f", alignment={alignment}" if alignment else ""
        self.name = f"{space}.array({dtype}, {self.shape}{align})"

    @property
    def key(self):
        return super().key + (self.shape, self.space, self.alignment)

    @property
    def size(self) -> int:
        return math.prod(self.shape)


register_model(SizedArray)(ArrayModel)


class ThreadDataArray(SizedArray):
    """A ``coop.ThreadData`` whose dtype its first use gave: every use must agree."""


register_model(ThreadDataArray)(ArrayModel)


class TempStorageType(types.Opaque):
    def __init__(self, obj: TempStorage):
        self.obj = obj
        super().__init__(f"coopgen.TempStorage<{obj.symbol}>")

    @property
    def key(self):
        return self.obj.symbol


register_model(TempStorageType)(OpaqueModel)
typeof_impl.register(TempStorage)(lambda val, c: TempStorageType(val))


ARRAY_PARAMETERS = ("shape", "dtype", "alignment")
POSITIONAL = "coopgen_pos_"  # names of positional parameters in a folded pysig


#: value types a group call's result array may take from a value (coopgen.resolve.group_calls)
SCALARS = (types.Number, types.Boolean, types.Record)


def positional_signature(ret, args, kws, recvr=None, lead=()):
    """numba's signature of a call with its keywords folded after the positionals (the first
    of which are named ``lead``)."""
    names = list(lead) + [f"{POSITIONAL}{i}" for i in range(len(args) - len(lead))] + list(kws)
    pysig = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                               for n in names])
    return signature(ret, *args, *kws.values(), recvr=recvr).replace(pysig=pysig)


def _array_type(space: str, args, kws, array_type=SizedArray) -> SizedArray:
    """The type of an array call, from its arguments (numba types) by position or keyword."""
    where = f"coopgen.{space}.array"
    if len(args) > len(ARRAY_PARAMETERS):
        raise CoopgenTypeError(f"{where}: takes (shape, dtype, alignment=None), got "
                               f"{len(args)} positional arguments")
    given = dict(zip(ARRAY_PARAMETERS, args))
    for k, v in kws.items():
        if k not in ARRAY_PARAMETERS:
            raise CoopgenTypeError(f"{where}: unknown keyword {k!r}; parameters are shape, "
                                   f"dtype, alignment")
        if k in given:
            raise CoopgenTypeError(f"{where}: {k} given twice (by position and keyword)")
        given[k] = v
    if missing := [k for k in ("shape", "dtype") if k not in given]:
        raise CoopgenTypeError(f"{where}: missing required argument {missing[0]!r}")
    shape = given["shape"]
    shape = tuple(shape) if isinstance(shape, types.BaseTuple) else (shape,)
    if not all(isinstance(n, types.IntegerLiteral) for n in shape):
        raise CoopgenTypeError(
            f"{where}: shape={given['shape']} must be a compile-time constant: an int or a "
            f"tuple of ints, a kernel argument or an array's .shape (read from the launch's "
            f"arguments when a launch compiles the kernel)")
    shape = tuple(n.literal_value for n in shape)
    dtype = parse_dtype(given["dtype"]) or vector_type(getattr(given["dtype"], "typing_key", None))
    if dtype is None and array_type is ThreadDataArray and isinstance(given["dtype"], SCALARS):
        dtype = given["dtype"]  # the rewrite's array of a value's type (a group call's result)
    if dtype is None:
        raise CoopgenTypeError(f"{where}: dtype={given['dtype']} is not a dtype (a numpy/numba "
                               f"type or an array's .dtype)")
    if any(n < 1 for n in shape):
        raise CoopgenTypeError(f"{where}: shape={shape} must be positive")
    align = given.get("alignment")
    value = align.literal_value if isinstance(align, types.IntegerLiteral) else None
    if align is not None and not isinstance(align, (types.NoneType, types.Omitted)) and (
            value is None or value <= 0 or value & (value - 1)):
        raise CoopgenTypeError(f"{where}: alignment={align} must be a compile-time power of two")
    return array_type(dtype, shape, space, value)


def vector_type(value):
    """numba-cuda's vector type of ``numba.cuda.float32x2`` and the like, else None."""
    vector = vector_types.get(getattr(value, "__name__", None))
    return vector if vector is not None and vector.user_facing_object is value else None


def _make_array_function(space: str, array_type=SizedArray, array=None, reserved=False):
    """Give ``array`` (made here when None: the rewrite's own) numba typing and lowering;
    ``reserved``: a TempStorage's reservation, whose storage is its last argument."""
    if array is None:
        def array(shape, dtype, alignment=None):
            raise NotImplementedError(f"coopgen.{space}.array can only be called in a kernel")
        array.__qualname__ = f"{space}.array"

    class Template(AbstractTemplate):
        key = array
        prefer_literal = True

        def generic(self, args, kws):
            ty = _array_type(space, args[:-1] if reserved else args, kws, array_type)
            return positional_signature(ty, args, kws, lead=ARRAY_PARAMETERS[:len(args)])

    infer_global(array, types.Function(Template))

    @lower_builtin(array, types.VarArg(types.Any))
    def lower(context, builder, sig, args):
        ret = sig.return_type
        # Shared arrays are 16-byte aligned, so that a uint8 one can hold any CUB TempStorage.
        # Records are reached by typed field offsets in C++, complex and vector types are more
        # aligned there than in numba: local ones get room to be aligned too.
        align = SHARED_ALIGNMENT if space == "shared" or isinstance(
            ret.dtype, (types.Record, types.Complex, VectorType)) else None
        if ret.alignment is not None:
            align = max(align or 1, ret.alignment)
        name, addrspace = "_coopgen_lmem", nvvm.ADDRSPACE_LOCAL
        if space == "shared":
            name, addrspace = _get_unique_smem_id("_coopgen_smem"), nvvm.ADDRSPACE_SHARED
            nbytes = ret.size * context.get_abi_sizeof(context.get_data_type(ret.dtype))
            if reserved:
                return _reserved_array(context, builder, ret, nbytes, sig.args[-1].obj)
            if nbytes >= STORAGE_ARRAY_BYTES:
                return _storage_array(context, builder, ret, nbytes, align)
        # numba allocates no bfloat16 arrays; its data is an i16, and so is the array's
        dtype = types.int16 if ret.dtype == types.bfloat16 else ret.dtype
        return _generic_array(context, builder, shape=ret.shape, dtype=dtype,
                              symbol_name=name, addrspace=addrspace, alignment=align)

    return array


def _storage_array(context, builder, aryty, nbytes: int, align: int):
    """A shared array kept in the translation unit's storage struct: its address comes from an
    accessor shim, which LTO inlines to the same constant address a numba global would have
    (or to the dynamic shared memory base)."""
    bundle = bundle_for(context.active_code_library, module=builder.module)
    site = lowering_site()
    where = (site[0].func_id.modname, site[0].func_id.func_qualname) if site else bundle.name
    # Named from what it is (the function, its how-many-th array, shape, dtype): the same
    # kernel gives the same translation unit (so NVRTC's cache) in every process.
    key = (where, bundle.shared_array_count(), aryty.shape, str(aryty.dtype), align)
    symbol = "coopgen_array_" + hashlib.sha256(repr(key).encode()).hexdigest()[:12]
    bundle.add(Shim(symbol, f"COOPGEN_SHIM void* {symbol}()\n{{\n  return {STORAGE}.{symbol};\n}}",
                    shared_array=(nbytes, align)))
    return _array_at(context, builder, aryty, symbol)


def _reserved_array(context, builder, aryty, nbytes: int, storage):
    """``storage.reserve(...)``: its member of the storage (coopgen.codegen.storage)."""
    bundle = bundle_for(context.active_code_library, module=builder.module)
    align = max(aryty.alignment or 1, context.get_abi_alignment(context.get_data_type(
        aryty.dtype)))
    shim = reservation(storage, nbytes, align, bundle.next_use_index(storage.symbol))
    bundle.add(shim)
    return _array_at(context, builder, aryty, shim.symbol)


def _array_at(context, builder, aryty, symbol: str):
    """The array at the address the accessor shim ``symbol`` returns."""
    i8p = ir.IntType(8).as_pointer()
    data = builder.call(cgutils.get_or_insert_function(builder.module, ir.FunctionType(i8p, []),
                                                       symbol), [])
    lldtype = context.get_data_type(aryty.dtype)
    itemsize = context.get_abi_sizeof(lldtype)
    strides = [itemsize * math.prod(aryty.shape[i + 1:]) for i in range(len(aryty.shape))]
    ary = context.make_array(aryty)(context, builder)
    intp = lambda v: context.get_constant(types.intp, v)  # noqa: E731
    context.populate_array(ary, data=builder.bitcast(data, lldtype.as_pointer()),
                           shape=[intp(n) for n in aryty.shape], strides=[intp(n) for n in strides],
                           itemsize=intp(itemsize), meminfo=None)
    return ary._getvalue()


local_array = _make_array_function("local")
shared_array = _make_array_function("shared")
thread_data_array = _make_array_function("local", ThreadDataArray)
thread_data_array.__qualname__ = "local.thread_data"


def _reserve(shape, dtype, alignment, storage):
    """``storage.reserve(shape, dtype, alignment)`` in a kernel (the rewrite's)."""


reserved_array = _make_array_function("shared", array=_reserve, reserved=True)


def register_array(array, space: str) -> None:
    """coopgen.local.array / coopgen.shared.array, as users call them."""
    _make_array_function(space, array=array)


class EnumMemberLiteral(types.IntegerLiteral):
    """A coopgen enum member as a literal: the member itself is the value, so coopgen reads
    its name; at run time it is its int."""

    def __init__(self, member: CoopEnum):
        self._literal_init(member)
        self._literal_type_cache = types.int64
        types.Integer.__init__(self, name=f"Literal[{type(member).__name__}]({member.name})",
                               bitwidth=64, signed=True)


class EnumClassType(types.Opaque):
    """A coopgen enum class in a kernel: its attributes are member literals."""

    def __init__(self, cls):
        self.cls = cls
        super().__init__(f"coopgen.enum.{cls.__name__}")

    @property
    def key(self):
        return self.cls


register_model(EnumMemberLiteral)(IntegerModel)
register_model(EnumClassType)(OpaqueModel)
typeof_impl.register(CoopEnumMeta)(lambda val, c: EnumClassType(val))


@typeof_impl.register(CoopEnum)
def _typeof_member(val, c):
    if c.purpose == Purpose.constant:
        return EnumMemberLiteral(val)
    return types.IntEnumMember(type(val), types.int64)  # a kernel argument: a run-time int


@infer_getattr
class _EnumClassAttrs(AttributeTemplate):
    key = EnumClassType

    def generic_resolve(self, typ, attr):
        return EnumMemberLiteral(m) if (m := typ.cls.__members__.get(attr)) is not None else None


lower_getattr_generic(EnumClassType)(
    lambda ctx, builder, typ, value, attr: ctx.get_constant(types.int64, int(typ.cls[attr])))
lower_constant(EnumMemberLiteral)(
    lambda context, builder, ty, pyval: context.get_constant(types.int64, int(pyval)))


@lower_cast(EnumMemberLiteral, types.Integer)
@lower_cast(EnumMemberLiteral, types.Float)
@lower_cast(EnumMemberLiteral, types.Boolean)
def _cast_member(context, builder, fromty, toty, val):
    # numba's literal cast would format the member itself into the IR (its str() is CUB's
    # spelling); use its int.
    return context.get_constant(toty, int(fromty.literal_value))
