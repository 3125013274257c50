"""What a primitive call passes, described without the backend's type objects (see
lower.describe). They compare by what matters to C++; ``text`` is the backend's spelling, for
messages; ``ref`` the backend's object, carried through the plan untouched."""
from dataclasses import dataclass, field

_KINDS = {"bool": "bool", "int": "int", "uint": "uint", "float": "float", "bfloat": "float",
          "complex": "complex"}


def _hidden(default=None):
    return field(default=default, compare=False, hash=False, repr=False)


class _Shown:
    """``str()`` for messages: the backend's spelling (``text``) if given, else ``SHOWN``."""
    SHOWN = ""

    def __str__(self):
        return getattr(self, "text", "") or self.SHOWN.format(self=self)


@dataclass(frozen=True)
class Scalar(_Shown):
    """A number or bool by numpy's name (int32, float16, bool, complex64), bfloat16, or a CUDA
    vector type by numba-cuda's name (float32x2, of kind "vector")."""
    name: str
    SHOWN = "{self.name}"

    @property
    def kind(self) -> str:
        return "vector" if self.name[-2:-1] == "x" else _KINDS.get(self.name.rstrip("0123456789"),
                                                             "other")


@dataclass(frozen=True)
class Field:
    name: str
    type: Scalar | None  # None: a member C++ cannot spell as a number (nested, sub-array)
    offset: int
    size: int


@dataclass(frozen=True)
class Struct(_Shown):
    """A numpy record or a user's struct type: bytes to C++, fields to the user's operators."""
    key: str  # what makes two of them the same C++ type
    size: int
    align: int
    fields: tuple[Field, ...] = ()
    record: bool = False  # a numpy structured dtype (else an opaque user type)
    text: str = _hidden("")
    ref: object = _hidden()
    SHOWN = "{self.key}"


@dataclass(frozen=True)
class Other(_Shown):
    """A type coopgen has no use for (it names it in errors); ``callable``: a function value
    the backend cannot compile as an operator (a first-class function type)."""
    text: str
    callable: bool = False


Dtype = Scalar | Struct | Other


@dataclass(frozen=True)
class Function(_Shown):
    """A Python operator: ``builtin`` when it names one of CUB's (np.add, operator.mul)."""
    name: str
    argcount: int = 0
    builtin: str | None = None
    identity: str = ""  # what it compiles to (its code and closure), from the backend
    text: str = _hidden("")
    ref: object = _hidden()  # the backend's compiled function
    SHOWN = "{self.name}"


@dataclass(frozen=True)
class Array(_Shown):
    dtype: Dtype
    ndim: int = 1
    contiguous: bool = True
    length: int | None = None  # items, when the type knows its shape
    space: str | None = None  # "local" / "shared" where the type says
    stateful: Function | None = None  # the prefix callback registered for this dtype
    thread_data: bool = False  # a coop.ThreadData whose dtype its first use gave
    text: str = _hidden("")
    SHOWN = "array({self.dtype}, {self.ndim}d)"


@dataclass(frozen=True)
class Literal(_Shown):
    """A compile-time constant: a number or bool (``type`` its dtype) or a string."""
    value: object
    type: Scalar | None = None
    text: str = _hidden("")
    SHOWN = "{self.value!r}"


@dataclass(frozen=True)
class Tuple:
    items: tuple

    def __str__(self):
        return f"({', '.join(map(str, self.items))})"


@dataclass(frozen=True)
class DtypeValue(_Shown):
    """A dtype passed as a value (``dtype=np.int32`` in a kernel)."""
    dtype: Dtype
    ref: object = _hidden()
    SHOWN = "dtype({self.dtype})"


@dataclass(frozen=True)
class Storage(_Shown):
    """A coopgen.TempStorage object (compared by its symbol)."""
    obj: object = _hidden()
    symbol: str = ""
    SHOWN = "coopgen.TempStorage<{self.symbol}>"


@dataclass(frozen=True)
class Omitted(_Shown):
    """An argument left out (None, or an omitted optional's default)."""
    value: object = None
    SHOWN = "omitted"


@dataclass(frozen=True)
class Pointer(_Shown):
    to: object
    SHOWN = "{self.to}*"


VOID = Other("none")
BOOL, INT32, UINT32, UINT8 = Scalar("bool"), Scalar("int32"), Scalar("uint32"), Scalar("uint8")


def unliteral(t):
    """The type of a value: a literal's dtype, anything else as it is."""
    return t.type if isinstance(t, Literal) and t.type is not None else t


def item_type(t):
    """An array's dtype, else the value's own type."""
    return t.dtype if isinstance(t, Array) else unliteral(t)


#: How values given on the host (``dtype=``) become dtypes: the backend registers its way
#: first (numba types, records, user types); numpy's names are the fallback.
HOST_DTYPES: list = []


def host_dtype(value) -> Dtype | None:
    """The dtype a host value names (np.int32, "float32", numba's int32, a record dtype)."""
    for describe in HOST_DTYPES:
        dt = describe(value)
        if dt is not None:
            return dt
    import numpy as np
    try:
        return Scalar(np.dtype(value).name)
    except (TypeError, ValueError):  # not a dtype (ValueError: np.dtype((np.int32, -1)))
        return None
