"""Overload resolution and template-argument inference: numba argument types -> one CUB call.

This is the rewrite layer DESIGN.md describes, kept to one module: it picks the overload a
Python call means, infers dtypes, items per thread, block shape, bins and enum values from the
argument types and launch configuration, and checks everything it can at compile time. Every
error names the primitive and the parameter.
"""
from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass, field

import numpy as np
from numba.cuda import types

from . import ctypes_map
from .arrays import static_length
from .errors import CoopgenTypeError
from .operators import Operator, as_operator, check_operators
from .pythonic import spelled_for
from .model.spec import ClassSpec, MSpec, PSpec, TParam

ARRAY_ROLES = ("input_array", "output_array", "inout_array")
#: Ranges: any indexable of compile-time size in C++; a coopgen local/shared array here.
RANGE_ROLES = ("range_input", "range_output")
#: Template keywords that items_per_thread= also sets (BlockRadixRank calls it keys).
PER_THREAD_KEYWORDS = ("items_per_thread", "keys_per_thread")
OMITTABLE_OUTPUTS = ("output_scalar", "inout_scalar")
BLOCK_DIM_KEYWORDS = ("block_dim_x", "block_dim_y", "block_dim_z")



@dataclass(frozen=True)
class Binding:
    """How one C++ parameter of the chosen overload is supplied."""
    param: PSpec
    source: str  # "arg" (a Python argument), "return" (a returned output), "default"
    arg_index: int | None  # index into the call's (folded) argument list
    nbtype: types.Type | None  # numba type of the argument / returned value
    ctype: str  # C type of the shim parameter ("" when nothing is passed at run time)
    operator: Operator | None = None


@dataclass(frozen=True)
class Resolved:
    cls: ClassSpec
    method: MSpec
    bindings: tuple[Binding, ...]
    template_args: tuple[tuple[TParam, str], ...]  # (param, C++ spelling of the argument)
    extents: tuple[tuple[str, int], ...]  # method-level extents (ITEMS_PER_THREAD -> 16)
    returns: tuple[tuple[str, types.Type, str], ...]  # (what, numba type, C type)
    block_dims: tuple[int, int, int] | None
    temp_storage: str  # "implicit" | "explicit" | "none"
    operators: tuple[Operator, ...] = field(default=())
    temp_storage_arg: tuple | None = None  # (argument index, numba type) when explicit

    @property
    def return_type(self) -> types.Type:
        vals = [t for _, t, _ in self.returns]
        if not vals:
            return types.none
        return vals[0] if len(vals) == 1 else types.Tuple(vals)


def _unlit(t):
    return types.unliteral(t)


def _array_elem(t) -> types.Type | None:
    return t.dtype if isinstance(t, types.Array) else None


def _per_thread_array(att: "_Attempt", p: PSpec, ty) -> types.Type:
    """The element type of an array standing for C++'s ``T (&)[N]`` (one dimension)."""
    elem = _array_elem(ty)
    if elem is None:
        raise _NoMatch(f"{p.name!r} must be an array, got {ty}")
    if ty.ndim != 1:
        raise _Mismatch(f"{att.prim}: {p.name} must be a 1-D array (C++ {p.type}), got {ty} "
                        f"with {ty.ndim} dimensions")
    _contiguous(att, p, ty)
    return elem


def _contiguous(att: "_Attempt", p: PSpec, ty) -> None:
    """CUB reads an array through a pointer to its first item: a strided view would be read
    as if contiguous."""
    if ty.layout not in ("C", "F"):
        raise _Mismatch(f"{att.prim}: {p.name} must be a contiguous array (CUB reads it through "
                        f"a pointer), got {ty}, a view that may be strided; pass a contiguous "
                        f"array or slice")


def _is_scalar(t) -> bool:
    return isinstance(t, (types.Number, types.Boolean, types.Record)) or \
        ctypes_map.udt_layout(types.unliteral(t)) is not None


