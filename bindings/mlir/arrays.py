"""``coopgen.local.array``/``coopgen.shared.array`` in numba-cuda-mlir: its arrays with the
static shape and memory space in the type (as coopgen.lower.arrays does for numba-cuda);
``coopgen.TempStorage``, a type whose value is nothing at run time; coopgen's enum members."""
import math

import numba_cuda_mlir._mlir.ir as ir
from numba_cuda_mlir import extending as ext
from numba_cuda_mlir._mlir.dialects import arith, builtin, func, llvm, memref
from numba_cuda_mlir.lowering_utilities import memref_descriptor_type
from numba_cuda_mlir.mlir_lowering import get_or_insert_function
from numba_cuda_mlir.models import ArrayModel, CPointerModel, IntegerModel, OpaqueModel
from numba_cuda_mlir.numba_cuda import types
from numba_cuda_mlir.numba_cuda.core import errors
from numba_cuda_mlir.numba_cuda.np.numpy_support import as_dtype
from numba_cuda_mlir.numba_cuda.typing.npydecl import parse_dtype
from numba_cuda_mlir.numba_cuda.typing.templates import AbstractTemplate, signature

from ..codegen.shims import SHARED_ALIGNMENT
from ..codegen.storage import TempStorage, reservation
from ..model.errors import CoopgenError
from ..types.enums import CoopEnum
from .bundle import bundle_for

ARRAY_PARAMETERS = ("shape", "dtype", "alignment")


class SizedArray(types.Array):
    """A C-contiguous array in local or shared memory with a compile-time shape."""

    def __init__(self, dtype, shape: tuple[int, ...], space: str, alignment: int | None = None):
        self.shape = tuple(shape)
        self.space = space
        self.alignment = alignment
        super().__init__(dtype, len(shape), "C")
        self.name = f"{space}.array({dtype}, {self.shape})"

    @property
    def key(self):
        return super().key + (self.shape, self.space, self.alignment)

    @property
    def size(self) -> int:
        return math.prod(self.shape)


class ThreadDataArray(SizedArray):
    """A ``coop.ThreadData`` whose dtype its first use gave: every use must agree."""


class TempStorageType(types.Opaque):
    def __init__(self, obj: TempStorage):
        self.obj = obj
        super().__init__(f"coopgen.TempStorage<{obj.symbol}>")

    @property
    def key(self):
        return self.obj.symbol


class ParentType(types.Type):
    """A CUB object constructed in a kernel; the value is a pointer to it in the constructing
    thread's frame (coopgen.codegen.shims.PARENT_BYTES)."""

    def __init__(self, kind, bound: tuple):
        self.kind = kind  # coopgen.resolve.entry.ObjectKind
        self.bound = bound  # (name, type) of arguments the object keeps (object factories)
        args = ", ".join(v for _, v in kind.template_args)
        super().__init__(f"coopgen.{kind.cls.name}<{args}>"
                         + (f"[{', '.join(n for n, _ in bound)}]" if bound else ""))

    @property
    def key(self):
        return self.kind, self.bound


class PrimitiveClassType(types.Function):
    """``block.BlockHistogram`` in a kernel: calling it constructs an object; its attributes
    are the methods (one-shot calls)."""

    def __init__(self, obj, constructor_type):
        self.obj = obj
        super().__init__(constructor_type.templates[0])
        self.name = f"coopgen.{obj._scope}.{obj._cls.name}@{id(obj):x}"

    @property
    def key(self):
        return self.typing_key, self.templates, id(self.obj)


class EnumMemberLiteral(types.IntegerLiteral):
    """A coopgen enum member as a literal (coopgen.mlir.rewrite makes its lookups constants):
    the member itself is the value, so coopgen reads its name; at run time it is its int."""

    def __init__(self, member: CoopEnum):
        self._literal_init(member)
        self._literal_type_cache = types.int64
        types.Integer.__init__(self, name=f"Literal[{type(member).__name__}]({member.name})",
                               bitwidth=64, signed=True)


