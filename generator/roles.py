"""Model -> model passes: parameter roles, user-facing flags and exclusions.

Roles come from rules (type names, the doc comment's ``@param[in|out|in,out]`` direction,
constness, names); ``data/overrides.toml`` settles what the rules cannot tell. The file has a
strict schema: unknown keys are errors, and entries that match nothing are reported.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from .headers import tomllib  # tomli on Python 3.10
from .model import ApiModel, ClassModel, Overload, Param, TemplateParam, replace

ROLES = (
    "input_array",    # T (&)[N] read by the primitive
    "output_array",   # T (&)[N] written by the primitive
    "inout_array",    # T (&)[N] read and written (e.g. sorted in place)
    "input_scalar",   # a value (or const T&) read by the primitive
    "output_scalar",  # a non-const T& written by the primitive
    "inout_scalar",   # a non-const T& read and written
    "count",          # an integer by value: valid items, bit ranges, distances
    "tag",            # a compile-time tag value (e.g. bool_constant)
    "iterator_in",    # a pointer/iterator into memory the primitive reads
    "iterator_out",   # a pointer/iterator into memory the primitive writes
    "memory_inout",   # a decayed C array (e.g. CounterT histogram[BINS]) read and written
    "operator",       # a functor: reduction, scan, compare, flag, difference op, decomposer, ...
    "prefix_callback",  # BlockPrefixCallbackOp&: a stateful functor called by the first warp
    "temp_storage",   # TempStorage&
    "range_input",    # const X& of the method's own template type: a fixed-size range it reads
    "range_output",   # X& of the method's own template type, documented as a range it writes
    "span",           # ::cuda::std::span<T>: a pointer and a run-time size (not bound)
    "token",          # a move-only token one method returns and another takes (not bound)
    "thread_rank",    # a free function's linear_tid: the calling thread's rank in the block
)

OPERATOR_TYPES = re.compile(
    r"^(ReductionOp|ScanOp|CompareOp|FlagOp|DifferenceOpT|DigitExtractorT|CountsCallback|"
    r"DecomposerT)$")
ITERATOR_TYPES = re.compile(r"Iterator")
INTEGER_TYPES = re.compile(r"^(const )?(int|unsigned int|unsigned|\w*OffsetT|\w*SizeT)$")
OVERRIDES_PATH = Path(__file__).parent / "data" / "overrides.toml"


class OverridesError(ValueError):
    pass


@dataclass(frozen=True)
class ReleaseOverride:
    """An override for some CCCL releases only (``[[release]]`` in overrides.toml)."""
    cccl: str  # a version range, PEP 440 specifiers: ">=3.1.4,<3.3"
    reason: str
    exclude: tuple[str, ...] = ()  # "Class::Signature" overloads CUB cannot compile there
    nvrtc_options: tuple[str, ...] = ()
    roles: tuple[tuple[str, str], ...] = ()  # ("Class.method.param", role)

    def applies_to(self, cccl: str) -> bool:
        from packaging.specifiers import SpecifierSet

        return SpecifierSet(self.cccl).contains(cccl)


@dataclass(frozen=True)
class Overrides:
    roles: dict = field(default_factory=dict)  # class -> method -> param -> role
    helpers: dict = field(default_factory=dict)  # class -> reason
    user_facing: dict = field(default_factory=dict)  # class -> reason
    exclude: dict = field(default_factory=dict)  # "Class.method" -> reason
    keywords: dict = field(default_factory=dict)  # template parameter spelling -> keyword
    unstable: dict = field(default_factory=dict)  # cub::detail class -> what it does
    release: tuple[ReleaseOverride, ...] = ()

    def for_release(self, cccl: str) -> tuple[ReleaseOverride, ...]:
        return tuple(r for r in self.release if r.applies_to(cccl))

    def nvrtc_options(self, cccl: str) -> tuple[str, ...]:
        return tuple(o for r in self.for_release(cccl) for o in r.nvrtc_options)


_RELEASE_ACTIONS = ("exclude", "nvrtc_options", "roles")


def _check_role(path: Path, where: str, role) -> None:
    if role not in ROLES:
        raise OverridesError(f"{path}: {where} = {role!r} is not one of {', '.join(ROLES)}")


def _release_override(path: Path, i: int, raw: dict) -> ReleaseOverride:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    where = f"{path}: release {i + 1}"
    unknown = sorted(set(raw) - {"cccl", "reason", *_RELEASE_ACTIONS})
    if unknown:
        raise OverridesError(f"{where}: unknown key {unknown[0]!r}; keys are cccl, reason, "
                             f"{', '.join(_RELEASE_ACTIONS)}")
    if not isinstance(raw.get("cccl"), str):
        raise OverridesError(f"{where}: cccl is required: the releases it applies to, e.g. "
                             f"\">=3.1.4,<3.3\"")
    try:
        SpecifierSet(raw["cccl"])
    except InvalidSpecifier:
        raise OverridesError(f"{where}: cccl = {raw['cccl']!r} is not a version range such as "
                             f"\">=3.1.4,<3.3\" or \"==3.4.3\"") from None
    if not isinstance(raw.get("reason"), str) or not raw["reason"].strip():
        raise OverridesError(f"{where} (cccl {raw['cccl']}): reason is required: why these "
                             f"releases need it")
    if not any(k in raw for k in _RELEASE_ACTIONS):
        raise OverridesError(f"{where} (cccl {raw['cccl']}): it does nothing; give one of "
                             f"{', '.join(_RELEASE_ACTIONS)}")
    for key in ("exclude", "nvrtc_options"):
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise OverridesError(f"{where}: {key} = {value!r} is not a list of strings")
    for sig in raw.get("exclude", []):
        if "::" not in sig:
            raise OverridesError(f"{where}: exclude {sig!r} is not \"Class::Signature\" (as "
                                 f"`coopgen coverage` spells overloads)")
    roles = raw.get("roles", {})
    for key, role in roles.items():
        if key.count(".") != 2:
            raise OverridesError(f"{where}: roles key {key!r} is not \"Class.method.param\"")
        _check_role(path, f"release {i + 1} roles.{key}", role)
    return ReleaseOverride(raw["cccl"], raw["reason"].strip(), tuple(raw.get("exclude", ())),
                           tuple(raw.get("nvrtc_options", ())), tuple(roles.items()))


def load_overrides(path: Path = OVERRIDES_PATH) -> Overrides:
    with open(path, "rb") as f:
        data = tomllib.load(f)
    unknown = set(data) - {"roles", "helpers", "user_facing", "exclude", "keywords", "release",
                           "unstable"}
    if unknown:
        raise OverridesError(f"{path}: unknown sections {sorted(unknown)}")
    for cls, methods in data.get("roles", {}).items():
        for method, params in methods.items():
            for param, role in params.items():
                _check_role(path, f"roles.{cls}.{method}.{param}", role)
    release = tuple(_release_override(path, i, r) for i, r in enumerate(data.get("release", [])))
    return Overrides(**dict(data, release=release))


def _doc_params(doc: str) -> dict[str, tuple[str | None, str]]:
    """{param: (direction "in" | "out" | "in,out" or None, its text)} from the ``@param`` and
    ``@param[...]`` commands of a doc comment (text runs to the next ``@`` command)."""
    return {m.group(2): (m.group(1).replace(" ", "") if m.group(1) else None, m.group(3))
            for m in re.finditer(r"@param(?:\[([a-z, ]+)\])?\s+(\w+)([^@]*)", doc)}


def range_extent(doc_text: str, class_tparams: frozenset) -> str | None:
    """The class template parameter a range parameter's documented size names, as in
    WarpReduceBatched's "Statically-sized input range holding ``Batches`` items"."""
    m = re.search(r"holding\s+``(\w+)``\s+items", doc_text)
    return m.group(1) if m and m.group(1) in class_tparams else None