class _Attempt:
    """One try at matching a call against one overload; raises _NoMatch to give up."""

    def __init__(self, prim: str, cls: ClassSpec, method: MSpec):
        self.prim = prim
        self.cls = cls
        self.method = method
        self.dtypes: dict[str, types.Type] = {}  # C++ type name -> numba dtype
        self.extents: dict[str, tuple[int, str]] = {}  # extent name -> (value, where from)

    def need_dtype(self, name: str, dt: types.Type, pname: str) -> None:
        dt = _unlit(dt)
        fixed = ctypes_map.FIXED_CPP_TYPES.get(name)
        if fixed is not None:
            if dt != fixed:
                raise _NoMatch(f"parameter {pname!r} must hold {fixed}, got {dt}")
            return
        old = self.dtypes.get(name)
        if old is not None and old != dt and not _loose(name):
            raise _Mismatch(f"{self.prim}: parameter {pname!r} has dtype {dt}, but {name} is "
                            f"already {old} from another argument (all {name} arguments must "
                            f"share one dtype)")
        self.dtypes.setdefault(name, dt)

    def need_extent(self, name: str, n: int, where: str) -> None:
        old = self.extents.get(name)
        if old and old[0] != n:
            raise _Mismatch(f"{self.prim}: {where} has {n} items but {old[1]} has {old[0]} "
                            f"({name} must agree)")
        self.extents.setdefault(name, (n, where))


class _NoMatch(Exception):
    pass


class _Mismatch(Exception):
    """A definite user error for an overload that otherwise matches."""


def _whole_number(prim: str, keyword: str, value, low: int, high: int | None = None) -> int:
    """A template keyword's integer value, checked against [low, high]."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
    if not ok or value < low or (high is not None and value > high):
        allowed = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise _Mismatch(f"{prim}: {keyword}={value!r} is not allowed; it takes an integer "
                        f"{allowed}")
    return int(value)


def _loose(name: str) -> bool:
    # Method template types deduced by C++ from each argument separately.
    return name in ("DefaultT", "OffsetT", "ValidFlag", "OutputT", "OutputType", "InputT")


def _omittable(p: PSpec) -> bool:
    return p.role in OMITTABLE_OUTPUTS or p.default is not None


def _slots(method: MSpec, kw_names: set[str]) -> tuple[list[int], list[int]]:
    """(parameters positional arguments may fill, the others no keyword names). As in Python,
    positional arguments fill parameters before the first keyword-named one; temp storage is
    only ever given as temp_storage=, never positionally."""
    params = method.params
    first_kw = min((i for i, p in enumerate(params) if p.name in kw_names), default=len(params))
    before = [i for i in range(first_kw) if params[i].role != "temp_storage"]
    after = [i for i in range(first_kw + 1, len(params)) if params[i].name not in kw_names
             and params[i].role != "temp_storage"]
    return before, after


def _candidate_assignments(method: MSpec, n_pos: int, kw_names: set[str]):
    """Ways to map n positional args onto the overload's parameters (C++ order)."""
    params = method.params
    before, after = _slots(method, kw_names)
    if not all(_omittable(params[i]) for i in after):
        return
    omittable = [i for i in before if _omittable(params[i])]
    always_skipped = {i for i, p in enumerate(params) if p.role == "temp_storage"} | set(after)
    n_skip = len(before) - n_pos
    if n_skip < 0 or n_skip > len(omittable):
        return
    for skipped in itertools.combinations(omittable, n_skip):
        positional = [i for i in before if i not in skipped]
        yield positional, set(skipped) | always_skipped


def _why_unassignable(method: MSpec, n_pos: int, kw_names: set[str]) -> tuple[str, str]:
    """Why no assignment exists: ("missing", parameter) or ("twice", parameter), or
    ("too_many", "")."""
    params = method.params
    before, after = _slots(method, kw_names)
    first_kw = next((p.name for p in params if p.name in kw_names), None)
    if n_pos > len(before) and first_kw is not None:
        return "twice", first_kw
    required = [params[i].name for i in before if not _omittable(params[i])]
    if len(required) > n_pos:
        return "missing", required[n_pos]
    late = [params[i].name for i in after if not _omittable(params[i])]
    if late:
        return "missing", late[0]
    return "too_many", ""


