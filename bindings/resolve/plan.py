"""The plan of one primitive call: the CUB overload, how each C++ parameter is supplied, the
template arguments, what comes back and what storage it needs. Pure data (descriptions and C++
spellings): the backend lowers it and coopgen.codegen writes its C++ from it."""
from dataclasses import dataclass, field

from ..model.spec import ClassSpec, MSpec, PSpec, TParam
from ..types import cpp
from ..types.desc import Scalar, unliteral

ARRAY_ROLES = ("input_array", "output_array", "inout_array")
#: Ranges: any indexable of compile-time size in C++; a coopgen local/shared array here.
RANGE_ROLES = ("range_input", "range_output")
#: Template keywords that items_per_thread= also sets (BlockRadixRank calls it keys).
PER_THREAD_KEYWORDS = ("items_per_thread", "keys_per_thread")
OMITTABLE_OUTPUTS = ("output_scalar", "inout_scalar")
BLOCK_DIM_KEYWORDS = ("block_dim_x", "block_dim_y", "block_dim_z")
#: Method template types C++ deduces from each argument separately.
LOOSE_TYPES = ("DefaultT", "OffsetT", "ValidFlag", "OutputT", "OutputType", "InputT")


@dataclass(frozen=True)
class Binding:
    """How one C++ parameter of the chosen overload is supplied."""
    param: PSpec
    source: str  # "arg" (a Python argument), "return" (a returned output), "default"
    arg_index: int | None  # index into the call's (folded) argument list
    type: object  # description of the argument / returned value (None: nothing passed)
    ctype: str  # C type of the shim parameter ("" when nothing is passed at run time)
    operator: object = None  # coopgen.resolve.operators.Operator


def plain_number(t) -> bool:
    """A number C++ converts implicitly at a call (not a bool, vector, record or user type)."""
    return isinstance(t, Scalar) and t.kind not in ("bool", "vector")


@dataclass(frozen=True)
class Plan:
    cls: ClassSpec
    method: MSpec
    bindings: tuple[Binding, ...]
    template_args: tuple[tuple[TParam, str], ...]  # (param, C++ spelling of the argument)
    extents: tuple[tuple[str, int | str], ...]  # method's: ITEMS_PER_THREAD=16, IsFullTile=true
    returns: tuple[tuple[str, object, str], ...]  # (what, dtype, C type)
    block_dims: tuple[int, int, int] | None
    temp_storage: str  # "implicit" | "explicit" | "none"
    operators: tuple = field(default=())
    temp_storage_arg: tuple | None = None  # (argument index, description) when explicit


class NoMatch(Exception):
    """This overload does not fit the call; another may."""


class Mismatch(Exception):
    """A definite user error for an overload that otherwise matches."""


@dataclass
class Attempt:
    """One try at matching a call against one overload; raises NoMatch to give up."""
    prim: str
    cls: ClassSpec
    method: MSpec
    dtypes: dict = field(default_factory=dict)  # C++ type name -> dtype
    extents: dict = field(default_factory=dict)  # extent name -> (value, where from)
    #: dtypes taken from a number passed by value, which C++ converts at the call: a later
    #: array or template keyword of another number type replaces them
    converted: set = field(default_factory=set)

    def need_dtype(self, name: str, dt, pname: str) -> None:
        dt = unliteral(dt)
        fixed = cpp.FIXED_CPP_TYPES.get(name)
        if fixed is not None:
            if dt != fixed:
                raise NoMatch(f"parameter {pname!r} must hold {fixed}, got {dt}")
            return
        old = self.dtypes.get(name)
        if name in self.converted and plain_number(dt):
            self.converted.discard(name)
            self.dtypes[name] = dt
            return
        if old is not None and old != dt and name not in LOOSE_TYPES:
            raise Mismatch(f"{self.prim}: parameter {pname!r} has dtype {dt}, but {name} is "
                           f"already {old} from another argument (all {name} arguments must "
                           f"share one dtype)")
        self.dtypes.setdefault(name, dt)

    def need_extent(self, name: str, n: int, where: str) -> None:
        old = self.extents.get(name)
        if old and old[0] != n:
            raise Mismatch(f"{self.prim}: {where} has {n} items but {old[1]} has {old[0]} "
                           f"({name} must agree)")
        self.extents.setdefault(name, (n, where))
