"""Overload resolution and template-argument inference: numba argument types -> one CUB call.

This is the rewrite layer DESIGN.md describes, kept to one module: it picks the overload a
Python call means, infers dtypes, items per thread, block shape, bins and enum values from the
argument types and launch configuration, and checks everything it can at compile time. Every
error names the primitive and the parameter.
"""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field

from numba.cuda import types

from . import ctypes_map
from .arrays import static_length
from .errors import CoopgenTypeError
from .operators import Operator, as_operator
from .spec import ClassSpec, MSpec, PSpec, TParam

ARRAY_ROLES = ("input_array", "output_array", "inout_array")
#: Ranges: any indexable of compile-time size in C++; a coopgen local/shared array here.
RANGE_ROLES = ("range_input", "range_output")
#: Template keywords that items_per_thread= also sets (BlockRadixRank calls it keys).
PER_THREAD_KEYWORDS = ("items_per_thread", "keys_per_thread")
OMITTABLE_OUTPUTS = ("output_scalar", "inout_scalar")



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


def _is_scalar(t) -> bool:
    return isinstance(t, (types.Number, types.Boolean, types.Record))


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


def _loose(name: str) -> bool:
    # Method template types deduced by C++ from each argument separately.
    return name in ("DefaultT", "OffsetT", "ValidFlag", "OutputT", "OutputType", "InputT")


def _candidate_assignments(method: MSpec, n_pos: int, kw_names: set[str]):
    """Ways to map n positional args onto the overload's parameters (C++ order)."""
    params = method.params
    # temp storage is only ever given as temp_storage=, never positionally
    free = [i for i, p in enumerate(params) if p.name not in kw_names and p.role != "temp_storage"]
    omittable = [i for i in free if params[i].role in OMITTABLE_OUTPUTS or
                 params[i].default is not None]
    always_skipped = {i for i, p in enumerate(params) if p.role == "temp_storage"}
    n_skip = len(free) - n_pos
    if n_skip < 0 or n_skip > len(omittable):
        return
    for skipped in itertools.combinations(omittable, n_skip):
        positional = [i for i in free if i not in skipped]
        yield positional, set(skipped) | always_skipped


def resolve(prim: str, cls: ClassSpec, methods: tuple[MSpec, ...], args: tuple,
            kws: dict, *, template_kws: dict, block_dims, enums: dict,
            warp_default: int = 32, temp_storage=None, pinned: dict | None = None) -> Resolved:
    """Pick the overload of ``methods`` that the call means and infer its template arguments.

    ``args``/``kws`` are numba types of the call's method arguments; ``template_kws`` holds
    literal Python values of template keywords (items_per_thread=16, algorithm="raking").
    """
    if temp_storage is not None:
        _check_temp_storage(prim, cls, temp_storage[1])
    kw_names = set(kws)
    known = {p.name for m in methods for p in m.params}
    unknown = kw_names - known
    if unknown:
        raise CoopgenTypeError(
            f"{prim}: unknown keyword {sorted(unknown)[0]!r}; parameters are "
            f"{', '.join(sorted(known)) or '(none)'}; template keywords are "
            f"{', '.join(sorted(template_keywords(cls)))}")
    mismatches, reasons, missing = [], [], []
    # Fewest C++ parameters first: ExclusiveSum(x) means (T, T&), not (T, T&, T&).
    for method in sorted(methods, key=lambda m: len(m.params)):
        candidates = list(_candidate_assignments(method, len(args), kw_names))
        if not candidates:
            needed = [p.name for p in method.params if p.name not in kw_names and
                      p.role not in OMITTABLE_OUTPUTS + ("temp_storage",) and p.default is None]
            if len(needed) > len(args):
                missing.append(needed[len(args)])
        for positional, skipped in candidates:
            try:
                r = _bind(prim, cls, method, args, kws, positional, skipped, template_kws,
                          block_dims, enums, warp_default, pinned)
                if temp_storage is not None:
                    r = dataclasses.replace(r, temp_storage="explicit",
                                            temp_storage_arg=temp_storage)
                return r
            except _Mismatch as e:
                mismatches.append(str(e))
            except _NoMatch as e:
                reasons.append(f"  {method.signature}: {e}")
    if mismatches:
        raise CoopgenTypeError(mismatches[0])
    if missing and not reasons:
        raise CoopgenTypeError(f"{prim}: missing required argument {missing[0]!r} (overloads: "
                               f"{'; '.join(m.signature for m in methods)})")
    given = ", ".join([str(a) for a in args] + [f"{k}={v}" for k, v in kws.items()])
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
    if isinstance(ty, types.Array) and ty.dtype == types.uint8 and not (
            isinstance(ty, SizedArray) and ty.space == "shared"):
        raise CoopgenTypeError(f"{prim}: temp_storage {ty} may be misaligned: a numba "
                               f"cuda.shared.array of uint8 is only 1-byte aligned. Use "
                               f"coopgen.shared.array(nbytes, np.uint8) (16-byte aligned) or a "
                               f"coopgen.TempStorage")
    if not isinstance(ty, types.Array) or ty.dtype != types.uint8:
        raise CoopgenTypeError(f"{prim}: temp_storage must be a coopgen.TempStorage or a uint8 "
                               f"array in shared memory (coopgen.shared.array(nbytes, np.uint8)), "
                               f"got {ty}")


