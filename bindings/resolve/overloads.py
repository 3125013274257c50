"""Overload resolution: argument descriptions -> the plan of one CUB call. Arguments are
matched to each overload's parameters and roles and fix its dtypes and extents; all that can be
known before C++ is written is checked, and every error names the primitive and the parameter."""
import dataclasses
import itertools
import re

from ..model import registry
from ..model.errors import CoopgenError
from ..model.spec import ClassSpec, MSpec, PSpec
from ..types import cpp
from ..types.desc import UINT8, Array, Scalar, Storage, Struct, unliteral
from .limits import check_limits
from .operators import as_operator, check_operators
from .plan import (ARRAY_ROLES, OMITTABLE_OUTPUTS, RANGE_ROLES, Attempt, Binding, Mismatch,
                   NoMatch, Plan, plain_number)
from .shape import spelled_for
from .templates import template_args, template_keywords

#: Roles passed as a pointer to an array's first item.
POINTER_ROLES = (*ARRAY_ROLES, *RANGE_ROLES, *OMITTABLE_OUTPUTS, "iterator_in", "iterator_out",
                 "memory_inout")


def _omittable(p: PSpec) -> bool:
    return p.role in OMITTABLE_OUTPUTS or p.default is not None or p.role == "thread_rank"


def _slots(method: MSpec, kw_names: set[str]) -> tuple[list[int], list[int]]:
    """(parameters positional arguments may fill, the others no keyword names). As in Python,
    positional arguments fill parameters before the first keyword-named one; temp storage is
    only ever given as temp_storage=, never positionally."""
    params = method.params
    first_kw = min((i for i, p in enumerate(params) if p.name in kw_names), default=len(params))
    free = [i for i, p in enumerate(params) if p.role != "temp_storage" and p.name not in kw_names]
    return [i for i in free if i < first_kw], [i for i in free if i > first_kw]


def _assignments(method: MSpec, n_pos: int, kw_names: set[str]) -> tuple[list, tuple]:
    """Ways to map n positional args onto the overload's parameters (C++ order), each the
    parameters they fill (those neither filled nor named by keyword are left out); where there
    is none, why: ("missing", parameter), ("twice", parameter) or ("too_many", "")."""
    params = method.params
    before, after = _slots(method, kw_names)
    late = [params[i].name for i in after if not _omittable(params[i])]
    if n_pos <= len(before) and not late:
        omittable = [i for i in before if _omittable(params[i])]
        found = [[i for i in before if i not in skipped]
                 for skipped in itertools.combinations(omittable, len(before) - n_pos)]
        if found:
            return found, ()
    first_kw = next((p.name for p in params if p.name in kw_names), None)
    if n_pos > len(before) and first_kw is not None:
        return [], ("twice", first_kw)
    required = [params[i].name for i in before if not _omittable(params[i])]
    if len(required) > n_pos:
        return [], ("missing", required[n_pos])
    return [], ("missing", late[0]) if late else ("too_many", "")