def _base_type(p: Param) -> str:
    t = re.sub(r"^const\s+|\s*&+$", "", p.type).strip()
    return t


def param_role(p: Param, ov: Overload, direction: str | None, has_output: bool = False,
               has_source: bool = False, doc: str = "") -> str:
    """One parameter's role. ``has_output``: the overload writes something else, so an array
    of unknown direction is read; ``has_source``: it reads an iterator, so such an array is
    written (a load)."""
    base = _base_type(p)
    if base.endswith("TempStorage") or base == "TempStorage":
        return "temp_storage"
    if base == "BlockPrefixCallbackOp":
        return "prefix_callback"
    if re.search(r"\bspan<", base):
        return "span"
    if base.endswith("Token") and p.ref == "rvalue":
        return "token"
    if OPERATOR_TYPES.match(base):
        return "operator"
    if "bool_constant" in base:
        return "tag"
    method_types = {t.name for t in ov.template_params if t.kind == "type"}
    if p.ref == "lvalue" and base in method_types and p.array_elem is None:
        # e.g. WarpReduceBatched::Sum(const InputT&): an indexable of compile-time size (a
        # coopgen local/shared array is passed as T(&)[N]); written ranges say so in the docs.
        if p.const:
            return "range_input"
        if re.search(r"\brange\b", doc):
            return "range_output"
    if p.array_extent is not None:
        if p.const or direction == "in":
            return "input_array"
        if direction == "out":
            return "output_array"
        if direction == "in,out":
            return "inout_array"
        if has_source:
            return "output_array"
        return "input_array" if has_output else "inout_array"
    if re.search(r"\[\w+\]$", p.type):  # CounterT histogram[BINS] decays to a pointer
        return "memory_inout"
    if ITERATOR_TYPES.search(base) or p.pointer:
        if "Output" in base or direction == "out":
            return "iterator_out"
        if "Input" in base or direction == "in":
            return "iterator_in"
        return "iterator_out" if ov.name.startswith(("Store", "Write")) else "iterator_in"
    if p.ref == "lvalue" and not p.const:
        return "inout_scalar" if direction == "in,out" else "output_scalar"
    if ov.kind == "function" and p.name == "linear_tid" and INTEGER_TYPES.match(base):
        return "thread_rank"  # LoadDirectStriped(linear_tid, ...): the caller's rank
    if INTEGER_TYPES.match(base):
        return "count"
    return "input_scalar"