# numba-cuda-mlir types globals as it types arguments (typeof's default purpose): a member is
# a compile-time constant wherever it comes from
ext.typeof_impl.register(CoopEnum)(lambda val, c: EnumMemberLiteral(val))
ext.register_model(EnumMemberLiteral)(IntegerModel)
ext.register_model(SizedArray)(ArrayModel)
ext.register_model(ThreadDataArray)(ArrayModel)
ext.register_model(ParentType)(CPointerModel)
ext.register_model(TempStorageType)(OpaqueModel)
ext.typeof_impl.register(TempStorage)(lambda val, c: TempStorageType(val))


#: value types a group call's result array may take from a value (coopgen.resolve.group_calls)
SCALARS = (types.Number, types.Boolean, types.Record)


def _literal(ty):
    return ty.literal_value if isinstance(ty, types.IntegerLiteral) else None


def _ask_for_a_literal(name: str, args, kws):
    """A size given as a run-time int: numba's literal dispatch types it as its value when it
    is a kernel argument (the kernel compiles once per value, as cuda.coop's ThreadData(n)
    with a kernel argument n does); anything else stays the error below."""
    position = ARRAY_PARAMETERS.index(name)

    def folded(args, kws):
        return tuple(args) + tuple(kws[k] for k in ARRAY_PARAMETERS[len(args):] if k in kws)

    raise errors.ForceLiteralArg({position}, folded)


def array_type(space: str, args, kws, cls=SizedArray) -> SizedArray:
    """The type of an array call, from its arguments by position or keyword."""
    where = f"coopgen.{space}.array"
    given = dict(zip(ARRAY_PARAMETERS, args), **kws)
    if len(args) > 3 or set(kws) - set(ARRAY_PARAMETERS) or not {"shape", "dtype"} <= set(given):
        raise CoopgenError(f"{where}: takes (shape, dtype, alignment=None); got "
                           f"{len(args)} positional arguments and {sorted(kws)}")
    shape = given["shape"]
    if isinstance(shape, types.Integer) and _literal(shape) is None:
        _ask_for_a_literal("shape", args, kws)
    shape = tuple(shape) if isinstance(shape, types.BaseTuple) else (shape,)
    dims = tuple(_literal(n) for n in shape)
    if None in dims or min(dims) < 1:
        raise CoopgenError(f"{where}: shape={given['shape']} must be a positive compile-time "
                           f"constant: an int or a tuple of ints (a kernel argument itself, or a "
                           f"constant or a global: numba-cuda-mlir sees no other launch values)")
    dtype = parse_dtype(given["dtype"])
    if dtype is None and cls is ThreadDataArray and isinstance(given["dtype"], SCALARS):
        dtype = given["dtype"]  # the rewrite's array of a value's type (a group call's result)
    if dtype is None:
        raise CoopgenError(f"{where}: dtype={given['dtype']} is not a dtype")
    align = _literal(given.get("alignment"))
    if align is not None and (align <= 0 or align & (align - 1)):
        raise CoopgenError(f"{where}: alignment={align} must be a power of two")
    return cls(dtype, dims, space, align)


#: "local", "shared" -> coopgen.local.array, coopgen.shared.array; "thread_data" -> what
#: coop.ThreadData becomes (the rewrite's replacements)
ARRAYS: dict = {}


