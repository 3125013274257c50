"""Combinations CUB accepts but does not handle (generator/data/limits.toml, found by the
differential suite): refused at compile time with the reason. :func:`refusal` asks these checks
and the operators' about one item type: the supported-types table is made of its answers."""
from ..model import registry
from ..model.errors import CoopgenError
from ..model.spec import PSpec
from ..types.cpp import CPP_OF, KIND_OF_CPP, ctype
from ..types.desc import Array
from .operators import BUILTINS, check_operators
from .plan import Binding, Mismatch, Plan


def check_limits(prim, cls, method, template_args, block, operators, limits=None) -> None:
    """Refuse a combination the limits table (generator/data/limits.toml, or ``limits``) says
    CUB does not handle: every condition of a limit must hold."""
    args = {t.keyword: v.removeprefix("cub::") for t, v in template_args}
    names = {p.name for p in method.params}
    for lim in getattr(registry.package(), "LIMITS", ()) if limits is None else limits:
        if lim.cls != cls.name or (lim.methods and method.name not in lim.methods) \
                or any(args.get(kw) != value for kw, value in lim.template) \
                or any(kw not in args or int(args[kw]) >= least for kw, least in lim.below) \
                or names & set(lim.without):
            continue
        why = [f"{kw}={value}" for kw, value in lim.template]
        why += [f"{kw}={args[kw]} (< {least})" for kw, least in lim.below]
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
        if lim.item_kinds:
            items = dict((t.name, v) for t, v in template_args).get(
                cls.value_type.name if cls.value_type else "")
            dtypes = [n for n, c in CPP_OF.items() if c == items]
            if items is None or not {KIND_OF_CPP.get(items, "struct"), *dtypes} \
                    & set(lim.item_kinds):
                continue
            why.append(f"items of {dtypes[0] if dtypes else 'a struct type'}")
        raise Mismatch(f"{prim}: {', '.join(why)} is not supported: {lim.reason}")


def refusal(prim, cls, method, dtype, operators=(), template=(), limits=None) -> str | None:
    """The error a call of ``method`` on items of ``dtype`` meets in the checks every call
    passes (check_limits, check_operators), or None. ``operators`` (Operator values),
    ``template`` ((TParam, C++ argument) pairs) and ``limits`` stand for the rest of the call."""
    items = cls.value_type
    targs = ((items, ctype(dtype, prim, "items")),) + tuple(template)
    bindings = (Binding(PSpec("items", "input_array", items.name, items.name, None, None),
                        "arg", 0, Array(dtype), ""),)
    bindings += tuple(Binding(PSpec(op.param, "operator", op.kind, op.kind, None, None), "arg",
                              i + 1, None, "", op) for i, op in enumerate(operators))
    try:
        check_limits(prim, cls, method, targs, None, operators, limits)
        check_operators(prim, Plan(cls, method, bindings, targs, (), (), None, "none",
                                   tuple(operators)))
    except (CoopgenError, Mismatch) as e:
        return str(e)
    return None
