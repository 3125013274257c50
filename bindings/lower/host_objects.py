"""Host objects passed as kernel arguments: two-phase primitives (``k[g, b](d_in, block_load)``)
and ``coop.gpu_dataclass`` instances holding them. Such an argument's type holds the object, so
calling it calls the primitive and its fields are compile-time constants; the kernel gets one
unused pointer-sized parameter, which :data:`ARGUMENTS` fills with 0 at launch."""
import dataclasses
import sys

from numba.cuda import types
from numba.cuda.core.imputils import lower_getattr_generic
from numba.cuda.datamodel.models import OpaqueModel
from numba.cuda.extending import register_model, typeof_impl
from numba.cuda.typing.templates import AttributeTemplate, infer_getattr
from numba.cuda.typing.typeof import Purpose, typeof

from .errors import CoopgenTypeError


class CallableObject(types.Callable, types.Opaque):
    """A Python object as a value in kernels, keyed by identity (what it holds is constant in
    the compiled kernel); the type ``_target()`` gives types its calls."""

    def __init__(self, obj, name: str):
        self.obj = obj
        super().__init__(name)

    key = property(lambda self: id(self.obj))

    def get_call_type(self, context, args, kws):
        return self._target().get_call_type(context, args, kws)

    def get_call_signatures(self):
        return [], True


class HostObject(CallableObject):
    """A host object passed as a kernel argument."""

    def __init__(self, obj):
        super().__init__(obj, f"coopgen.host<{type(obj).__name__}@{id(obj):x}>")

    def _target(self):
        target = typeof(self.obj, Purpose.constant)
        if not isinstance(target, types.Callable):
            raise CoopgenTypeError(f"{type(self.obj).__name__} object passed as a kernel "
                                   f"argument is not callable in kernels")
        return target

    def get_impl_key(self, sig):
        return self._target().get_impl_key(sig)


register_model(HostObject)(OpaqueModel)


def field_type(owner, attr, value):
    """The numba type of a field read in a kernel: a literal for ints, bools and strings (so it
    can size arrays), else the value's type as a constant."""
    if isinstance(value, (bool, int, str)):
        return types.literal(value)
    try:
        return typeof(value, Purpose.constant)
    except ValueError:
        raise CoopgenTypeError(f"{type(owner).__name__}.{attr} = {value!r} cannot be used in a "
                               f"kernel") from None


@infer_getattr
class _HostObjectAttributes(AttributeTemplate):
    key = HostObject

    def generic_resolve(self, typ, attr):
        if attr.startswith("__"):  # numba asks for __call__ before calling the type itself
            return None
        value = getattr(typ.obj, attr, _MISSING)
        if value is _MISSING:
            raise CoopgenTypeError(f"{type(typ.obj).__name__} object has no field {attr!r}")
        return field_type(typ.obj, attr, value)


_MISSING = object()


@lower_getattr_generic(HostObject)
def _lower_field(context, builder, typ, value, attr):
    v = getattr(typ.obj, attr)
    ty = field_type(typ.obj, attr, v)
    if isinstance(ty, types.Literal) and not isinstance(ty, types.StringLiteral):
        return context.get_constant_generic(builder, ty.literal_type, v)
    return context.get_constant_generic(builder, ty, v) if isinstance(ty, types.Number) \
        else context.get_dummy_value()


class HostObjectArguments:
    """numba-cuda argument extension: a HostObject parameter is passed as a null pointer."""

    def prepare_args(self, ty, val, stream=0, retr=None):
        return (types.uintp, 0) if isinstance(ty, HostObject) else (ty, val)


ARGUMENTS = HostObjectArguments()


def pass_host_objects() -> None:
    """Let the numba-cuda ``_Kernel`` whose compile is running (its constructor compiles it)
    be launched with host-object arguments."""
    from numba.cuda.dispatcher import _Kernel

    frame = sys._getframe(1)
    while frame is not None:
        kernel = frame.f_locals.get("self") if frame.f_code.co_name == "__init__" else None
        if isinstance(kernel, _Kernel):
            if ARGUMENTS not in kernel.extensions:
                kernel.extensions.append(ARGUMENTS)
            return
        frame = frame.f_back


def as_argument(obj, c):
    """typeof for objects that may be kernel arguments: a HostObject when one is."""
    return HostObject(obj) if c.purpose == Purpose.argument else None


#: The user-facing entry point classes (coopgen.api.primitives registers them).
ENTRY_CLASSES: tuple = ()


def is_host_object(obj) -> bool:
    """Whether ``obj`` passed as a kernel argument is a HostObject."""
    return isinstance(obj, ENTRY_CLASSES) or type(obj) in _REGISTERED


def gpu_dataclass(instance, *, compute_temp_storage: bool = True):
    """Make a dataclass *instance* usable as a kernel argument (with ``compute_temp_storage``,
    it gains ``temp_storage_bytes_sum``/``_max`` and ``temp_storage_alignment``)."""
    if not dataclasses.is_dataclass(instance) or isinstance(instance, type):
        raise TypeError(f"gpu_dataclass: expected a dataclass instance, got {instance!r}")
    cls = type(instance)
    if cls not in _REGISTERED:
        typeof_impl.register(cls)(lambda val, c: HostObject(val))
        _REGISTERED.add(cls)
    if compute_temp_storage:
        layouts = [(v.temp_storage_bytes, v.temp_storage_alignment)
                   for v in (getattr(instance, f.name) for f in dataclasses.fields(instance))
                   if hasattr(v, "temp_storage_bytes")]
        for name, value in (("temp_storage_bytes_sum", sum(s for s, _ in layouts)),
                            ("temp_storage_bytes_max", max((s for s, _ in layouts), default=0)),
                            ("temp_storage_alignment", max((a for _, a in layouts), default=1))):
            object.__setattr__(instance, name, value)
    return instance


_REGISTERED: set = set()
