"""CUB objects in kernels: a faithful class (``block.BlockHistogram``) as a value whose
attributes are its methods and whose call constructs the object (a ``ParentType``), whose
methods call shims on it."""
from numba.cuda import types
from numba.cuda.core.imputils import lower_getattr_generic
from numba.cuda.datamodel.models import OpaqueModel
from numba.cuda.extending import lower_builtin, register_model
from numba.cuda.typing.templates import (AbstractTemplate, AttributeTemplate, infer_getattr,
                                         signature)

from ..model.spec import ClassSpec
from ..resolve.entry import Entry
from .arrays import positional_signature
from .errors import CoopgenTypeError
from .host_objects import CallableObject
from .typing import ParentType, bound_slot, call_type, lower_call


def _method_entry(cls: ClassSpec, attr: str, parent) -> Entry:
    return Entry(f"{cls.scope}.{cls.name}.{attr}", cls, {"": cls.overloads(attr)},
                 fixed=dict(parent.template_kws), parent=parent, shape=parent.shapes.get(attr))


class PrimitiveClassType(CallableObject):
    """``block.BlockHistogram`` inside a kernel: its attributes are the methods (one-shot
    calls); calling it constructs a parent object (``h = block.BlockHistogram(...)``)."""

    def __init__(self, obj):
        super().__init__(obj, f"coopgen.{obj._scope}.{obj._cls.name}@{id(obj):x}")

    def _target(self):
        return self.obj.constructor._nbtype

    def get_impl_key(self, sig):
        return self.obj.constructor


register_model(PrimitiveClassType)(OpaqueModel)


@infer_getattr
class _ParentAttrs(AttributeTemplate):
    key = ParentType

    def generic_resolve(self, typ, attr):
        names = typ.aliases or {m: m for m in typ.cls.method_names}
        if attr not in names:
            raise CoopgenTypeError(f"{typ.cls.name} object has no method {attr!r}; methods: "
                                   f"{', '.join(names)}")
        return types.BoundFunction(_parent_method_template(typ.cls, names[attr]), typ)


def _parent_method_template(cls: ClassSpec, attr: str):
    key = f"coopgen.{cls.name}.{attr}"
    if key in _PARENT_METHODS:
        return _PARENT_METHODS[key]

    class ParentMethod(AbstractTemplate):
        prefer_literal = True

        def generic(self, args, kws):
            ret = call_type(_method_entry(cls, attr, self.this), args,
                            dict(kws, **_bound_kws(self.this, attr)))
            return positional_signature(ret, args, kws, recvr=self.this)

    ParentMethod.key = key
    ParentMethod.__name__ = f"ParentMethod_{cls.name}_{attr}"

    @lower_builtin(key, ParentType, types.VarArg(types.Any))
    def lower(context, builder, sig, args):
        # numba passes the object first in ``args``; ``sig.args`` may or may not include it
        margs = sig.args[1:] if len(sig.args) == len(args) else sig.args
        parent = sig.recvr if sig.recvr is not None else sig.args[0]
        p = _method_entry(cls, attr, parent)
        msig = signature(sig.return_type, *margs).replace(pysig=sig.pysig)
        kept = {name: (ty, builder.load(bound_slot(builder, args[0], k)))
                for k, (name, ty) in enumerate(parent.bound) if name in _bound_kws(parent, attr)}
        return lower_call(p, context, builder, msig, args[1:], self_ptr=args[0], kept=kept)

    _PARENT_METHODS[key] = ParentMethod
    return ParentMethod


_PARENT_METHODS: dict = {}


def _bound_kws(parent: ParentType, method: str) -> dict:
    """Kept arguments of an object the method takes, as keyword argument types."""
    names = {x.name for m in parent.cls.overloads(method) for x in m.params}
    return {n: t for n, t in parent.bound if n in names}


@infer_getattr
class _PrimitiveClassAttrs(AttributeTemplate):
    key = PrimitiveClassType

    def generic_resolve(self, typ, attr):
        return method._nbtype if (method := typ.obj._methods.get(attr)) is not None else None


@lower_getattr_generic(PrimitiveClassType)
def _lower_class_attr(context, builder, typ, value, attr):
    return context.get_dummy_value()