def resolve(prim: str, cls: ClassSpec, methods: tuple[MSpec, ...], args: tuple, kws: dict, *,
            template_kws: dict, block_dims, temp_storage=None, pinned=(),
            alternatives: dict | None = None) -> Plan:
    """Pick the overload the call means and infer its template arguments. ``template_kws``:
    Python values (items_per_thread=16); ``pinned``: a constructed object's template arguments;
    ``alternatives``: a keyword's CUB spellings where overloads differ."""
    if temp_storage is not None:
        ty = temp_storage[1]
        if cls.temp_storage == "none":
            raise CoopgenError(f"{prim}: takes no temp_storage (CUB's {cls.name} has none)")
        if isinstance(ty, Array) and ty.space not in (None, "shared"):
            raise CoopgenError(f"{prim}: temp_storage={ty} is a thread's own array: each "
                               f"thread would get its own copy, but the threads share the "
                               f"storage, in shared memory: use cuda.shared.array(nbytes, "
                               f"np.uint8), coopgen.shared.array or a coopgen.TempStorage")
        if not isinstance(ty, Storage) and (not isinstance(ty, Array) or ty.dtype != UINT8):
            raise CoopgenError(f"{prim}: temp_storage must be a coopgen.TempStorage or a uint8 "
                               f"array in shared memory (coopgen.shared.array(nbytes, "
                               f"np.uint8)), got {ty}")
    known = {p.name for m in methods for p in m.params}
    alternatives = alternatives or {}
    unknown = sorted(k for k in kws if not known.intersection(alternatives.get(k, (k,))))
    if unknown:
        templates = "" if pinned else (f"; template keywords are "
                                       f"{', '.join(sorted(template_keywords(cls)))}")
        raise CoopgenError(f"{prim}: unknown keyword {unknown[0]!r}; parameters are "
                           f"{', '.join(sorted(known)) or '(none)'}{templates}")
    mismatches, reasons, lacks_keyword = [], [], []
    unassignable = {}  # "missing" / "twice" / "too_many" -> the first parameter concerned
    # Fewest C++ parameters first: ExclusiveSum(x) means (T, T&), not (T, T&, T&). Excluded
    # overloads (overrides.toml) last: a call that only they take is told why.
    # A free function's overload for a concrete value type (UpperBound(..., __half)) first
    def concrete(m) -> int:
        return -sum(p.role == "input_scalar" and p.base in cpp.FIXED_CPP_TYPES
                    for p in m.params) if cls.function else 0

    for method in sorted(methods, key=lambda m: (bool(m.excluded), len(m.params), concrete(m))):
        spelled = spelled_for(method, kws, alternatives)
        foreign = sorted(set(spelled) - {p.name for p in method.params})
        if foreign:  # a keyword of another overload
            lacks_keyword.append(f"  {method.signature}: has no parameter {foreign[0]!r}")
            continue
        candidates, why = _assignments(method, len(args), set(spelled))
        if why:
            unassignable.setdefault(*why)
        for positional in candidates:
            try:
                return _bind(Attempt(prim, cls, method), args, spelled, positional,
                             template_kws, block_dims, pinned, temp_storage)
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
        most = max(len(_slots(m, set(spelled_for(m, kws, alternatives)))[0]) for m in methods)
        raise CoopgenError(f"{prim}: takes at most {most} positional argument(s) here, got "
                           f"{len(args)} (overloads: {overloads})")
    given = ", ".join([str(a) for a in args] + [f"{k}={v}" for k, v in kws.items()])
    lines = [f"{prim}: no overload matches ({given}). Overloads:"]
    lines += [f"  {m.signature}" for m in methods]
    if reasons or lacks_keyword:
        lines += ["Why each was rejected:", *(reasons + lacks_keyword)[:12]]
    raise CoopgenError("\n".join(lines))


def _bind(att: Attempt, args, kws, positional, template_kws, block_dims, pinned,
          temp_storage) -> Plan:
    prim, cls, method, params = att.prim, att.cls, att.method, att.method.params
    index = {p.name: i for i, p in enumerate(params)}
    # parameter -> (index among the call's arguments, description)
    given = {i: (pos, args[pos]) for pos, i in enumerate(positional)}
    given.update({index[name]: (len(args) + k, ty) for k, (name, ty) in enumerate(kws.items())})
    bindings: list = [None] * len(params)
    # Arrays first: they fix the dtypes; a scalar of another width is then converted to it,
    # as C++ would convert the argument (a scalar alone decides its type parameter).
    for i in sorted(range(len(params)), key=lambda i: params[i].role in ("input_scalar", "count")):
        p = params[i]
        if i in given and p.role != "temp_storage":
            bindings[i] = _bind_param(att, p, given[i][1], given[i][0])
            if cls.function and p.role == "iterator_out":
                # a value stored through it takes its item type (ThreadStore writes a T)
                for x in (x for x in params if x.role == "input_scalar"):
                    att.dtypes.setdefault(x.base, bindings[i].type.dtype)
        else:
            source = "return" if p.role in OMITTABLE_OUTPUTS else "default"
            bindings[i] = Binding(p, source, None, None, "")
    operators = tuple(b.operator for b in bindings if b.operator is not None)
    targs, block = template_args(att, cls, template_kws, block_dims, registry.enums(), pinned)
    check_limits(prim, cls, method, targs, block, operators)
    # Omitted outputs are returned: their dtype is now known.
    returns = []
    for i, b in enumerate(bindings):
        if b.source == "return":
            dt = _dtype_of(att, b.param.base, b.param.name)
            bindings[i] = dataclasses.replace(b, type=dt, ctype=cpp.ctype(dt, prim, b.param.name))
            returns.append((b.param.name, dt, bindings[i].ctype))
    if method.returns not in ("void", ""):
        dt = _dtype_of(att, method.returns)
        returns.insert(0, ("return", dt, cpp.ctype(dt, prim, "return value")))
    method_extents = tuple((name, n) for name, (n, _) in sorted(att.extents.items())
                           if name not in {t.name for t in cls.template_params})
    implicit = cls.temp_storage != "none" or any(p.role == "temp_storage" for p in params)
    plan = Plan(cls, method, tuple(bindings), targs, method_extents, tuple(returns), block,
                "explicit" if temp_storage is not None else "implicit" if implicit else "none",
                operators, temp_storage)
    try:
        check_operators(prim, plan)
    except CoopgenError as e:  # definite, but another overload may still match
        raise Mismatch(str(e)) from None
    if method.excluded:
        raise CoopgenError(f"{prim}: {method.signature} is not bound: {method.excluded}")
    return plan


