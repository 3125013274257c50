"""Overload resolution: argument descriptions -> the plan of one CUB call. Matches arguments to
each overload's parameters and roles, lets them fix dtypes and extents, asks templates for the
template arguments and checks all that can be known before C++ is written; every error names
the primitive and the parameter.
"""
from __future__ import annotations

import dataclasses
import itertools

from ..model.errors import CoopgenError
from ..model.spec import ClassSpec, MSpec, PSpec
from ..types import cpp
from ..types.desc import UINT8, Array, Scalar, Storage, Struct, unliteral
from .limits import check_limits
from .operators import as_operator, check_operators
from .plan import (ARRAY_ROLES, OMITTABLE_OUTPUTS, RANGE_ROLES, Attempt, Binding, Mismatch,
                   NoMatch, Plan)
from .shape import spelled_for
from .templates import template_args, template_keywords

#: Roles passed as a pointer to an array's first item.
POINTER_ROLES = (*ARRAY_ROLES, *RANGE_ROLES, *OMITTABLE_OUTPUTS, "iterator_in", "iterator_out",
                 "memory_inout")


def _elem(t):
    return t.dtype if isinstance(t, Array) else None


def _is_number(t) -> bool:
    return isinstance(t, Scalar) and t.kind not in ("bool", "vector")


def _per_thread_array(att: Attempt, p: PSpec, ty):
    """The element type of an array standing for C++'s ``T (&)[N]`` (one dimension)."""
    elem = _elem(ty)
    if elem is None:
        raise NoMatch(f"{p.name!r} must be an array, got {ty}")
    if ty.ndim != 1:
        raise Mismatch(f"{att.prim}: {p.name} must be a 1-D array (C++ {p.type}), got {ty} "
                       f"with {ty.ndim} dimensions")
    _contiguous(att, p, ty)
    return elem


def _contiguous(att: Attempt, p: PSpec, ty) -> None:
    """CUB reads an array through a pointer to its first item: a strided view would be read
    as if contiguous."""
    if not ty.contiguous:
        raise Mismatch(f"{att.prim}: {p.name} must be a contiguous array (CUB reads it through "
                       f"a pointer), got {ty}, a view that may be strided; pass a contiguous "
                       f"array or slice")


def _omittable(p: PSpec) -> bool:
    return p.role in OMITTABLE_OUTPUTS or p.default is not None


def _slots(method: MSpec, kw_names: set[str]) -> tuple[list[int], list[int]]:
    """(parameters positional arguments may fill, the others no keyword names). As in Python,
    positional arguments fill parameters before the first keyword-named one; temp storage is
    only ever given as temp_storage=, never positionally."""
    params = method.params
    first_kw = min((i for i, p in enumerate(params) if p.name in kw_names), default=len(params))
    free = [i for i, p in enumerate(params) if p.role != "temp_storage" and p.name not in kw_names]
    return [i for i in free if i < first_kw], [i for i in free if i > first_kw]


def _candidate_assignments(method: MSpec, n_pos: int, kw_names: set[str]):
    """Ways to map n positional args onto the overload's parameters (C++ order):
    (parameters filled positionally, parameters left out)."""
    params = method.params
    before, after = _slots(method, kw_names)
    n_skip = len(before) - n_pos
    if n_skip < 0 or not all(_omittable(params[i]) for i in after):
        return
    always_skipped = {i for i, p in enumerate(params) if p.role == "temp_storage"} | set(after)
    for skipped in itertools.combinations([i for i in before if _omittable(params[i])], n_skip):
        yield [i for i in before if i not in skipped], set(skipped) | always_skipped


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
    return ("missing", late[0]) if late else ("too_many", "")