def resolve(prim: str, cls: ClassSpec, methods: tuple[MSpec, ...], args: tuple,
            kws: dict, *, template_kws: dict, block_dims, enums: dict,
            warp_default: int = 32, temp_storage=None, pinned: dict | None = None,
            alternatives: dict | None = None) -> Resolved:
    """Pick the overload of ``methods`` that the call means and infer its template arguments.

    ``args``/``kws`` are numba types of the call's method arguments; ``template_kws`` holds
    literal Python values of template keywords (items_per_thread=16, algorithm="raking").
    ``alternatives`` maps a keyword to its CUB spellings where overloads differ (each overload
    gets the spelling it has).
    """
    if temp_storage is not None:
        _check_temp_storage(prim, cls, temp_storage[1])
    call_kws = kws
    known = {p.name for m in methods for p in m.params}
    alternatives = alternatives or {}
    unknown = {k for k in kws if not known.intersection(alternatives.get(k, (k,)))}
    if unknown:
        templates = "" if pinned else (f"; template keywords are "
                                       f"{', '.join(sorted(template_keywords(cls)))}")
        raise CoopgenTypeError(
            f"{prim}: unknown keyword {sorted(unknown)[0]!r}; parameters are "
            f"{', '.join(sorted(known)) or '(none)'}{templates}")
    mismatches, reasons, lacks_keyword = [], [], []
    unassignable = {"missing": [], "twice": [], "too_many": []}
    # Fewest C++ parameters first: ExclusiveSum(x) means (T, T&), not (T, T&, T&).
    # Excluded overloads (overrides.toml) last: a call that only they take is told why.
    for method in sorted(methods, key=lambda m: (bool(m.excluded), len(m.params))):
        kws = spelled_for(method, call_kws, alternatives)
        kw_names = set(kws)
        foreign = sorted(kw_names - {p.name for p in method.params})
        if foreign:  # a keyword of another overload
            lacks_keyword.append(f"  {method.signature}: has no parameter {foreign[0]!r}")
            continue
        candidates = list(_candidate_assignments(method, len(args), kw_names))
        if not candidates:
            why, name = _why_unassignable(method, len(args), kw_names)
            unassignable[why].append(name)
        for positional, skipped in candidates:
            try:
                r = _bind(prim, cls, method, args, kws, positional, skipped, template_kws,
                          block_dims, enums, warp_default, pinned)
                if method.excluded:
                    raise CoopgenTypeError(f"{prim}: {method.signature} is not bound: {method.excluded}")
                if temp_storage is not None:
                    r = dataclasses.replace(r, temp_storage="explicit",
                                            temp_storage_arg=temp_storage)
                    _check_storage_fits(prim, r)
                return r
            except _Mismatch as e:
                mismatches.append(str(e))
            except _NoMatch as e:
                reasons.append(f"  {method.signature}: {e}")
    if mismatches:
        raise CoopgenTypeError(mismatches[0])
    overloads = "; ".join(m.signature for m in methods)
    if not reasons and unassignable["twice"]:
        raise CoopgenTypeError(f"{prim}: argument {unassignable['twice'][0]!r} is given both "
                               f"positionally and by keyword (overloads: {overloads})")
    if not reasons and unassignable["missing"]:
        raise CoopgenTypeError(f"{prim}: missing required argument "
                               f"{unassignable['missing'][0]!r} (overloads: {overloads})")
    if not reasons and unassignable["too_many"] and not lacks_keyword:
        most = max(len(_slots(m, set(spelled_for(m, call_kws, alternatives)))[0])
                   for m in methods)
        raise CoopgenTypeError(f"{prim}: takes at most {most} positional argument(s) here, got "
                               f"{len(args)} (overloads: {overloads})")
    reasons += lacks_keyword
    given = ", ".join([str(a) for a in args] + [f"{k}={v}" for k, v in call_kws.items()])
    lines = [f"{prim}: no overload matches ({given}). Overloads:"]
    lines += [f"  {m.signature}" for m in methods]
    if reasons:
        lines.append("Why each was rejected:")
        lines += reasons[:12]
    raise CoopgenTypeError("\n".join(lines))


def _check_temp_storage(prim: str, cls: ClassSpec, ty) -> None:
    from .storage import TempStorageType

    if cls.temp_storage == "none":
        raise CoopgenTypeError(f"{prim}: takes no temp_storage (CUB's {cls.name} has none)")
    if isinstance(ty, TempStorageType):
        return
    from .arrays import SizedArray
    if isinstance(ty, SizedArray) and ty.space != "shared":
        raise CoopgenTypeError(f"{prim}: temp_storage={ty} is not in shared memory; the "
                               f"threads share it: use coopgen.shared.array(nbytes, np.uint8) "
                               f"or a coopgen.TempStorage")
    if not isinstance(ty, types.Array) or ty.dtype != types.uint8:
        raise CoopgenTypeError(f"{prim}: temp_storage must be a coopgen.TempStorage or a uint8 "
                               f"array in shared memory (coopgen.shared.array(nbytes, np.uint8)), "
                               f"got {ty}")