def template_keywords(cls: ClassSpec) -> set[str]:
    kws = {t.keyword for t in cls.template_params}
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
    arg_of = {}
    for pos, i in enumerate(positional):
        arg_of[i] = pos
    order = list(kws)
    for name in order:
        idx = next(i for i, p in enumerate(method.params) if p.name == name)
        arg_of[idx] = len(args) + order.index(name)
    all_args = tuple(args) + tuple(kws[k] for k in order)

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
        ty = all_args[arg_of[i]]
        b = _bind_param(att, p, ty, arg_of[i])
        if p.role == "temp_storage":
            temp_storage = "explicit"
        if b.operator is not None:
            operators.append(b.operator)
        bindings[i] = b

    # Template arguments: dtypes and extents from the arguments, the rest from keywords.
    template_args, block = _template_args(att, cls, template_kws, block_dims, enums,
                                          warp_default, pinned)
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
    method_extents = tuple((name, n) for name, (n, _) in sorted(att.extents.items())
                           if name not in {t.name for t in cls.template_params})
    return Resolved(cls, method, tuple(final), template_args, method_extents, tuple(returns),
                    block, temp_storage, tuple(operators))


def _bind_param(att: _Attempt, p: PSpec, ty, index: int) -> Binding:
    prim = att.prim
    role = p.role
    if role in ARRAY_ROLES:
        elem = _array_elem(ty)
        if elem is None:
            raise _NoMatch(f"{p.name!r} must be an array, got {ty}")
        att.need_dtype(p.base, elem, p.name)
        n = static_length(ty)
        if n is not None and p.extent:
            att.need_extent(p.extent, n, f"array {p.name!r}")
        return Binding(p, "arg", index, ty, ctypes_map.ctype(elem, prim, p.name) + "*")
    if role in RANGE_ROLES:
        elem, n = _array_elem(ty), static_length(ty)
        if elem is None:
            raise _NoMatch(f"{p.name!r} must be an array, got {ty}")
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
        if isinstance(ut, types.Record):  # numba holds records by pointer: pass it so
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
    block = None
    if any(t.keyword == "block_dim_x" for t in cls.template_params) or cls.scope == "block":
        block = _block_dims(prim, given.pop("threads_per_block", None), block_dims)
    else:
        tpb = given.pop("threads_per_block", None)
        block = _block_dims(prim, tpb, block_dims) if (tpb or block_dims) else None
    if "threads_in_warp" in given:
        given["logical_warp_threads"] = given.pop("threads_in_warp")
    first_type = cls.value_type
    if "dtype" in given and first_type is not None:
        given[first_type.keyword] = given.pop("dtype")
    _apply_items_per_thread(att, cls, given.pop("items_per_thread", None))
    for t in cls.template_params:
        kwv = given.pop(t.keyword, None)
        if t.keyword in ("block_dim_x", "block_dim_y", "block_dim_z") and block is not None:
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
            if kwv is not None and int(kwv) != att.extents[t.name][0]:
                raise _Mismatch(f"{prim}: {t.keyword}={kwv} disagrees with "
                                f"{att.extents[t.name][1]} ({att.extents[t.name][0]} items)")
            continue
        if t.keyword == "logical_warp_threads":
            n = int(kwv) if kwv is not None else warp_default
            if not 1 <= n <= 32:
                raise _Mismatch(f"{prim}: logical_warp_threads={n} is not allowed; CUB takes "
                                f"1 to 32 threads per logical warp")
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
        ipt = int(ipt)
        for e in sorted(targets):
            if e in att.extents and att.extents[e][0] != ipt:
                raise _Mismatch(f"{att.prim}: items_per_thread={ipt} disagrees with "
                                f"{att.extents[e][1]} ({att.extents[e][0]} items)")
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
    if isinstance(dims, int):
        dims = (dims, 1, 1)
    dims = tuple(int(d) for d in dims) + (1,) * (3 - len(tuple(dims)))
    if len(dims) != 3 or any(d < 1 for d in dims):
        raise _Mismatch(f"{prim}: threads_per_block={tpb!r} must be an int or a 2-/3-tuple "
                        f"of positive ints")
    if dims[0] * dims[1] * dims[2] > 1024:
        raise _Mismatch(f"{prim}: threads_per_block={dims} has {dims[0] * dims[1] * dims[2]} "
                        f"threads; CUDA allows at most 1024 per block")
    return dims


def class_template_args(prim: str, cls: ClassSpec, template_kws: dict, enums: dict):
    """Template arguments of ``cls`` from keywords alone (two-phase objects on the host)."""
    from .spec import MSpec

    att = _Attempt(prim, cls, MSpec("", "", "method", "void", ()))
    try:
        return _template_args(att, cls, dict(template_kws), None, enums, 32)[0]
    except _Mismatch as e:
        raise CoopgenTypeError(str(e)) from None