def resolve(prim: str, cls: ClassSpec, methods: tuple[MSpec, ...], args: tuple,
            kws: dict, *, template_kws: dict, block_dims, enums: dict,
            warp_default: int = 32, temp_storage=None, pinned: dict | None = None,
            alternatives: dict | None = None) -> Plan:
    """Pick the overload the call means and infer its template arguments. ``template_kws``:
    Python values (items_per_thread=16); ``alternatives``: a keyword's CUB spellings where
    overloads differ."""
    if temp_storage is not None:
        _check_temp_storage(prim, cls, temp_storage[1])
    call_kws = kws
    known = {p.name for m in methods for p in m.params}
    alternatives = alternatives or {}
    unknown = {k for k in kws if not known.intersection(alternatives.get(k, (k,)))}
    if unknown:
        templates = "" if pinned else (f"; template keywords are "
                                       f"{', '.join(sorted(template_keywords(cls)))}")
        raise CoopgenError(
            f"{prim}: unknown keyword {sorted(unknown)[0]!r}; parameters are "
            f"{', '.join(sorted(known)) or '(none)'}{templates}")
    mismatches, reasons, lacks_keyword = [], [], []
    unassignable = {}  # "missing" / "twice" / "too_many" -> the first parameter concerned
    # Fewest C++ parameters first: ExclusiveSum(x) means (T, T&), not (T, T&, T&). Excluded
    # overloads (overrides.toml) last: a call that only they take is told why.
    for method in sorted(methods, key=lambda m: (bool(m.excluded), len(m.params))):
        kws = spelled_for(method, call_kws, alternatives)
        foreign = sorted(set(kws) - {p.name for p in method.params})
        if foreign:  # a keyword of another overload
            lacks_keyword.append(f"  {method.signature}: has no parameter {foreign[0]!r}")
            continue
        candidates = list(_candidate_assignments(method, len(args), set(kws)))
        if not candidates:
            unassignable.setdefault(*_why_unassignable(method, len(args), set(kws)))
        for positional, skipped in candidates:
            try:
                r = _bind(prim, cls, method, args, kws, positional, skipped, template_kws,
                          block_dims, enums, warp_default, pinned)
                if method.excluded:
                    raise CoopgenError(f"{prim}: {method.signature} is not bound: "
                                       f"{method.excluded}")
                if temp_storage is not None:
                    r = dataclasses.replace(r, temp_storage="explicit",
                                            temp_storage_arg=temp_storage)
                return r
            except Mismatch as e:
                mismatches.append(str(e))
            except NoMatch as e:
                reasons.append(f"  {method.signature}: {e}")
    if mismatches:
        raise CoopgenError(mismatches[0])
    overloads = "; ".join(m.signature for m in methods)
    if not reasons and "twice" in unassignable:
        raise CoopgenError(f"{prim}: argument {unassignable['twice']!r} is given both "
                           f"positionally and by keyword (overloads: {overloads})")
    if not reasons and "missing" in unassignable:
        raise CoopgenError(f"{prim}: missing required argument {unassignable['missing']!r} "
                           f"(overloads: {overloads})")
    if not reasons and "too_many" in unassignable and not lacks_keyword:
        most = max(len(_slots(m, set(spelled_for(m, call_kws, alternatives)))[0])
                   for m in methods)
        raise CoopgenError(f"{prim}: takes at most {most} positional argument(s) here, got "
                           f"{len(args)} (overloads: {overloads})")
    given = ", ".join([str(a) for a in args] + [f"{k}={v}" for k, v in call_kws.items()])
    lines = [f"{prim}: no overload matches ({given}). Overloads:"]
    lines += [f"  {m.signature}" for m in methods]
    if reasons or lacks_keyword:
        lines += ["Why each was rejected:", *(reasons + lacks_keyword)[:12]]
    raise CoopgenError("\n".join(lines))


def _check_temp_storage(prim: str, cls: ClassSpec, ty) -> None:
    if cls.temp_storage == "none":
        raise CoopgenError(f"{prim}: takes no temp_storage (CUB's {cls.name} has none)")
    if isinstance(ty, Storage):
        return
    if isinstance(ty, Array) and ty.space not in (None, "shared"):
        raise CoopgenError(f"{prim}: temp_storage={ty} is a thread's own array: each thread "
                           f"would get its own copy, but the threads share the storage, in "
                           f"shared memory: use cuda.shared.array(nbytes, np.uint8), "
                           f"coopgen.shared.array or a coopgen.TempStorage")
    if not isinstance(ty, Array) or ty.dtype != UINT8:
        raise CoopgenError(f"{prim}: temp_storage must be a coopgen.TempStorage or a uint8 "
                           f"array in shared memory (coopgen.shared.array(nbytes, np.uint8)), "
                           f"got {ty}")


def _bind(prim, cls, method, args, kws, positional, skipped, template_kws, block_dims, enums,
          warp_default, pinned=None) -> Plan:
    att = Attempt(prim, cls, method)
    index = {p.name: i for i, p in enumerate(method.params)}
    # parameter -> (index among the call's arguments, description)
    given = {i: (pos, args[pos]) for pos, i in enumerate(positional)}
    given.update({index[name]: (len(args) + k, ty) for k, (name, ty) in enumerate(kws.items())})
    bindings: list = [None] * len(method.params)
    temp_storage = "none"
    # Arrays first: they fix the dtypes; a scalar of another width is then converted to it,
    # as C++ would convert the argument (a scalar alone decides its type parameter).
    for i in sorted(range(len(method.params)),
                    key=lambda i: method.params[i].role in ("input_scalar", "count")):
        p = method.params[i]
        if i in skipped:
            omitted_output = p.role in OMITTABLE_OUTPUTS
            bindings[i] = Binding(p, "return" if omitted_output else "default", None, None, "")
        else:
            bindings[i] = _bind_param(att, p, given[i][1], given[i][0])
        if p.role == "temp_storage":
            temp_storage = "implicit" if i in skipped else "explicit"
    if temp_storage == "none" and cls.temp_storage != "none":
        temp_storage = "implicit"
    operators = tuple(b.operator for b in bindings if b.operator is not None)

    # Template arguments: dtypes and extents from the arguments, the rest from keywords.
    targs, block = template_args(att, cls, template_kws, block_dims, enums, warp_default, pinned)
    check_limits(prim, cls, method, targs, block, operators)
    # Omitted outputs are returned: their dtype is now known.
    returns = []
    for i, b in enumerate(bindings):
        if b.source == "return":
            dt = _dtype_of(att, b.param.base, b.param.name)
            bindings[i] = Binding(b.param, "return", None, dt, cpp.ctype(dt, prim, b.param.name))
            returns.append((b.param.name, dt, bindings[i].ctype))
    if method.returns not in ("void", ""):
        dt = _dtype_of(att, method.returns)
        returns.insert(0, ("return", dt, cpp.ctype(dt, prim, "return value")))
    method_extents = tuple((name, n) for name, (n, _) in sorted(att.extents.items())
                           if name not in {t.name for t in cls.template_params})
    plan = Plan(cls, method, tuple(bindings), targs, method_extents, tuple(returns), block,
                temp_storage, operators)
    try:
        check_operators(prim, plan)
    except CoopgenError as e:  # definite, but another overload may still match
        raise Mismatch(str(e)) from None
    return plan