def _check_storage_fits(prim: str, r: Resolved) -> None:
    """Explicit storage whose size the kernel's types know must hold the class's TempStorage
    (CUB would silently run past its end)."""
    from .arrays import SizedArray
    from .storage import TempStorageType

    ty = r.temp_storage_arg[1]
    if isinstance(ty, SizedArray):
        given, what = ty.size * ty.dtype.bitwidth // 8, f"temp_storage={ty}"
        given_align = None
    elif isinstance(ty, TempStorageType) and (ty.obj.size, ty.obj.alignment) != (None, None):
        given, what = ty.obj.size, f"temp_storage={ty.obj!r}"
        given_align = ty.obj.alignment
    else:
        return
    from .layout import resolved_layout
    from .nvrtc import NvrtcError
    try:
        need, align = resolved_layout(r.cls, r.template_args)
    except NvrtcError:  # CUB rejects these template arguments: the kernel's compile says why
        return
    args = ", ".join(v for _, v in r.template_args)
    if given is not None and need > given:
        raise CoopgenTypeError(f"{prim}: {what} holds {given} bytes, but the TempStorage of "
                               f"{r.cls.cpp}<{args}> needs {need} bytes (alignment {align}): "
                               f"size_in_bytes is smaller than required")
    if given_align is not None and align > given_align:
        raise CoopgenTypeError(f"{prim}: {what} is {given_align}-byte aligned, but the "
                               f"TempStorage of {r.cls.cpp}<{args}> needs {align}-byte alignment: "
                               f"alignment is smaller than required")


def template_keywords(cls: ClassSpec) -> set[str]:
    kws = {t.keyword for t in cls.template_params if t.keyword}  # "": internal
    if {"block_dim_x", "block_dim_y", "block_dim_z"} & kws:
        kws |= {"threads_per_block"}
    kws |= {"items_per_thread", "temp_storage", "threads_per_block"}
    if cls.value_type is not None:
        kws.add("dtype")
    if "logical_warp_threads" in kws:
        kws.add("threads_in_warp")
    return kws


def _bind(prim, cls, method, args, kws, positional, skipped, template_kws, block_dims, enums,
          warp_default, pinned=None) -> Resolved:
    att = _Attempt(prim, cls, method)
    arg_of, type_of = {}, {}  # parameter -> index among the call's arguments, numba type
    for pos, i in enumerate(positional):
        arg_of[i], type_of[i] = pos, args[pos]
    for k, name in enumerate(kws):
        idx = next(i for i, p in enumerate(method.params) if p.name == name)
        arg_of[idx] = len(args) + k
        type_of[idx] = kws[name]

    bindings: list = [None] * len(method.params)
    returns = []
    operators = []
    temp_storage = "none"
    # Arrays first: they fix the dtypes; a scalar of another width is then converted to it,
    # as C++ would convert the argument (a scalar alone decides its type parameter).
    order = sorted(range(len(method.params)),
                   key=lambda i: method.params[i].role in ("input_scalar", "count"))
    for i in order:
        p = method.params[i]
        if i in skipped:
            if p.role in OMITTABLE_OUTPUTS:
                bindings[i] = Binding(p, "return", None, None, "")
            else:
                if p.role == "temp_storage":
                    temp_storage = "implicit"
                bindings[i] = Binding(p, "default", None, None, "")
            continue
        b = _bind_param(att, p, type_of[i], arg_of[i])
        if p.role == "temp_storage":
            temp_storage = "explicit"
        if b.operator is not None:
            operators.append(b.operator)
        bindings[i] = b

    # Template arguments: dtypes and extents from the arguments, the rest from keywords.
    template_args, block = _template_args(att, cls, template_kws, block_dims, enums,
                                          warp_default, pinned)
    _check_limits(prim, cls, method, template_args, block, operators)
    # Omitted outputs are returned: their dtype is now known.
    final = []
    for b in bindings:
        if b.source == "return":
            dt = _dtype_of(att, b.param.base, cls, template_args)
            final.append(Binding(b.param, "return", None, dt, ctypes_map.ctype(dt, prim, b.param.name)))
            returns.append((b.param.name, dt, ctypes_map.ctype(dt, prim, b.param.name)))
        else:
            final.append(b)
    if method.returns not in ("void", ""):
        dt = _dtype_of(att, method.returns, cls, template_args)
        returns.insert(0, ("return", dt, ctypes_map.ctype(dt, prim, "return value")))
    if temp_storage == "none" and cls.temp_storage != "none":
        temp_storage = "implicit"
    try:
        check_operators(prim, Resolved(cls, method, tuple(final), template_args, (), (),
                                       block, temp_storage))
    except CoopgenTypeError as e:  # definite, but another overload may still match
        raise _Mismatch(str(e)) from None
    method_extents = tuple((name, n) for name, (n, _) in sorted(att.extents.items())
                           if name not in {t.name for t in cls.template_params})
    return Resolved(cls, method, tuple(final), template_args, method_extents, tuple(returns),
                    block, temp_storage, tuple(operators))


