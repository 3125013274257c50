"""The API model: plain frozen dataclasses with tuple fields, and no libclang objects.

``cub_api.json`` is this model serialized (``to_json``/``from_json``). It is the single source
of truth for coverage, for version diffs and for the emitters.
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass

MODEL_SCHEMA = 1


@dataclass(frozen=True)
class TemplateParam:
    name: str  # as spelled in the header, e.g. "BLOCK_DIM_X" (3.0) or "BlockDimX" (3.2+)
    kind: str  # "type" | "value" | "template"
    cpp_type: str  # the value parameter's type ("int", "BlockReduceAlgorithm"), "" for types
    default: str | None  # as spelled in the header
    keyword: str  # stable snake_case Python keyword ("block_dim_x" in every version)
    constraint: str = ""  # from the class doc's @tparam text, e.g. "power_of_two"


@dataclass(frozen=True)
class Param:
    name: str
    type: str  # spelled type, e.g. "const T (&)[ITEMS_PER_THREAD]"
    const: bool
    ref: str  # "lvalue" | "rvalue" | "" (by value)
    pointer: bool
    array_elem: str | None  # "T" for T (&)[ITEMS_PER_THREAD]
    array_extent: str | None  # "ITEMS_PER_THREAD"
    default: str | None
    role: str  # see roles.ROLES


@dataclass(frozen=True)
class Overload:
    name: str  # method name; the class name for constructors
    kind: str  # "method" | "constructor"
    signature: str  # stable display key, e.g. "Sum(T (&)[ITEMS_PER_THREAD])"
    params: tuple[Param, ...]
    return_type: str
    template_params: tuple[TemplateParam, ...]
    static: bool
    hidden: bool  # inside #ifndef _CCCL_DOXYGEN_INVOKED
    inherited_from: str | None  # the public base the method comes from
    excluded: str  # why this public member is not part of the bound API ("" when it is)
    brief: str
    doc: str
    file: str  # relative to the include root
    line: int


@dataclass(frozen=True)
class EnumValue:
    name: str
    value: int
    brief: str


@dataclass(frozen=True)
class Enum:
    name: str
    qualname: str
    values: tuple[EnumValue, ...]
    file: str
    line: int


@dataclass(frozen=True)
class TempStorage:
    form: str  # "struct" | "alias" | "internal" | "inherited" | "none"
    spelling: str  # e.g. "Uninitialized<_TempStorage>" for the alias form


@dataclass(frozen=True)
class ClassModel:
    name: str
    qualname: str  # without CUB's ABI inline namespace, e.g. "cub::BlockReduce"
    scope: str  # "block" | "warp"
    user_facing: bool
    template_params: tuple[TemplateParam, ...]
    bases: tuple[str, ...]
    constructors: tuple[Overload, ...]
    methods: tuple[Overload, ...]
    temp_storage: TempStorage
    brief: str
    file: str
    line: int
    # a class of cub::detail (overrides.toml [unstable]): CUB may change it in any release
    unstable: bool = False


@dataclass(frozen=True)
class FunctionModel:
    """A namespace-scope function (template) of a bound header, with its overloads in
    declaration order (``Overload.kind`` "function")."""
    name: str
    qualname: str  # without CUB's ABI inline namespace, e.g. "cub::LoadDirectStriped"
    scope: str  # "block" | "warp" | "thread": the namespace users call it from
    family: str  # the header family: "block", "warp", "thread" or "util" (util_ptx.cuh)
    overloads: tuple[Overload, ...]
    brief: str
    file: str
    line: int
    # a function of cub::detail (overrides.toml [unstable]): CUB may change it in any release
    unstable: bool = False

    def as_class(self) -> "ClassModel":
        """The function seen as a class without template parameters, constructors or temp
        storage whose methods are its overloads: how the emitters and the runtime bind it
        (a call is a static call with no object)."""
        return ClassModel(name=self.name, qualname=self.qualname, scope=self.scope,
                          user_facing=True, template_params=(), bases=(), constructors=(),
                          methods=self.overloads, temp_storage=TempStorage("none", ""),
                          brief=self.brief, file=self.file, line=self.line,
                          unstable=self.unstable)


@dataclass(frozen=True)
class Diagnostic:
    severity: str
    file: str
    line: int
    message: str


@dataclass(frozen=True)
class ApiModel:
    schema: int
    cccl: str
    headers_digest: str
    headers: tuple[str, ...]  # the parsed headers, relative to the include root
    classes: tuple[ClassModel, ...]
    enums: tuple[Enum, ...]
    diagnostics: tuple[Diagnostic, ...]
    functions: tuple[FunctionModel, ...] = ()  # namespace-scope functions, by qualified name

    def function(self, name: str) -> FunctionModel:
        for f in self.functions:
            if f.name == name:
                return f
        raise KeyError(name)

    def cls(self, name: str) -> ClassModel:
        for c in self.classes:
            if c.name == name:
                return c
        raise KeyError(name)

    def enum(self, name: str) -> Enum:
        for e in self.enums:
            if e.name == name:
                return e
        raise KeyError(name)


def snake_case(name: str) -> str:
    """Stable keyword for a template parameter: BLOCK_DIM_X and BlockDimX both -> block_dim_x."""
    if name.isupper() or "_" in name:
        return name.lower()
    s = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name)
    return s.lower().removesuffix("_t") if s.lower().endswith("_t") and len(s) > 2 else s.lower()


# --- serialization -------------------------------------------------------------------------

def to_json(model: ApiModel) -> str:
    """``json.dumps(dataclasses.asdict(model), indent=1, sort_keys=True)`` and a newline, made
    by :func:`_encode` (json's own encoder is pure Python, and slow, when it indents)."""
    out: list[str] = []
    _encode(model, "\n", out)
    return "".join(out) + "\n"


_FIELD_NAMES: dict[type, list[str]] = {}


def _encode(v, newline: str, out: list[str]) -> None:
    """Append the JSON text of ``v`` (a dataclass as its fields, a tuple or list, a string, a
    number, a bool or None) to ``out``, indented by one space a level like json.dumps."""
    if isinstance(v, str):
        out.append(_STR(v))
    elif v is None or isinstance(v, (bool, int, float)):
        out.append(json.dumps(v))
    elif isinstance(v, (tuple, list)):
        if not v:
            out.append("[]")
            return
        inner = newline + " "
        for i, x in enumerate(v):
            out.append(("[" if i == 0 else ",") + inner)
            _encode(x, inner, out)
        out.append(newline + "]")
    else:
        names = _FIELD_NAMES.get(type(v))
        if names is None:
            names = _FIELD_NAMES[type(v)] = sorted(f.name for f in dataclasses.fields(v))
        if not names:
            out.append("{}")
            return
        inner = newline + " "
        for i, name in enumerate(names):
            out.append(("{" if i == 0 else ",") + inner + _STR(name) + ": ")
            _encode(getattr(v, name), inner, out)
        out.append(newline + "}")


_STR = json.encoder.encode_basestring_ascii


def _build(cls, data):
    """Rebuild a dataclass (recursively, with tuples) from ``dataclasses.asdict`` output."""
    kwargs = {}
    for name, default, kind, target in _plan(cls):
        if name not in data and default is not dataclasses.MISSING:
            kwargs[name] = default  # a field newer than the file
            continue
        v = data[name]
        if kind == "objects":
            v = tuple(_build(target, x) for x in v)
        elif kind == "tuple":
            v = tuple(v)
        elif kind == "object":
            v = _build(target, v)
        kwargs[name] = v
    return cls(**kwargs)


_PLANS: dict[type, tuple] = {}


def _plan(cls) -> tuple:
    """(name, default, kind, class) of each field of ``cls``, the kind saying how _build makes
    it: "objects" (a tuple of model objects), "tuple" (of plain values), "object", "value"."""
    if cls not in _PLANS:
        plan = []
        for f in dataclasses.fields(cls):
            t = f.type if isinstance(f.type, str) else f.type.__name__
            inner = re.match(r"tuple\[(\w+), \.\.\.\]", t)
            if inner and inner.group(1) in _TYPES:
                plan.append((f.name, f.default, "objects", _TYPES[inner.group(1)]))
            elif inner:
                plan.append((f.name, f.default, "tuple", None))
            else:
                plan.append((f.name, f.default, "object" if t in _TYPES else "value",
                             _TYPES.get(t)))
        _PLANS[cls] = tuple(plan)
    return _PLANS[cls]


_TYPES = {c.__name__: c for c in (TemplateParam, Param, Overload, EnumValue, Enum, TempStorage,
                                  ClassModel, FunctionModel, Diagnostic, ApiModel)}


def from_json(text: str) -> ApiModel:
    return _build(ApiModel, json.loads(text))


def replace(obj, **changes):
    return dataclasses.replace(obj, **changes)