def assign_overload_roles(ov: Overload, class_overrides: dict,
                          class_tparams: frozenset = frozenset()) -> Overload:
    parsed = _doc_params(ov.doc)
    docs = [parsed.get(p.name, (None, "")) for p in ov.params]
    forced = class_overrides.get(ov.name, {})
    # First pass: what is an output by itself (names its direction, or is a written reference).
    first = [param_role(p, ov, direction, doc=text)
             for p, (direction, text) in zip(ov.params, docs)]
    has_output = any(r in ("output_array", "output_scalar", "memory_inout", "iterator_out")
                     for r in first)
    has_source = "iterator_in" in first
    params = []
    for p, (direction, text) in zip(ov.params, docs):
        role = forced.get(p.name) or param_role(p, ov, direction, has_output, has_source, text)
        if role in ("range_input", "range_output"):  # its size may name a template parameter
            p = replace(p, array_extent=range_extent(text, class_tparams))
        params.append(replace(p, role=role))
    return replace(ov, params=tuple(params))


def _used_override_keys(cls: ClassModel) -> set[tuple[str, str]]:
    return {(o.name, p.name) for o in cls.constructors + cls.methods for p in o.params}


def _with_release_roles(roles: dict, releases: tuple[ReleaseOverride, ...]) -> dict:
    merged = {c: {m: dict(p) for m, p in ms.items()} for c, ms in roles.items()}
    for r in releases:
        for key, role in r.roles:
            cls, method, param = key.split(".")
            merged.setdefault(cls, {}).setdefault(method, {})[param] = role
    return merged