def _check_limits(prim, cls, method, template_args, block, operators) -> None:
    """Refuse a combination the limits table (generator/data/limits.toml) says CUB does not
    handle: every condition of a limit must hold."""
    from .model import registry
    from .ctypes_map import CPP_OF
    from .operators import BUILTINS

    args = {t.keyword: v.removeprefix("cub::") for t, v in template_args}
    names = {p.name for p in method.params}
    for lim in getattr(registry.package(), "LIMITS", ()):
        if lim.cls != cls.name or (lim.methods and method.name not in lim.methods):
            continue
        why = []
        for kw, value in lim.template:
            if args.get(kw) != value:
                break
            why.append(f"{kw}={value}")
        else:
            for kw, least in lim.below:
                if kw not in args or int(args[kw]) >= least:
                    break
                why.append(f"{kw}={args[kw]} (< {least})")
            else:
                if lim.params:
                    given = sorted(names & set(lim.params))
                    if not given:
                        continue
                    why.append(f"with {given[0]}")
                if lim.operators:
                    odd = [op for op in operators if op.builtin not in {
                        BUILTINS.get(op.kind, {}).get(n) for n in lim.operators}]
                    if not odd:
                        continue
                    why.append(f"{odd[0].param}=" + ("a Python function" if odd[0].function
                                                     else odd[0].builtin))
                if lim.multi_dim_block:
                    if block is None or (block[1], block[2]) == (1, 1):
                        continue
                    why.append(f"threads_per_block={block}")
                if lim.lone_odd_warp:
                    lwt = args.get("logical_warp_threads", "")
                    lwt = int(lwt) if lwt.isdigit() else 32  # CUB's default: a whole warp
                    threads = block[0] * block[1] * block[2] if block else 1024
                    if not lwt & (lwt - 1) or threads <= lwt:
                        continue
                    why.append(f"logical_warp_threads={lwt} in a block of {threads} threads")
                if lim.struct_items:
                    items = dict((t.name, v) for t, v in template_args).get(
                        cls.value_type.name if cls.value_type else "")
                    if items is None or items in CPP_OF.values():
                        continue
                    why.append(f"items of {items}")
                raise _Mismatch(f"{prim}: {', '.join(why)} is not supported: {lim.reason}")