def _pointer_elem(att: Attempt, p: PSpec, ty):
    """The item type of an array passed for a pointer role, checked against the parameter."""
    role = p.role
    if role in ARRAY_ROLES or role in RANGE_ROLES:
        elem = _per_thread_array(att, p, ty)
        if role in RANGE_ROLES:
            if ty.length is None:
                raise Mismatch(f"{att.prim}: {p.name} must have a compile-time length: "
                               f"allocate it with coopgen.local.array(n, dtype) or "
                               f"coopgen.shared.array")
            # CUB wants the range's elements to be the class's value type.
            att.need_dtype(att.cls.value_type.name, elem, p.name)
        else:
            att.need_dtype(p.base, elem, p.name)
        if ty.length is not None and p.extent:
            att.need_extent(p.extent, ty.length, f"array {p.name!r}")
        return elem
    elem = _elem(ty)
    if role in OMITTABLE_OUTPUTS:
        if elem is None:
            raise NoMatch(f"{p.name!r} is an output: pass a 1-element array or omit it")
        if ty.length == 0:  # a longer array gets the value in its first element
            raise NoMatch(f"{p.name!r} is a scalar output: pass a 1-element array or omit it, "
                          f"not {ty}")
        att.need_dtype(p.base, elem, p.name)
        return elem
    if elem is None:
        raise NoMatch(f"{p.name!r} must be a device array, got {ty}")
    _contiguous(att, p, ty)
    if role == "memory_inout":
        att.need_dtype(p.base.split("[")[0].strip(), elem, p.name)
        extent = p.type.rsplit("[", 1)[1].rstrip("]") if "[" in p.type else None
        if extent and ty.length is not None:
            att.need_extent(extent, ty.length, f"array {p.name!r}")
    return elem


def _bind_param(att: Attempt, p: PSpec, ty, index: int) -> Binding:
    prim, role, ut = att.prim, p.role, unliteral(ty)
    if role in POINTER_ROLES:
        elem = _pointer_elem(att, p, ty)
        return Binding(p, "arg", index, ty, cpp.ctype(elem, prim, p.name) + "*")
    if role == "input_scalar":
        if not isinstance(ut, (Scalar, Struct)):
            raise NoMatch(f"{p.name!r} must be a scalar, got {ty}")
        known = att.dtypes.get(p.base)
        if known is not None and _is_number(ut) and _is_number(known):
            ut = known  # converted at the call, like a C++ argument
        else:
            att.need_dtype(p.base, ty, p.name)
        if cpp.by_pointer(ut):  # records, user types, half, complex, vectors: by pointer
            return Binding(p, "arg", index, ut, cpp.ctype(ut, prim, p.name) + "*")
        return Binding(p, "arg", index, ut, cpp.scalar_ctype(ut, prim, p.name))
    if role == "count":
        if not (isinstance(ut, Scalar) and ut.kind in ("int", "uint", "bool")):
            raise NoMatch(f"{p.name!r} must be an integer, got {ty}")
        return Binding(p, "arg", index, ut, cpp.scalar_ctype(ut, prim, p.name))
    if role in ("operator", "prefix_callback"):
        try:
            op = as_operator(prim, p, ty)
        except CoopgenError as e:  # definite, but another overload may still match
            raise Mismatch(str(e)) from None
        if op is None:
            raise NoMatch(f"{p.name!r} must be an operator, got {ty}")
        return Binding(p, "arg", index, ty, op.state_ctype, operator=op)
    if role == "temp_storage":
        if _elem(ty) is None:
            raise Mismatch(f"{prim}: temp_storage must be a shared uint8 array, got {ty}")
        return Binding(p, "arg", index, ty, "void*")
    raise NoMatch(f"role {role} of {p.name!r} is not bound")


def _dtype_of(att: Attempt, spelled: str, param: str = ""):
    name = spelled.replace("const ", "").replace("&", "").strip()
    if name in att.dtypes:
        return att.dtypes[name]
    fixed = cpp.FIXED_CPP_TYPES.get(name)
    if fixed is not None:
        return fixed
    given = (f": pass {param}= (a 1-element array of the dtype wanted)" if param
             else "; pass arrays whose dtype determines it")
    raise CoopgenError(f"{att.prim}: cannot infer the C++ type {name!r} of {param or 'the result'}"
                       f"{given}")