def _pointer_elem(att: Attempt, p: PSpec, ty):
    """The item type of an array passed for a pointer role, checked against the parameter."""
    role, elem = p.role, ty.dtype if isinstance(ty, Array) else None
    if role in OMITTABLE_OUTPUTS:
        if elem is None:
            raise NoMatch(f"{p.name!r} is an output: pass a 1-element array or omit it")
        if ty.length == 0:  # a longer array gets the value in its first element
            raise NoMatch(f"{p.name!r} is a scalar output: pass a 1-element array or omit it, "
                          f"not {ty}")
        att.need_dtype(p.base, elem, p.name)
        return elem
    per_thread = role in ARRAY_ROLES or role in RANGE_ROLES  # C++'s T (&)[N]
    if elem is None:
        raise NoMatch(f"{p.name!r} must be {'an' if per_thread else 'a device'} array, got {ty}")
    if per_thread and ty.ndim != 1:
        raise Mismatch(f"{att.prim}: {p.name} must be a 1-D array (C++ {p.type}), got {ty} "
                       f"with {ty.ndim} dimensions")
    if not ty.contiguous:  # CUB reads a strided view through a pointer as if contiguous
        raise Mismatch(f"{att.prim}: {p.name} must be a contiguous array (CUB reads it through "
                       f"a pointer), got {ty}, a view that may be strided; pass a contiguous "
                       f"array or slice")
    extent = p.extent if per_thread else None
    if role in RANGE_ROLES:
        if ty.length is None:
            raise Mismatch(f"{att.prim}: {p.name} must have a compile-time length: allocate it "
                           f"with coopgen.local.array(n, dtype) or coopgen.shared.array")
        # CUB wants the range's elements to be the class's value type (a free function's
        # range is its own: ThreadReduce's Input)
        att.need_dtype(att.cls.value_type.name if att.cls.value_type else p.base, elem, p.name)
    elif role == "memory_inout":
        att.need_dtype(p.base.split("[")[0].strip(), elem, p.name)
        extent = p.type.rsplit("[", 1)[1].rstrip("]") if "[" in p.type else None
    elif per_thread:
        att.need_dtype(p.base, elem, p.name)
    elif att.cls.function and p.base.endswith("*"):  # T* pointers: C++ deduces one T
        att.need_dtype(p.base.rstrip(" *"), elem, p.name)
    elif att.cls.function:  # the iterator's value type (it_value_t<RandomAccessIterator>)
        att.dtypes.setdefault(p.base, elem)
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
        if known is not None and plain_number(ut) and plain_number(known):
            ut = known  # a number is converted at the call, like a C++ argument
        else:
            att.need_dtype(p.base, ty, p.name)
            if plain_number(ut):  # ... also to a type a later argument or keyword names
                att.converted.add(p.base)
        # records, user types, half, complex and vectors go by pointer
        ctype = (cpp.ctype(ut, prim, p.name) + "*" if cpp.by_pointer(ut)
                 else cpp.scalar_ctype(ut, prim, p.name))
        return Binding(p, "arg", index, ut, ctype)
    if role in ("count", "thread_rank"):
        if not (isinstance(ut, Scalar) and ut.kind in ("int", "uint", "bool")):
            raise NoMatch(f"{p.name!r} must be an integer, got {ty}")
        if att.cls.function and p.base in att.method.tparams:  # LowerBound's OffsetT
            att.need_dtype(p.base, ut, p.name)
        return Binding(p, "arg", index, ut, cpp.scalar_ctype(ut, prim, p.name))
    if role in ("operator", "prefix_callback"):
        try:
            op = as_operator(prim, p, ty)
        except CoopgenError as e:  # definite, but another overload may still match
            raise Mismatch(str(e)) from None
        if op is None:
            raise NoMatch(f"{p.name!r} must be an operator, got {ty}")
        return Binding(p, "arg", index, ty, "void*" if op.state is not None else "", operator=op)
    raise NoMatch(f"role {role} of {p.name!r} is not bound")


def _dtype_of(att: Attempt, spelled: str, param: str = ""):
    name = spelled.replace("const ", "").replace("&", "").strip()
    # the value type of an iterator or range argument: that argument's item dtype
    name = re.sub(r"^(?:::)?(?:cub::)?(?:detail::)?it_value_t<\s*(\w+)\s*>$", r"\1", name)
    dt = att.dtypes.get(name) or cpp.FIXED_CPP_TYPES.get(name)
    if dt is not None:
        return dt
    given = (f": pass {param}= (a 1-element array of the dtype wanted)" if param
             else "; pass arrays whose dtype determines it")
    raise CoopgenError(f"{att.prim}: cannot infer the C++ type {name!r} of {param or 'the result'}"
                       f"{given}")