def _bind_param(att: _Attempt, p: PSpec, ty, index: int) -> Binding:
    prim = att.prim
    role = p.role
    if role in ARRAY_ROLES:
        elem = _per_thread_array(att, p, ty)
        att.need_dtype(p.base, elem, p.name)
        n = static_length(ty)
        if n is not None and p.extent:
            att.need_extent(p.extent, n, f"array {p.name!r}")
        return Binding(p, "arg", index, ty, ctypes_map.ctype(elem, prim, p.name) + "*")
    if role in RANGE_ROLES:
        elem, n = _per_thread_array(att, p, ty), static_length(ty)
        if n is None:
            raise _Mismatch(f"{prim}: {p.name} must have a compile-time length: allocate it "
                            f"with coopgen.local.array(n, dtype) or coopgen.shared.array")
        # CUB wants the range's elements to be the class's value type.
        att.need_dtype(att.cls.value_type.name, elem, p.name)
        if p.extent:
            att.need_extent(p.extent, n, f"array {p.name!r}")
        return Binding(p, "arg", index, ty, ctypes_map.ctype(elem, prim, p.name) + "*")
    if role in ("iterator_in", "iterator_out", "memory_inout"):
        elem = _array_elem(ty)
        if elem is None:
            raise _NoMatch(f"{p.name!r} must be a device array, got {ty}")
        _contiguous(att, p, ty)
        if role == "memory_inout":
            att.need_dtype(p.base.split("[")[0].strip(), elem, p.name)
            n = static_length(ty)
            extent = p.type.rsplit("[", 1)[1].rstrip("]") if "[" in p.type else None
            if extent and n is not None:
                att.need_extent(extent, n, f"array {p.name!r}")
        return Binding(p, "arg", index, ty, ctypes_map.ctype(elem, prim, p.name) + "*")
    if role in OMITTABLE_OUTPUTS:
        elem = _array_elem(ty)
        if elem is None:
            raise _NoMatch(f"{p.name!r} is an output: pass a 1-element array or omit it")
        if static_length(ty) == 0:  # a longer array gets the value in its first element
            raise _NoMatch(f"{p.name!r} is a scalar output: pass a 1-element array or omit it, "
                           f"not {ty}")
        att.need_dtype(p.base, elem, p.name)
        return Binding(p, "arg", index, ty, ctypes_map.ctype(elem, prim, p.name) + "*")
    if role == "input_scalar":
        if not _is_scalar(ty):
            raise _NoMatch(f"{p.name!r} must be a scalar, got {ty}")
        ut = _unlit(ty)
        known = att.dtypes.get(p.base)
        if known is not None and isinstance(ut, types.Number) and isinstance(known, types.Number):
            ut = known  # converted at the call, like a C++ argument
        else:
            att.need_dtype(p.base, ty, p.name)
        if ctypes_map.is_struct(ut):  # records and user types travel by pointer
            return Binding(p, "arg", index, ut, ctypes_map.ctype(ut, prim, p.name) + "*")
        return Binding(p, "arg", index, ut, ctypes_map.scalar_ctype(ut, prim, p.name))
    if role == "count":
        if not isinstance(ty, (types.Integer, types.Boolean)):
            raise _NoMatch(f"{p.name!r} must be an integer, got {ty}")
        ut = _unlit(ty)
        return Binding(p, "arg", index, ut, ctypes_map.scalar_ctype(ut, prim, p.name))
    if role in ("operator", "prefix_callback"):
        try:
            op = as_operator(prim, p, ty)
        except CoopgenTypeError as e:  # definite, but another overload may still match
            raise _Mismatch(str(e)) from None
        if op is None:
            raise _NoMatch(f"{p.name!r} must be an operator, got {ty}")
        return Binding(p, "arg", index, ty, op.state_ctype, operator=op)
    if role == "temp_storage":
        if _array_elem(ty) is None:
            raise _Mismatch(f"{prim}: temp_storage must be a shared uint8 array, got {ty}")
        return Binding(p, "arg", index, ty, "void*")
    raise _NoMatch(f"role {role} of {p.name!r} is not bound")


def _dtype_of(att: _Attempt, cpp: str, cls: ClassSpec, template_args) -> types.Type:
    name = cpp.replace("const ", "").replace("&", "").strip()
    if name in att.dtypes:
        return att.dtypes[name]
    fixed = ctypes_map.from_cpp(name)
    if fixed is not None:
        return fixed
    raise CoopgenTypeError(f"{att.prim}: cannot infer the C++ type {name!r}; pass arrays whose "
                           f"dtype determines it")


