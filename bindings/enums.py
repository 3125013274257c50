"""cuda.coop's enums, built from the generated bindings (no hand-kept lists).

- ``BlockLoadAlgorithm``, ``BlockScanAlgorithm``, ... come from CUB's own enums in the API model
  (``ENUMS``): members are CUB's names without the shared prefix (``DIRECT``), values count from
  1 in CUB's order, as cuda.coop's IntEnums do, and ``str(member)`` is CUB's spelling
  (``::cub::BLOCK_LOAD_DIRECT``).
- ``BlockExchangeType``, ``BlockShuffleType``, ... come from the Pythonic table: the keys of a
  row's selector (``block.exchange``'s ``block_exchange_type``), in table order.

coopgen maps every member BY NAME, never by value (cuda.coop's values are CUB's + 1). Inside
kernels a member is a compile-time constant: ``algorithm=BlockLoadAlgorithm.WARP_TRANSPOSE``
works as a global, a closure variable or an attribute chain (``coop.BlockLoadAlgorithm.X``).
"""
from __future__ import annotations

import enum

from numba.cuda import types
from numba.cuda.datamodel.models import IntegerModel, OpaqueModel
from numba.cuda.extending import register_model, typeof_impl
from numba.cuda.core.imputils import lower_cast, lower_constant, lower_getattr_generic
from numba.cuda.typing.templates import AttributeTemplate, infer_getattr
from numba.cuda.typing.typeof import Purpose

from .model import registry
from .ctypes_map import _short_name


class _CoopEnumMeta(type(enum.IntEnum)):
    """The metaclass of coopgen's enums, so numba can type their classes specially."""


class CoopEnum(enum.IntEnum, metaclass=_CoopEnumMeta):
    """Base of coopgen's enums: an IntEnum whose members kernels see as constants."""


class AlgorithmEnum(CoopEnum):
    """An enum of CUB's: ``str()`` gives CUB's spelling."""

    def __str__(self):
        return f"::cub::{self.cub_name}"


def _algorithm_enum(spec) -> type:
    names = [n for n, _ in sorted(spec.values, key=lambda nv: nv[1])]
    members = [(_short_name(n, names), i + 1) for i, n in enumerate(names)]
    cls = AlgorithmEnum(spec.name, members, module=__name__, qualname=spec.name)
    for member, cub in zip(cls, names):
        member.cub_name = cub
    return cls


def _selector_enum(name: str, keys) -> type:
    return CoopEnum(name, [(k, i + 1) for i, k in enumerate(keys)], module=__name__,
                    qualname=name)


def _build() -> tuple[dict, dict]:
    """({name: enum} of CUB's enums, {scope: {name: enum}} of the selector enums)."""
    pkg = registry.package()
    algorithms = {e.name: _algorithm_enum(e) for e in pkg.ENUMS}
    selectors: dict = {"block": {}, "warp": {}}
    for row in pkg.PYTHONIC:
        if getattr(row, "enum", None):
            keys = list(dict.fromkeys(sel for sel, _ in row.methods))
            selectors[row.scope][row.enum] = _selector_enum(row.enum, keys)
    return algorithms, selectors


ALGORITHMS, SELECTORS = _build()
globals().update(ALGORITHMS)
for _scope in SELECTORS.values():
    globals().update(_scope)

__all__ = sorted(list(ALGORITHMS) + [n for s in SELECTORS.values() for n in s])


# --- numba: members are compile-time constants ----------------------------------------------

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


@typeof_impl.register(CoopEnum)
def _typeof_member(val, c):
    if c.purpose == Purpose.constant:
        return EnumMemberLiteral(val)
    return types.IntEnumMember(type(val), types.int64)  # a kernel argument: a run-time int


@typeof_impl.register(_CoopEnumMeta)
def _typeof_class(val, c):
    return EnumClassType(val)


@infer_getattr
class _EnumClassAttrs(AttributeTemplate):
    key = EnumClassType

    def generic_resolve(self, typ, attr):
        member = typ.cls.__members__.get(attr)
        return EnumMemberLiteral(member) if member is not None else None


@lower_getattr_generic(EnumClassType)
def _lower_member(context, builder, typ, value, attr):
    return context.get_constant(types.int64, int(typ.cls[attr]))


@lower_constant(EnumClassType)
def _lower_class(context, builder, ty, pyval):
    return context.get_dummy_value()


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
