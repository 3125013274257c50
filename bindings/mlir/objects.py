"""CUB objects in numba-cuda-mlir kernels, and gpu_dataclass arguments: ``block.BlockHistogram`` as a value (its attributes
are the methods; calling it constructs an object) and the methods of a constructed object,
typed as bound functions and lowered with the object's pointer."""
import dataclasses
import functools

import numpy as np
from numba_cuda_mlir import extending as ext
from numba_cuda_mlir._mlir.dialects import llvm
from numba_cuda_mlir.numba_cuda import types
from numba_cuda_mlir.numba_cuda.np import numpy_support
from numba_cuda_mlir.numba_cuda.typing.templates import AbstractTemplate, AttributeTemplate

from ..model import registry
from .arrays import ParentType, PrimitiveClassType
from .typing import FUNCTION_TYPES, CoopgenTypeError, _parent_slot, call_type, folded_signature
from .typing import lower_call


def register_methods() -> None:
    """Every class's method templates and lowerings, before the compilers refresh their
    registries: made lazily, a method's lowering would come after its kernel's typing."""
    for cls in registry.classes().values():
        for attr in cls.method_names:
            _method_template(cls.name, attr)


def class_type(obj) -> PrimitiveClassType:
    return PrimitiveClassType(obj, FUNCTION_TYPES[id(obj.constructor)])


@ext.typing_registry.register_attr
class _PrimitiveClassAttrs(AttributeTemplate):
    key = PrimitiveClassType

    def generic_resolve(self, typ, attr):
        method = typ.obj._methods.get(attr)
        return FUNCTION_TYPES[id(method)] if method is not None else None


@ext.lowering_registry.lower_getattr_generic(PrimitiveClassType)
def _class_attribute(context, builder, target, value, attr):
    builder.store_var(target, getattr(builder.get_numba_type(value).obj, attr))


@ext.typing_registry.register_attr
class _ParentAttrs(AttributeTemplate):
    key = ParentType

    def generic_resolve(self, typ, attr):
        names = typ.kind.method_names()
        if attr not in names:
            raise CoopgenTypeError(f"{typ.kind.cls.name} object has no method {attr!r}; "
                                   f"methods: {', '.join(names)}")
        return types.BoundFunction(_method_template(typ.kind.cls.name, names[attr]), typ)


@functools.cache
def _method_template(cls_name: str, attr: str):
    key = f"coopgen.mlir.{cls_name}.{attr}"

    class ParentMethod(AbstractTemplate):
        prefer_literal = True

        def generic(self, args, kws):
            kind, bound = self.this.kind, self.this.bound
            ret = call_type(kind.method_entry(attr), args,
                            dict(kws, **kind.kept_keywords(bound, attr)))
            return folded_signature(ret, args, kws, recvr=self.this)

    ParentMethod.key = key
    ParentMethod.__name__ = f"ParentMethod_{cls_name}_{attr}"

    @ext.lower_builtin(key, ParentType, types.VarArg(types.Any))
    def lower(builder, target, args, kws):
        parent = builder.get_numba_type(args[0])
        self_ptr = builder.load_var(args[0])
        taken = parent.kind.kept_keywords(parent.bound, attr)
        ptr = llvm.PointerType.get()
        kept = {name: (ty, llvm.load(res=ptr, addr=_parent_slot(builder, self_ptr, k)))
                for k, (name, ty) in enumerate(parent.bound) if name in taken}
        lower_call(parent.kind.method_entry(attr), builder, target, args[1:], kws,
                   self_ptr=self_ptr, kept=kept)

    return ParentMethod


def gpu_dataclass(instance, *, compute_temp_storage: bool = True):
    """A dataclass instance as a numba-cuda-mlir kernel argument: its fields, numbers all, are
    passed as one record (read as ``traits.scale`` in the kernel) through
    :data:`DATACLASS_ARGUMENTS`, the ``extensions=`` handler of the kernel's ``cuda.jit``."""
    cls = type(instance)
    if cls not in _RECORDS:
        fields = [(f.name, getattr(instance, f.name)) for f in dataclasses.fields(instance)]
        numeric = all(isinstance(v, (bool, int, float, np.number, np.bool_)) for _, v in fields)
        dtype = np.dtype([(n, np.asarray(v).dtype) for n, v in fields]) if numeric else None
        _RECORDS[cls] = dtype

        def record_type(val, c, cls=cls):
            if _RECORDS[cls] is None:
                raise CoopgenTypeError(
                    f"gpu_dataclass {cls.__name__}: on numba-cuda-mlir a dataclass argument's "
                    f"fields must be numbers (they travel as one record); use its other fields "
                    f"as globals or closure variables")
            return numpy_support.from_dtype(_RECORDS[cls])
        ext.typeof_impl.register(cls)(record_type)
        ext.refresh_registries()
    return instance


_RECORDS: dict = {}


class DataclassArguments:
    """numba-cuda-mlir argument extension: a gpu_dataclass instance becomes its record."""

    def prepare_args(self, ty, val, stream=None, retr=None):
        dtype = _RECORDS.get(type(val))
        if dtype is None or not isinstance(ty, types.Record):  # (numba-cuda's: its own handler)
            return ty, val
        return ty, np.array([tuple(getattr(val, n) for n in dtype.names)], dtype)[0]


DATACLASS_ARGUMENTS = DataclassArguments()