def _template_args(att: _Attempt, cls: ClassSpec, kw: dict, block_dims, enums, warp_default,
                   pinned: dict | None = None):
    """C++ template arguments, in order. ``pinned`` holds those of a constructed object whose
    method is being called: they are fixed, and arguments that imply others are an error."""
    prim = att.prim
    if pinned:
        return _pinned_args(att, cls, pinned), block_dims
    out = []
    given = dict(kw)
    first_type = cls.value_type
    _use_alias(prim, given, "threads_in_warp", "logical_warp_threads")
    if first_type is not None:
        _use_alias(prim, given, "dtype", first_type.keyword)
    dims = {k: given.pop(k) for k in BLOCK_DIM_KEYWORDS if k in given}
    if dims:  # CUB's spelling of the block shape
        if "threads_per_block" in given:
            raise _Mismatch(f"{prim}: threads_per_block= and {'= and '.join(dims)}= both give "
                            f"the block shape; pass one")
        if "block_dim_x" not in dims:
            raise _Mismatch(f"{prim}: {'= and '.join(dims)}= without block_dim_x=; pass "
                            f"threads_per_block=(x, y, z)")
        given["threads_per_block"] = tuple(dims.get(k, 1) for k in BLOCK_DIM_KEYWORDS)
    block = None
    if any(t.keyword == "block_dim_x" for t in cls.template_params) or cls.scope == "block":
        block = _block_dims(prim, given.pop("threads_per_block", None), block_dims)
    else:
        tpb = given.pop("threads_per_block", None)
        block = _block_dims(prim, tpb, block_dims) if (tpb or block_dims) else None
    _apply_items_per_thread(att, cls, given.pop("items_per_thread", None))
    for t in cls.template_params:
        kwv = given.pop(t.keyword, None)
        if t.keyword in BLOCK_DIM_KEYWORDS and block is not None:
            out.append((t, str(block["xyz".index(t.keyword[-1])])))
            continue
        if t.kind == "type":
            if kwv is not None:
                dt = ctypes_map.as_dtype(kwv, prim, t.keyword)
                att.need_dtype(t.name, dt, t.keyword)
            if t.name in att.dtypes:
                out.append((t, ctypes_map.ctype(att.dtypes[t.name], prim, t.keyword)))
            elif t.default is not None:
                out.append((t, t.default))
            else:
                raise _Mismatch(f"{prim}: missing required argument: cannot infer template "
                                f"parameter {t.name} (pass {t.keyword}=)")
            continue
        if t.name in att.extents:
            out.append((t, str(att.extents[t.name][0])))
            if kwv is not None and _whole_number(prim, t.keyword, kwv, 1) != \
                    att.extents[t.name][0]:
                raise _Mismatch(f"{prim}: {t.keyword}={kwv} disagrees with "
                                f"{att.extents[t.name][1]} ({att.extents[t.name][0]} items)")
            continue
        if t.keyword == "logical_warp_threads":
            n = warp_default if kwv is None else _whole_number(prim, "logical_warp_threads",
                                                                kwv, 1, 32)
            if t.constraint == "power_of_two" and n & (n - 1):
                raise _Mismatch(f"{prim}: logical_warp_threads={n} is not allowed; "
                                f"{cls.name} needs a power of two (1, 2, 4, 8, 16 or 32)")
            if block is not None and (block[0] * block[1] * block[2]) % n:
                raise _Mismatch(f"{prim}: logical_warp_threads={n} does not divide the "
                                f"{block[0] * block[1] * block[2]} threads of the block")
            out.append((t, str(n)))
            continue
        if kwv is not None:
            out.append((t, ctypes_map.template_value(prim, t, kwv, enums)))
        elif t.default is not None:
            out.append((t, t.default))
        else:
            raise _Mismatch(f"{prim}: missing required argument {t.keyword}= (template "
                            f"parameter {t.name})")
    if given:
        k = sorted(given)[0]
        raise _Mismatch(f"{prim}: unknown keyword {k!r}; template keywords are "
                        f"{', '.join(sorted(template_keywords(cls)))}")
    return tuple(out), block


def _use_alias(prim: str, given: dict, alias: str, keyword: str) -> None:
    """``alias=`` stands for ``keyword=``; both at once is an error, not a silent choice."""
    if alias in given:
        if keyword in given and not same_value(given[alias], given[keyword]):
            raise _Mismatch(f"{prim}: {alias}={given[alias]!r} and {keyword}={given[keyword]!r} "
                            f"name the same template parameter; pass one")
        given[keyword] = given.pop(alias)


def same_value(a, b) -> bool:
    """Template keyword values that mean the same (np.int32 and numba's int32 are one dtype)."""
    try:
        if bool(a == b):
            return True
    except (TypeError, ValueError):  # values that do not compare (arrays, odd types)
        pass
    try:
        return ctypes_map.as_dtype(a, "", "") == ctypes_map.as_dtype(b, "", "")
    except (CoopgenTypeError, TypeError, ValueError):
        return False


def _pinned_args(att: _Attempt, cls: ClassSpec, pinned: dict):
    out = []
    for t in cls.template_params:
        value = pinned[t.name]
        if t.kind == "type" and t.name in att.dtypes:
            mine = ctypes_map.ctype(att.dtypes[t.name], att.prim, t.name)
        elif t.name in att.extents:
            mine = str(att.extents[t.name][0])
        else:
            mine = value
        if mine != value:
            raise _Mismatch(f"{att.prim}: the arguments give {t.name} = {mine}, but the "
                            f"{cls.name} object was built with {t.name} = {value}")
        out.append((t, value))
    return tuple(out)