def apply_overrides(model: ApiModel, overrides: Overrides) -> tuple[ApiModel, list[str]]:
    """Roles, user-facing flags and exclusions, with the ``[[release]]`` entries whose range
    holds the model's release. Returns the new model and unmatched entries."""
    unmatched: list[str] = []
    releases = overrides.for_release(model.cccl)
    roles = _with_release_roles(overrides.roles, releases)
    excluded_here = {sig: f"excluded in this release: {r.reason}"
                     for r in releases for sig in r.exclude}
    names = {c.name for c in model.classes} | {f.name for f in model.functions}
    # unstable entries are not reported: cub::detail classes come and go between releases
    for section in ("roles", "helpers", "user_facing"):
        unmatched += [f"{section}.{c}" for c in getattr(overrides, section) if c not in names]
    functions = []
    for fn in model.functions:
        fn_roles = roles.get(fn.name, {})
        used = {(o.name, p.name) for o in fn.overloads for p in o.params}
        unmatched += [f"roles.{fn.name}.{m}.{p}" for m, ps in fn_roles.items() for p in ps
                      if (m, p) not in used]

        def fix_function(ov: Overload, fn=fn, fn_roles=fn_roles) -> Overload:
            ov = assign_overload_roles(ov, fn_roles)
            ov = replace(ov, template_params=tuple(replace(t, keyword=public_keyword(t, overrides))
                                                   for t in ov.template_params))
            if fn.name in overrides.exclude:
                ov = replace(ov, excluded=overrides.exclude[fn.name])
            elif f"{fn.name}::{ov.signature}" in excluded_here:
                ov = replace(ov, excluded=excluded_here[f"{fn.name}::{ov.signature}"])
            return ov

        functions.append(replace(fn, overloads=tuple(fix_function(o) for o in fn.overloads)))
    classes = []
    for cls in model.classes:
        class_roles = roles.get(cls.name, {})
        used = _used_override_keys(cls)
        for method, params in class_roles.items():
            unmatched += [f"roles.{cls.name}.{method}.{p}" for p in params
                          if (method, p) not in used]

        tparams = frozenset(t.name for t in cls.template_params)

        def fix(ov: Overload) -> Overload:
            ov = assign_overload_roles(ov, class_roles, tparams)
            key = f"{ov.inherited_from or cls.name}.{ov.name}"
            if key in overrides.exclude:
                ov = replace(ov, excluded=overrides.exclude[key])
            elif f"{cls.name}::{ov.signature}" in excluded_here:
                ov = replace(ov, excluded=excluded_here[f"{cls.name}::{ov.signature}"])
            return ov

        classes.append(replace(
            cls, user_facing=_is_user_facing(cls, overrides),
            template_params=tuple(replace(t, keyword=public_keyword(t, overrides))
                                  for t in cls.template_params),
            constructors=tuple(fix(o) for o in cls.constructors),
            methods=tuple(fix(o) for o in cls.methods)))
    # keywords entries are not reported: each names one CUB version's spelling.
    all_methods = {f"{o.inherited_from or c.name}.{o.name}" for c in model.classes for o in c.methods}
    all_methods |= {f.name for f in model.functions}  # a free function: excluded by its name
    unmatched += [f"exclude.{k}" for k in overrides.exclude if k not in all_methods]
    overloads = {f"{c.name}::{o.signature}" for c in model.classes for o in c.constructors + c.methods}
    overloads |= {f"{f.name}::{o.signature}" for f in model.functions for o in f.overloads}
    unmatched += [f"release {r.cccl}: exclude {sig}" for r in releases for sig in r.exclude
                  if sig not in overloads]
    return replace(model, classes=tuple(classes), functions=tuple(functions)), unmatched


def is_internal(t: TemplateParam) -> bool:
    """A template parameter CUB marks as its own: an underscore name (``_Unroll``) or a type
    from a detail namespace. It keeps its default and is never a Python keyword."""
    return t.name.startswith("_") or re.search(r"\bdetail::", t.cpp_type) is not None


def public_keyword(t: TemplateParam, overrides: Overrides) -> str:
    """The stable Python keyword of a class template parameter; "" for an internal one."""
    return "" if is_internal(t) else overrides.keywords.get(t.name, t.keyword)


def _is_user_facing(cls: ClassModel, overrides: Overrides) -> bool:
    """A public class of a top-level block/warp header with temp storage and methods.

    The rule misses CRTP bases and layout helpers; overrides name those.
    """
    if cls.name in overrides.helpers:
        return False
    if cls.name in overrides.user_facing or cls.unstable:
        return True
    top_level = re.fullmatch(r"cub/(block|warp)/(block|warp)_\w+\.cuh", cls.file) is not None
    has_api = bool(cls.constructors) and any(not m.static for m in cls.methods)
    has_storage = cls.temp_storage.form != "none"
    return top_level and cls.qualname.count("::") == 1 and has_api and has_storage


def finalize(model: ApiModel) -> ApiModel:
    """Fixed order: classes and enums by qualified name; members keep declaration order."""
    return replace(model, classes=tuple(sorted(model.classes, key=lambda c: c.qualname)),
                   enums=tuple(sorted(model.enums, key=lambda e: e.qualname)),
                   functions=tuple(sorted(model.functions, key=lambda f: f.qualname)))
