"""Template arguments of a call: dtypes and extents the arguments gave, the block shape and
logical warp size, and the keywords' values (enums, booleans, counts), each checked."""
import enum
import math
import re

from ..model.errors import CoopgenError
from ..model.spec import ClassSpec, MSpec
from ..types import cpp
from .shape import selector_value
from .plan import BLOCK_DIM_KEYWORDS, PER_THREAD_KEYWORDS, Attempt, Mismatch


def whole_number(prim: str, keyword: str, value, low: int, high: int | None = None) -> int:
    """A template keyword's integer value, checked against [low, high]."""
    if not cpp.is_whole(value) or value < low or (high is not None and value > high):
        allowed = f"from {low} to {high}" if high is not None else f"of at least {low}"
        raise Mismatch(f"{prim}: {keyword}={value!r} is not allowed; it takes an integer {allowed}")
    return int(value)


def template_keywords(cls: ClassSpec) -> set[str]:
    kws = {t.keyword for t in cls.template_params if t.keyword}  # "": internal
    kws |= {"items_per_thread", "temp_storage", "threads_per_block"}
    kws |= {"dtype"} if cls.value_type is not None else set()
    kws |= {t.keyword for m in cls.methods for t in m.keywords}
    return kws | ({"threads_in_warp"} if "logical_warp_threads" in kws else set())


def template_args(att: Attempt, cls: ClassSpec, kw: dict, block_dims, enums, pinned=()):
    """C++ template arguments, in order. ``pinned`` holds those of a constructed object whose
    method is being called: they are fixed, and arguments that imply others are an error."""
    prim = att.prim
    if pinned:
        pinned = {t.name: v for t, v in pinned}
        for t in cls.template_params:
            mine = (cpp.ctype(att.dtypes[t.name], prim, t.name)
                    if t.kind == "type" and t.name in att.dtypes
                    else str(att.extents[t.name][0]) if t.name in att.extents else pinned[t.name])
            if mine != pinned[t.name]:
                raise Mismatch(f"{prim}: the arguments give {t.name} = {mine}, but the "
                               f"{cls.name} object was built with {t.name} = {pinned[t.name]}")
        return tuple((t, pinned[t.name]) for t in cls.template_params), block_dims
    given = dict(kw)
    use_alias(prim, given, "threads_in_warp", "logical_warp_threads")
    if cls.value_type is not None:
        use_alias(prim, given, "dtype", cls.value_type.keyword)
    dims = {k: given.pop(k) for k in BLOCK_DIM_KEYWORDS if k in given}
    if dims:  # CUB's spelling of the block shape
        if "threads_per_block" in given:
            raise Mismatch(f"{prim}: threads_per_block= and {'= and '.join(dims)}= both give "
                            f"the block shape; pass one")
        if "block_dim_x" not in dims:
            raise Mismatch(f"{prim}: {'= and '.join(dims)}= without block_dim_x=; pass "
                            f"threads_per_block=(x, y, z)")
        given["threads_per_block"] = tuple(dims.get(k, 1) for k in BLOCK_DIM_KEYWORDS)
    tpb = given.pop("threads_per_block", None)
    needs_block = cls.scope == "block" or any(t.keyword == "block_dim_x"
                                              for t in cls.template_params)
    block = block_dims_of(prim, tpb, block_dims) if needs_block or tpb or block_dims else None
    _apply_items_per_thread(att, cls, given.pop("items_per_thread", None))
    out = tuple((t, _template_arg(att, cls, t, given.pop(t.keyword, None), block, enums))
                for t in cls.template_params)
    for t in att.method.keywords:  # the method's own (is_full_tile=), explicit in the shim
        v = given.pop(t.keyword, None)
        if v is None:  # a free function's thread counts: the block's, a whole warp
            v = {"block_threads": math.prod(block) if block else None,
                 "logical_warp_threads": 32 if t.default is None else None}.get(t.keyword)
        elif t.keyword == "logical_warp_threads":
            v = whole_number(prim, t.keyword, v, 1, 32)
        if v is None and t.default is None:
            raise Mismatch(f"{prim}: missing required argument {t.keyword}= (template "
                           f"parameter {t.name} of {att.method.name})")
        spelled = t.default if v is None else cpp.template_value(prim, t, v, enums)
        if cls.function and spelled.startswith("detail::"):  # spelled outside namespace cub
            spelled = f"::cub::{spelled}"
        att.extents[t.name] = (spelled, f"{t.keyword}=")
    if given:
        k = sorted(given)[0]
        raise Mismatch(f"{prim}: unknown keyword {k!r}; template keywords are "
                        f"{', '.join(sorted(template_keywords(cls)))}")
    return out, block


def _template_arg(att: Attempt, cls: ClassSpec, t, kwv, block, enums) -> str:
    """The C++ spelling of template parameter ``t``; ``kwv`` its keyword's value, if given."""
    prim = att.prim
    if t.keyword in BLOCK_DIM_KEYWORDS and block is not None:
        return str(block["xyz".index(t.keyword[-1])])
    if t.kind == "type":
        # NullType is CUB's "none" (a keys-only sort's ValueT): an overload taking no such
        # argument keeps it, so an object made for pairs sorts keys alone when called so
        if kwv is not None and (t.default != "NullType"
                                or any(x.base == t.name for x in att.method.params)):
            att.need_dtype(t.name, cpp.as_dtype(kwv, prim, t.keyword), t.keyword)
        if t.name in att.dtypes:
            return cpp.ctype(att.dtypes[t.name], prim, t.keyword)
    elif t.name in att.extents:
        n, where = att.extents[t.name]
        if kwv is not None and whole_number(prim, t.keyword, kwv, 1) != n:
            raise Mismatch(f"{prim}: {t.keyword}={kwv} disagrees with {where} ({n} items)")
        return str(n)
    elif t.keyword == "logical_warp_threads":
        n = 32 if kwv is None else _warp_threads(prim, cls, t, kwv)
        if block is not None and math.prod(block) % n:
            raise Mismatch(f"{prim}: logical_warp_threads={n} does not divide the "
                           f"{math.prod(block)} threads of the block")
        return str(n)
    elif kwv is not None:
        return cpp.template_value(prim, t, kwv, enums)
    if t.default is None and t.kind == "type":
        raise Mismatch(f"{prim}: missing required argument: cannot infer template "
                       f"parameter {t.name} (pass {t.keyword}=)")
    if t.default is None:
        raise Mismatch(f"{prim}: missing required argument {t.keyword}= (template "
                       f"parameter {t.name})")
    return t.default