def _apply_items_per_thread(att: _Attempt, cls: ClassSpec, ipt) -> None:
    """items_per_thread= fills the per-thread extents arrays cannot tell (numba arrays have
    no static shape), and must agree with those they can."""
    method_extents = {p.extent for p in att.method.params
                      if p.extent and p.extent in att.method.tparams}
    # A per-thread count C++ cannot deduce (no parameter mentions it) is passed explicitly.
    method_extents |= {t for t in att.method.tparams if t.endswith(("PER_THREAD", "PerThread"))
                       and not any(t in p.type for p in att.method.params)}
    targets = method_extents | {t.name for t in cls.template_params
                                if t.keyword in PER_THREAD_KEYWORDS}
    if ipt is not None:
        ipt = _whole_number(att.prim, "items_per_thread", ipt, 1)
        for e in sorted(targets):
            if e in att.extents and att.extents[e][0] != ipt:
                # ... and cuda.coop's words for it, which its users' tests match
                raise _Mismatch(f"{att.prim}: items_per_thread={ipt} disagrees with "
                                f"{att.extents[e][1]} ({att.extents[e][0]} items): "
                                f"coop.{att.prim} items_per_thread must match the array shape")
            att.extents.setdefault(e, (ipt, "items_per_thread="))
    for e in sorted(method_extents):
        if e not in att.extents:
            raise _Mismatch(f"{att.prim}: cannot infer items_per_thread ({e}): allocate the "
                            f"array with coopgen.local.array(n, dtype) or pass items_per_thread=")
    # Extents of class constants (BINS_TRACKED_PER_THREAD) are checked by the shim.


def _block_dims(prim: str, tpb, launch_dims):
    dims = tpb if tpb is not None else launch_dims
    if dims is None:
        raise _Mismatch(f"{prim}: threads_per_block is unknown: launch the kernel "
                        f"(kernel[grid, block](...)) or pass threads_per_block=")
    given = dims if isinstance(dims, tuple) else (dims,)
    if not 1 <= len(given) <= 3 or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, (bool, np.bool_)) and d >= 1
            for d in given):
        raise _Mismatch(f"{prim}: threads_per_block={dims!r} is not allowed; it takes a positive "
                        f"int or a 2- or 3-tuple of positive ints")
    dims = tuple(int(d) for d in given) + (1,) * (3 - len(given))
    if dims[0] * dims[1] * dims[2] > 1024:
        raise _Mismatch(f"{prim}: threads_per_block={dims} has {dims[0] * dims[1] * dims[2]} "
                        f"threads; CUDA allows at most 1024 per block")
    return dims


def check_host_keywords(prim: str, cls: ClassSpec, template_kws: dict, enums: dict,
                        also: tuple = ()) -> None:
    """Template keywords given to a two-phase object on the host, checked there: a wrong one
    is a ValueError now (as in cuda.coop), not a compile error in some later kernel. Those not
    given are inferred when the object is called."""
    allowed = template_keywords(cls) | set(also)
    for k in template_kws:
        if k not in allowed:
            raise ValueError(f"{prim}: unknown keyword {k!r}; template keywords are "
                             f"{', '.join(sorted(allowed))}")
    given = {k: v for k, v in template_kws.items() if k not in also}
    try:
        _use_alias(prim, given, "threads_in_warp", "logical_warp_threads")
        if cls.value_type is not None:
            _use_alias(prim, given, "dtype", cls.value_type.keyword)
        if "threads_per_block" in given:
            _block_dims(prim, given.pop("threads_per_block"), None)
        if "items_per_thread" in given:
            _whole_number(prim, "items_per_thread", given.pop("items_per_thread"), 1)
        for t in cls.template_params:
            if t.keyword not in given:
                continue
            value = given.pop(t.keyword)
            if t.kind == "type":
                ctypes_map.as_dtype(value, prim, t.keyword)
            elif t.keyword == "logical_warp_threads":
                n = _whole_number(prim, t.keyword, value, 1, 32)
                if t.constraint == "power_of_two" and n & (n - 1):
                    raise _Mismatch(f"{prim}: logical_warp_threads={n} is not allowed; "
                                    f"{cls.name} needs a power of two (1, 2, 4, 8, 16 or 32)")
            elif t.keyword in PER_THREAD_KEYWORDS or t.keyword.endswith("per_thread"):
                _whole_number(prim, t.keyword, value, 1)
            else:
                ctypes_map.template_value(prim, t, value, enums)
    except (_Mismatch, CoopgenTypeError) as e:
        raise ValueError(re.sub(r"\x1b\[[0-9;]*m", "", str(e))) from None  # no terminal colours


def class_template_args(prim: str, cls: ClassSpec, template_kws: dict, enums: dict):
    """Template arguments of ``cls`` from keywords alone (two-phase objects on the host)."""
    from .model.spec import MSpec

    att = _Attempt(prim, cls, MSpec("", "", "method", "void", ()))
    try:
        return _template_args(att, cls, dict(template_kws), None, enums, 32)[0]
    except _Mismatch as e:
        raise CoopgenTypeError(str(e)) from None