def register_array(array, space: str, cls=SizedArray, name=None) -> None:
    """Typing and lowering of ``array`` (coopgen.local.array or coopgen.shared.array; name
    "reserved": a TempStorage's reservation, whose storage is its last argument)."""
    ARRAYS[name or (space if cls is SizedArray else "thread_data")] = array
    reserved = name == "reserved"

    class Template(AbstractTemplate):
        key = array
        prefer_literal = True

        def generic(self, args, kws):
            ty = array_type(space, args[:-1] if reserved else args, kws, cls)
            return signature(ty, *args, *kws.values())

    ext.typing_registry.register_global(array, types.Function(Template))

    @ext.lower_builtin(array, types.VarArg(types.Any))
    def lower(builder, target, args, kws):
        ty = builder.get_numba_type(target)
        if reserved:
            builder.store_var(target, _reserved(builder, ty, builder.get_numba_type(args[-1])))
            return
        align = SHARED_ALIGNMENT if space == "shared" else 16
        element = builder.get_storage_type(ty.dtype)
        shape = list(ty.shape)
        if isinstance(ty.dtype, types.Record):  # numba-cuda-mlir's record arrays hold bytes
            shape, element = [ty.size * ty.dtype.size], ir.IntegerType.get_signless(8)
        if space == "local":
            with builder.alloca_insertion_point():
                value = memref.alloca(ir.MemRefType.get(shape, element), [], [],
                                      alignment=max(align, ty.alignment or 1))
        else:
            value = shared_memory(builder, shape, element, max(align, ty.alignment or 1))
        if isinstance(ty.dtype, types.Record):
            value = record_view(value, ty)
        builder.store_var(target, value)


def record_view(data, ty: SizedArray):
    """A record array's bytes as numba-cuda-mlir's record arrays are (a kernel argument's): sizes
    and strides that count records, so ``.shape``, ``.size`` and ``len()`` count records."""
    strides = [math.prod(ty.shape[i + 1:]) for i in range(len(ty.shape))]
    view = ir.MemRefType.get(list(ty.shape), ir.MemRefType(data.type).element_type,
                             ir.StridedLayoutAttr.get(0, strides), data.type.memory_space)
    return memref.reinterpret_cast(view, data, [], [], [], [0], list(ty.shape), strides)


def shared_memory(builder, shape: list, element, align: int):
    """A static shared array (a module global, as cuda.shared.array's)."""
    space = ir.Attribute.parse("#gpu.address_space<workgroup>")
    mtype = ir.MemRefType.get(shape, element, memory_space=space)
    module = builder.mlir_gpu_module
    name = f"coopgen_smem_{len(module.bodyRegion.blocks[0].operations)}"
    with ir.InsertionPoint(module.bodyRegion.blocks[0]):
        memref.global_(name, mtype, sym_visibility="private", alignment=align)
    return memref.get_global(mtype, name)


def _reserved(builder, ty, storage):
    """``storage.reserve(...)``: a memref over its member of the storage, whose address its
    accessor shim returns (coopgen.codegen.storage.reservation)."""
    dtype = as_dtype(ty.dtype)
    bundle = bundle_for(builder, "TempStorage.reserve")
    shim = reservation(storage.obj, ty.size * dtype.itemsize, max(ty.alignment or 1,
                                                                  dtype.alignment),
                       bundle.next_use_index(storage.obj.symbol))
    bundle.add(shim)
    pointer = llvm.PointerType.get()
    callee = get_or_insert_function(shim.symbol, ir.FunctionType.get([], [pointer]),
                                    builder.mlir_gpu_module)
    data = func.call([pointer], callee.name.value, [])
    i64 = ir.IntegerType.get_signless(64)
    desc = llvm.UndefOp(memref_descriptor_type(len(ty.shape))).result
    fields = [(data, [0]), (data, [1]), (0, [2])] + [(n, [3, i]) for i, n in enumerate(
        ty.shape)] + [(math.prod(ty.shape[i + 1:]), [4, i]) for i in range(len(ty.shape))]
    for value, at in fields:
        value = value if isinstance(value, ir.Value) else arith.constant(i64, value)
        desc = llvm.insertvalue(desc, value, ir.DenseI64ArrayAttr.get(at))
    return builtin.unrealized_conversion_cast([builder.get_mlir_type(ty)], [desc])


def thread_data(shape, dtype):
    """``coop.ThreadData(n)`` in a kernel, once its dtype is known (coopgen.mlir.rewrite)."""


thread_data.__qualname__ = "local.thread_data"
register_array(thread_data, "local", ThreadDataArray)


def reserve(shape, dtype, alignment, storage):
    """``storage.reserve(shape, dtype, alignment)`` in a kernel (the rewrite's)."""


register_array(reserve, "shared", name="reserved")