def _warp_threads(prim: str, cls: ClassSpec, t, value) -> int:
    n = whole_number(prim, "logical_warp_threads", value, 1, 32)
    if t.constraint == "power_of_two" and n & (n - 1):
        raise Mismatch(f"{prim}: logical_warp_threads={n} is not allowed; "
                       f"{cls.name} needs a power of two (1, 2, 4, 8, 16 or 32)")
    return n


def use_alias(prim: str, given: dict, alias: str, keyword: str) -> None:
    """``alias=`` stands for ``keyword=``; both at once is an error, not a silent choice."""
    if alias in given:
        if keyword in given and not same_value(given[alias], given[keyword]):
            raise Mismatch(f"{prim}: {alias}={given[alias]!r} and {keyword}={given[keyword]!r} "
                            f"name the same template parameter; pass one")
        given[keyword] = given.pop(alias)


def same_value(a, b) -> bool:
    """Template keyword values that mean the same (np.int32 and numba's int32 are one dtype)."""
    try:
        if bool(a == b):
            return True
    except (TypeError, ValueError):  # values that do not compare (arrays, odd types)
        pass
    if isinstance(a, (str, enum.Enum)) and isinstance(b, (str, enum.Enum)):
        return selector_value(a) == selector_value(b)  # an enum member and its name
    try:
        return cpp.as_dtype(a, "", "") == cpp.as_dtype(b, "", "")
    except (CoopgenError, TypeError, ValueError):
        return False


def _apply_items_per_thread(att: Attempt, cls: ClassSpec, ipt) -> None:
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
        ipt = whole_number(att.prim, "items_per_thread", ipt, 1)
        for e in sorted(targets):
            if e in att.extents and att.extents[e][0] != ipt:
                # ... in cuda.coop's words (block: "the array shape", warp: "array shape")
                the = "" if att.prim.startswith("warp.") else "the "
                raise Mismatch(f"{att.prim}: items_per_thread={ipt} disagrees with "
                                f"{att.extents[e][1]} ({att.extents[e][0]} items): "
                                f"coop.{att.prim} items_per_thread must match {the}array shape")
            att.extents.setdefault(e, (ipt, "items_per_thread="))
    for e in sorted(method_extents):
        if e not in att.extents:
            raise Mismatch(f"{att.prim}: cannot infer items_per_thread ({e}): allocate the "
                            f"array with coopgen.local.array(n, dtype) or pass items_per_thread=")
    # Extents of class constants (BINS_TRACKED_PER_THREAD) are checked by the shim.


def block_dims_of(prim: str, tpb, launch_dims):
    dims = tpb if tpb is not None else launch_dims
    if dims is None:
        raise Mismatch(f"{prim}: threads_per_block is unknown: launch the kernel "
                        f"(kernel[grid, block](...)) or pass threads_per_block=")
    given = dims if isinstance(dims, tuple) else (dims,)
    if not 1 <= len(given) <= 3 or not all(cpp.is_whole(d) and d >= 1 for d in given):
        raise Mismatch(f"{prim}: threads_per_block={dims!r} is not allowed; it takes a positive "
                        f"int or a 2- or 3-tuple of positive ints")
    dims = tuple(int(d) for d in given) + (1,) * (3 - len(given))
    if math.prod(dims) > 1024:
        raise Mismatch(f"{prim}: threads_per_block={dims} has {math.prod(dims)} "
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
        use_alias(prim, given, "threads_in_warp", "logical_warp_threads")
        if cls.value_type is not None:
            use_alias(prim, given, "dtype", cls.value_type.keyword)
        if "threads_per_block" in given:
            block_dims_of(prim, given.pop("threads_per_block"), None)
        if "items_per_thread" in given:
            whole_number(prim, "items_per_thread", given.pop("items_per_thread"), 1)
        for t in (t for t in cls.template_params if t.keyword in given):
            value = given[t.keyword]
            if t.kind == "type":
                cpp.as_dtype(value, prim, t.keyword)
            elif t.keyword == "logical_warp_threads":
                _warp_threads(prim, cls, t, value)
            elif t.keyword.endswith("per_thread"):  # items_per_thread, keys_per_thread, ...
                whole_number(prim, t.keyword, value, 1)
            else:
                cpp.template_value(prim, t, value, enums)
    except (Mismatch, CoopgenError) as e:
        raise ValueError(re.sub(r"\x1b\[[0-9;]*m", "", str(e))) from None  # no terminal colours


def class_template_args(prim: str, cls: ClassSpec, template_kws: dict, enums: dict):
    """Template arguments of ``cls`` from keywords alone (two-phase objects on the host)."""
    att = Attempt(prim, cls, MSpec("", "", "method", "void", ()))
    try:
        return template_args(att, cls, dict(template_kws), None, enums)[0]
    except Mismatch as e:
        raise CoopgenError(str(e)) from None
