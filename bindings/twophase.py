"""Two-phase use on the host: ``block.load(np.int32, 128, 4, "direct")`` -> an object for kernels.

The arguments follow the function's ``host`` order (cuda.coop's); template arguments become the
object's fixed keywords and method arguments (operators, initial values, bit ranges) are passed
by every call of the object. Bad values raise ``ValueError`` here, as cuda.coop does, rather
than at the first kernel compile.
"""
from __future__ import annotations

import re

from . import ctypes_map
from .model import registry
from .errors import CoopgenTypeError
from .operators import StatefulFunction
from .pythonic import CallShape, pick
from .resolve import check_host_keywords

#: Positional order of a function without a ``host`` row: cuda.coop's two leading arguments.
DEFAULT_HOST = {"block": ("dtype", "threads_per_block"), "warp": ("dtype", "threads_in_warp")}


def host_arguments(p, args: tuple, kws: dict) -> tuple[dict, dict]:
    """(template keywords, fixed call arguments) of a two-phase constructor call of ``p``."""
    shape = p.shape or CallShape(p.name, None)
    slots = p.host or DEFAULT_HOST[p.cls.scope]
    named = shape.with_slots(slots).name_arguments(tuple(args), dict(kws), error=TypeError)
    template_names = p.template_keywords() - {"temp_storage"}
    params = {x.name for ms in p.methods.values() for m in ms for x in m.params}
    fixed, call = dict(p.fixed), {}
    for name, value, _ in named:
        name = name if isinstance(name, str) else name[0]
        if name in template_names:
            fixed[name] = value
        elif isinstance(value, StatefulFunction):
            continue  # it declares the prefix callback whose state each call passes
        elif name in params or name in shape.bit_range_names():
            call[name] = as_operator_value(value)
        else:
            raise TypeError(f"{p.name}: unexpected argument {name!r} on the host; template "
                            f"keywords are {', '.join(sorted(template_names))}")
    for k, v in shape.defaults_for(set(fixed) | set(call)).items():
        fixed.setdefault(k, v)
    bit_range = {k: call[k] for k in shape.bit_range_names() if k in call}
    try:
        if bit_range:  # the template arguments the key bit range implies (radix_bits)
            fixed.update(shape.digit_arguments(bit_range)[0])
        check_template_values(p, fixed)
    except CoopgenTypeError as e:  # numba's error text carries terminal colours
        raise ValueError(re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip()) from None
    return fixed, call


def as_operator_value(value):
    """A plain Python function (an operator) is compiled as a device function, as it is when a
    kernel passes one (coopgen.rewrite); other values are kept."""
    import types as pytypes

    from .operators import device_function
    return device_function(value) if isinstance(value, pytypes.FunctionType) else value


def check_template_values(p, fixed: dict) -> None:
    """cuda.coop's host errors (raised as ValueError by host_arguments): items_per_thread < 1,
    an unknown algorithm or type, an unsupported dtype."""
    ipt = fixed.get("items_per_thread")
    if ipt is not None and (isinstance(ipt, bool) or not isinstance(ipt, int) or ipt < 1):
        raise CoopgenTypeError(f"{p.name}: items_per_thread={ipt!r} must be an integer >= 1")
    enums = registry.enums()
    for t in p.cls.template_params:
        if t.keyword in fixed and t.cpp_type in enums:
            ctypes_map.template_value(p.name, t, fixed[t.keyword], enums)
    if p.select and p.select in fixed:
        pick(p.name, p.select, list(p.methods), fixed[p.select])
    if "dtype" in fixed:
        ctypes_map.as_dtype(fixed["dtype"], p.name, "dtype")
    # the rest (block shape, logical warp size, per-thread counts, other dtypes, aliases)
    check_host_keywords(p.name, p.cls, fixed, registry.enums(),
                        also=(p.select,) if p.select else ())
