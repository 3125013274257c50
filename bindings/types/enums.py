"""cuda.coop's enums, built from the generated bindings: ``BlockLoadAlgorithm``, ... from CUB's
enums (members without the shared prefix, values from 1 in CUB's order as cuda.coop's, ``str``
CUB's spelling); ``BlockExchangeType``, ... from a Pythonic row's selector keys. Members are
mapped BY NAME, never by value (cuda.coop's are CUB's + 1); in kernels they are constants."""
import enum

from ..model import registry
from .cpp import short_name


class CoopEnumMeta(type(enum.IntEnum)):
    """The metaclass of coopgen's enums, so numba can type their classes specially."""


class CoopEnum(enum.IntEnum, metaclass=CoopEnumMeta):
    """Base of coopgen's enums: an IntEnum whose members kernels see as constants."""


class AlgorithmEnum(CoopEnum):
    """An enum of CUB's: ``str()`` gives CUB's spelling."""

    def __str__(self):
        return f"::cub::{self.cub_name}"


def _build() -> tuple[dict, dict]:
    """({name: enum} of CUB's enums, {scope: {name: enum}} of the selector enums)."""
    pkg = registry.package()
    algorithms = {}
    for spec in pkg.ENUMS:
        names = [n for n, _ in sorted(spec.values, key=lambda nv: nv[1])]
        members = [(short_name(n, names), i + 1) for i, n in enumerate(names)]
        algorithms[spec.name] = AlgorithmEnum(spec.name, members, module="coopgen.enums",
                                              qualname=spec.name)
        for member, cub in zip(algorithms[spec.name], names):
            member.cub_name = cub
    selectors: dict = {"block": {}, "warp": {}, "thread": {}}
    for row in pkg.PYTHONIC:
        if row.enum:
            keys = dict.fromkeys(sel for sel, _ in row.methods)
            selectors[row.scope][row.enum] = CoopEnum(
                row.enum, [(k, i + 1) for i, k in enumerate(keys)], module="coopgen.enums",
                qualname=row.enum)
    return algorithms, selectors


ALGORITHMS, SELECTORS = _build()
globals().update(ALGORITHMS)
for _scope in SELECTORS.values():
    globals().update(_scope)

__all__ = sorted(list(ALGORITHMS) + [n for s in SELECTORS.values() for n in s])
