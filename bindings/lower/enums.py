"""coopgen's enums (coopgen.types.enums) in numba kernels: members are compile-time constants,
classes are values whose attributes are members."""
from numba.cuda import types
from numba.cuda.core.imputils import lower_cast, lower_constant, lower_getattr_generic
from numba.cuda.datamodel.models import IntegerModel, OpaqueModel
from numba.cuda.extending import register_model, typeof_impl
from numba.cuda.typing.templates import AttributeTemplate, infer_getattr
from numba.cuda.typing.typeof import Purpose

from ..types.enums import CoopEnum, CoopEnumMeta


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
        member = typ.cls.__members__.get(attr)
        return EnumMemberLiteral(member) if member is not None else None


@lower_getattr_generic(EnumClassType)
def _lower_member(context, builder, typ, value, attr):
    return context.get_constant(types.int64, int(typ.cls[attr]))


@lower_constant(EnumMemberLiteral)
def _lower_member_constant(context, builder, ty, pyval):
    return context.get_constant(types.int64, int(pyval))


@lower_cast(EnumMemberLiteral, types.Integer)
@lower_cast(EnumMemberLiteral, types.Float)
@lower_cast(EnumMemberLiteral, types.Boolean)
def _cast_member(context, builder, fromty, toty, val):
    # numba's literal cast would format the member itself into the IR (its str() is CUB's
    # spelling); use its int.
    return context.get_constant(toty, int(fromty.literal_value))
