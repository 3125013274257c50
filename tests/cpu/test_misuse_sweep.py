"""Every entry point, wrong calls of every kind: each gets coopgen's compile-time error.

The entry points are read from the ``block`` and ``warp`` namespaces at test time (faithful
methods and constructors, Pythonic functions and object factories), and the wrong calls are
derived from each overload's spec: a valid call (the smoke kernels' arguments) is taken apart
one way at a time. Each wrong call is compiled for sm_90 and must fail in typing with a
CoopgenTypeError that names the primitive and the parameter, says what was given, and what is
allowed; no StopIteration, KeyError, IndexError, AssertionError or numba lowering error may
surface. Calls that may be valid (a keyword another overload has, storage CUB might not need)
may instead compile. Typing fails before any NVRTC compile of a kernel; only the explicit
storage checks read TempStorage sizes back from NVRTC (one compile per class).
"""
from __future__ import annotations

import importlib.util
import itertools
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from numba import cuda
from numba.cuda import types

import smoke
from coopgen import block, block_shape, warp
from coopgen.codegen import layout
from coopgen.model import registry
from coopgen.api.primitives import Primitive, PrimitiveClass
from coopgen.resolve.plan import OMITTABLE_OUTPUTS
from coopgen.resolve.templates import template_keywords
from coopgen.resolve.operators import ARITY
from coopgen.model.spec import OPERATOR_KINDS

SIG = (types.int32[::1], types.int32[::1], types.int32)
THREADS = smoke.THREADS
#: Exceptions that must never reach the user, nor numba's report of a failed compile.
INTERNAL = ("StopIteration", "KeyError", "IndexError", "AssertionError", "LoweringError",
            "AttributeError", "ValueError", "NvrtcError", "UnboundLocalError")

PRELUDE = smoke.PRELUDE + '''
DATETIME = np.dtype("datetime64[ns]")  # a dtype coopgen has no C++ type for

@cuda.jit(device=True)
def one_argument(a):
    return a


@cuda.jit(device=True)
def four_arguments(a, b, c, d):
    return a
'''


@dataclass
class Entry:
    """One callable name and one of its overloads, with a valid call of it."""
    prim: str  # how coopgen's errors name it
    cls: object
    method: object
    callee: str  # the expression called in the kernel
    setup: list[str]
    args: list[str]  # positional argument expressions, C++ order
    kws: list[str]  # template keywords ("name=value")
    template_level: bool  # template keywords may be passed (not a method of an object)
    selector: str | None = None
    #: Positional slots of a callable in cuda.coop's call shape (None: CUB's order). Its calls
    #: pass every argument by CUB's parameter name, which such callables also accept.
    slots: tuple | None = None
    #: Parameters the callable always passes itself (warp.max's operator): never given.
    fixed: frozenset = frozenset()


@dataclass
class Case:
    label: str
    entry: Entry
    call: str  # the wrong call
    expect: tuple[str, ...]  # substrings of the message besides the primitive's name
    setup: list[str] = field(default_factory=list)
    threads: int | tuple = THREADS
    may_compile: bool = False


def _one_shot(cls) -> bool:
    return any(all(p.role == "temp_storage" for p in c.params) for c in cls.constructors)


def _valid_call(cls, method, tag: str):
    setup, args = smoke.call_args(cls, method, tag)
    keep = [a for a, p in zip(args, method.params) if p.role != "temp_storage"]
    return setup, keep


def _template_kws(cls, method) -> list[str]:
    kws = smoke.template_kws(cls)
    return ((kws.split(", ") if kws else []) + smoke.dtype_kw(cls, method)
            + [f"{t.keyword}=True" for t in method.keywords])  # block_topk's is_full_tile=


def entries() -> list[Entry]:
    out = []
    for scope, ns in (("block", block), ("warp", warp)):
        for name in ns.__all__:
            obj = getattr(ns, name)
            if isinstance(obj, PrimitiveClass):
                cls = obj._cls
                for i, c in enumerate(cls.constructors):
                    if any(p.role == "temp_storage" for p in c.params):
                        continue  # the storage-taking form: temp_storage= of the other
                    setup, args = _valid_call(cls, c, f"c{i}")
                    out.append(Entry(f"{scope}.{cls.name}", cls, c, f"{scope}.{cls.name}",
                                     setup, args, _template_kws(cls, c), True))
                for i, m in enumerate(cls.methods):
                    setup, args = _valid_call(cls, m, str(i))
                    prim = f"{scope}.{cls.name}.{m.name}"
                    if _one_shot(cls):
                        out.append(Entry(prim, cls, m, prim, setup, args,
                                         _template_kws(cls, m), True))
                        continue
                    ctor = next(c for c in cls.constructors
                                if not any(p.role == "temp_storage" for p in c.params))
                    csetup, cargs = _valid_call(cls, ctor, "obj")
                    make = f"obj = {scope}.{cls.name}({', '.join(cargs + _template_kws(cls, ctor))})"
                    out.append(Entry(prim, cls, m, f"obj.{m.name}", csetup + [make] + setup,
                                     args, [], False))
            elif isinstance(obj, Primitive) and obj.constructor:  # an object factory
                cls = obj.cls
                methods = cls.overloads(obj.infer) if obj.infer else [
                    c for c in cls.constructors
                    if not any(p.role == "temp_storage" for p in c.params)]
                for i, m in enumerate(methods):
                    setup, args = _valid_call(cls, m, f"f{i}")
                    out.append(Entry(f"{scope}.{name}", cls, m, f"{scope}.{name}", setup, args,
                                     _template_kws(cls, m), True,
                                     slots=getattr(getattr(obj, "shape", None), "slots", None)))
            elif isinstance(obj, Primitive):
                for sel, methods in obj.methods.items():
                    for i, m in enumerate(methods):
                        setup, args = _valid_call(obj.cls, m, f"p{i}")
                        kws = _template_kws(obj.cls, m) + (
                            [f"{obj.select}={sel!r}"] if obj.select else [])
                        shape = getattr(obj, "shape", None)
                        out.append(Entry(f"{scope}.{name}", obj.cls, m, f"{scope}.{name}",
                                         setup, args, kws, True, selector=obj.select,
                                         slots=getattr(shape, "slots", None),
                                         fixed=frozenset(getattr(shape, "fixed", ()))))
    return out


def _call(e: Entry, args=None, kws=None) -> str:
    args = list(e.args if args is None else args)
    if e.slots is not None:  # by CUB's names
        names = [p.name for p in e.method.params if p.role != "temp_storage"]
        args = [f"{n}={a}" for n, a in zip(names, args) if n not in e.fixed]
    parts = args + list(e.kws if kws is None else kws)
    return f"{e.callee}({', '.join(parts)})"


def _positional(e: Entry):
    """(parameter, index into e.args) of the arguments the valid call passes."""
    params = [p for p in e.method.params if p.role != "temp_storage"]
    return [(p, i) for p, i in zip(params, range(len(e.args))) if p.name not in e.fixed]


# --- wrong calls that depend on the overload's parameters ----------------------------------

def parameter_cases(e: Entry, siblings: list[Entry]) -> list[Case]:
    cases = [Case("unknown keyword", e, _call(e, kws=e.kws + ["bogus_keyword=1"]),
                  ("'bogus_keyword'",))]
    cases += [Case(f"{name} given to a callable that fixes it", e,
                   _call(e, kws=e.kws + [f'{name}="+"']), (f"{name}=", "always passes"))
              for name in sorted(e.fixed)]
    pos = _positional(e)
    if pos and e.slots is None:
        p, i = pos[0]
        cases.append(Case(f"{p.name} given twice", e,
                          _call(e, kws=e.kws + [f"{p.name}={e.args[i]}"]),
                          (repr(p.name),)))
    if e.slots is None:
        cases.append(Case("too many positional", e, _call(e, args=e.args + ["n"] * 6),
                          ("positional",)))
    else:
        cases.append(Case("too many positional", e, f"{e.callee}({', '.join(['n'] * (len(e.slots) + 1))})",
                          ("positional",)))
    mine = {p.name for p in e.method.params}
    for other in siblings:
        for p, i in _positional(other):
            if p.name not in mine and p.role != "temp_storage":
                cases.append(Case(f"keyword {p.name} of another overload", e,
                                  _call(e, kws=e.kws + [f"{p.name}={other.args[i]}"]),
                                  (), setup=other.setup, may_compile=True))
                mine.add(p.name)
    arrays = [(p, i) for p, i in pos if p.role in ("input_array", "output_array", "inout_array")]
    for p, i in arrays:
        n = smoke.BINS_PER_THREAD if p.extent and "BINS" in p.extent else smoke.ITEMS
        two_d = f"bad2d_{p.name} = local.array((1, {n}), np.int32)"
        args = list(e.args)
        args[i] = f"bad2d_{p.name}"
        cases.append(Case(f"2-D {p.name}", e, _call(e, args=args), (p.name, "1-D"),
                          setup=[two_d]))
        args = list(e.args)
        args[i] = "d_in[0]"
        # Another overload may take a scalar there (BlockReduce.Sum(T) and Sum(T (&)[N])).
        cases.append(Case(f"scalar for array {p.name}", e, _call(e, args=args),
                          () if siblings else (p.name,), may_compile=bool(siblings)))
        args = list(e.args)
        args[i] = f"cplx_{p.name}"
        cases.append(Case(f"datetime {p.name}", e, _call(e, args=args), (p.name, "datetime64"),
                          setup=[f"cplx_{p.name} = local.array({n}, DATETIME)"]))
    same_type = {}
    for p, i in arrays:
        same_type.setdefault(p.base, []).append((p, i))
    for base, group in same_type.items():
        if len(group) < 2 or base not in ("T", "KeyT", "ValueT", "InputT"):
            continue
        p, i = group[-1]
        n = smoke.ITEMS
        args = list(e.args)
        args[i] = f"other_{p.name}"
        dt = "np.float64" if base != "ValueT" else "np.int16"
        cases.append(Case(f"dtype of {p.name}", e, _call(e, args=args),
                          (p.name, dt.split(".")[1]),
                          setup=[f"other_{p.name} = local.array({n}, {dt})"]))
    for p, i in pos:
        if p.role in ("iterator_in", "iterator_out"):
            args = list(e.args)
            args[i] = f"{e.args[i]}[::2]"
            cases.append(Case(f"strided {p.name}", e, _call(e, args=args),
                              (p.name, "contiguous")))
        if p.role == "input_scalar":
            args = list(e.args)
            args[i] = "d_in"
            # Another overload may take an array there: the error may be about its parameters.
            cases.append(Case(f"array for scalar {p.name}", e, _call(e, args=args), (),
                              may_compile=bool(siblings)))
        if p.role == "operator" and p.base in OPERATOR_KINDS and p.base != "DecomposerT":
            for fn in ("one_argument", "four_arguments")[1 in ARITY[p.base]:]:
                args = list(e.args)
                args[i] = fn
                cases.append(Case(f"{fn} as {p.name}", e, _call(e, args=args),
                                  (p.name, fn, "takes")))
            args = list(e.args)
            args[i] = '"nope"'
            cases.append(Case(f"unknown operator name {p.name}", e, _call(e, args=args),
                              (p.name, "'nope'")))
        if p.role == "operator" and p.base == "DecomposerT":
            args = list(e.args)
            args[i] = '("a", "nope")'
            cases.append(Case("decomposer field", e, _call(e, args=args), (p.name, "'nope'")))
        if p.role == "prefix_callback":
            args = list(e.args)
            args[i] = f"(four_arguments, {e.args[i][1:-1].split(', ')[1]})"
            cases.append(Case(f"four_arguments as {p.name}", e, _call(e, args=args),
                              (p.name, "four_arguments", "takes")))
    return cases


# --- wrong template keywords and storage: once per callable name ---------------------------

#: The template-level wrong calls every callable name gets; the rest once per class and surface.
CORE = ("runtime items_per_thread", "2048 threads", "1-byte shared temp storage",
        "template keyword on an object's method")


def template_cases(e: Entry, full: bool = True) -> list[Case]:
    cases = _template_cases(e)
    return cases if full else [c for c in cases if c.label in CORE or c.label.startswith(
        "unknown ") and c.label != "unknown keyword"][:len(CORE) + 1]


def _template_cases(e: Entry) -> list[Case]:
    if not e.template_level:
        return [Case("template keyword on an object's method", e,
                     _call(e, kws=["items_per_thread=4"]), ("'items_per_thread'",))]
    cls = e.cls
    kws = template_keywords(cls)
    cases = []

    def with_kw(label, kw, value, expect, **extra):
        rest = [k for k in e.kws if not k.startswith(kw + "=")]
        cases.append(Case(label, e, _call(e, kws=rest + [f"{kw}={value}"]), expect, **extra))

    for t in cls.template_params:
        enum = registry.enums().get(t.cpp_type)
        if enum is not None:
            with_kw(f"unknown {t.keyword}", t.keyword, '"nope"', (t.keyword, "'nope'", "allowed"))
            with_kw(f"runtime {t.keyword}", t.keyword, "n", (t.keyword, "compile-time constant"))
    for kw, bad in (("items_per_thread", "0"), ("items_per_thread", '"four"'),
                    ("items_per_thread", "2.5"), ("threads_per_block", "0"),
                    ("threads_per_block", '"many"'), ("threads_per_block", "(1, 2, 3, 4)"),
                    ("threads_per_block", "(64, 32)")):
        expect = ("1024",) if bad == "(64, 32)" else (kw,)
        with_kw(f"{kw}={bad}", kw, bad, expect)
    with_kw("runtime items_per_thread", "items_per_thread", "n",
            ("items_per_thread", "compile-time constant"))
    with_kw("runtime threads_per_block", "threads_per_block", "n",
            ("threads_per_block", "compile-time constant"))
    if e.selector:
        with_kw(f"unknown {e.selector}", e.selector, '"nope"', (e.selector, "'nope'", "allowed"))
        with_kw(f"runtime {e.selector}", e.selector, "n", (e.selector,))
    if "logical_warp_threads" in kws:
        power = any(t.constraint == "power_of_two" for t in cls.template_params)
        for bad in ("0", "33", "64", '"x"', "True") + (("12",) if power else ()):
            with_kw(f"logical_warp_threads={bad}", "logical_warp_threads", bad,
                    ("logical_warp_threads",))
    block_level = cls.scope == "block" or cls.temp_storage != "none"
    cases.append(Case("2048 threads", e, _call(e, kws=[k for k in e.kws
                                                       if not k.startswith("threads_per_block=")]),
                      ("1024",), threads=2048, may_compile=not block_level))
    for a, b in (("dtype", "t"), ("threads_in_warp", "logical_warp_threads"),
                 ("items_per_thread", "keys_per_thread"), ("threads_per_block", "block_dim_x")):
        if a in kws and b in kws:
            rest = [k for k in e.kws if k.split("=")[0] not in (a, b)]
            values = ("np.int32", "np.int16") if a == "dtype" else ("4", "8")
            cases.append(Case(f"{a} and {b}", e,
                              _call(e, kws=rest + [f"{a}={values[0]}", f"{b}={values[1]}"]),
                              (a, b)))
    if cls.temp_storage != "none":
        cases.append(Case("1-byte shared temp storage", e,
                          _call(e, kws=e.kws + ["temp_storage=shared.array(1, np.uint8)"]),
                          ("temp_storage", "holds 1 bytes"), may_compile=True))
        cases.append(Case("TempStorage(size=1)", e,
                          _call(e, kws=e.kws + ["temp_storage=TINY_STORAGE"]),
                          ("temp_storage", "holds 1 bytes"), may_compile=True))
        cases.append(Case("local temp storage", e,
                          _call(e, kws=e.kws + ["temp_storage=local.array(64, np.uint8)"]),
                          ("temp_storage", "shared memory")))
        cases.append(Case("int32 temp storage", e,
                          _call(e, kws=e.kws + ["temp_storage=shared.array(64, np.int32)"]),
                          ("temp_storage", "uint8")))
    else:
        cases.append(Case("temp storage of a class with none", e,
                          _call(e, kws=e.kws + ["temp_storage=shared.array(64, np.uint8)"]),
                          ("temp_storage",)))
    return cases


# --- compiling the cases -------------------------------------------------------------------

def _module(cases: list[Case], path):
    """One module holding a kernel per case (numba wants the source on disk)."""
    lines = [PRELUDE, "import coopgen", "TINY_STORAGE = coopgen.TempStorage(size=1)", ""]
    for k, c in enumerate(cases):
        lines.append(f"def kernel_{k}(d_in, d_out, n):")
        for s in c.entry.setup + c.setup:
            lines.append(f"    {s}")
        lines.append(f"    {c.call}")
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _outcome(kernel, threads) -> str | None:
    """None when the kernel compiled, else the message of what was raised."""
    try:
        with block_shape(threads):
            cuda.compile_all(kernel, SIG, device=False, abi="numba", cc=(9, 0), output="ltoir")
    except Exception as exc:  # noqa: BLE001 -- what surfaced is what the test inspects
        return f"{type(exc).__name__}: {exc}"
    return None


def _problem(c: Case, msg: str | None, storage_needs: dict) -> str | None:
    if msg is None:
        if not c.may_compile:
            return "compiled"
        if "temp storage" in c.label.lower() or "TempStorage(" in c.label:
            need = storage_needs.get(c.entry.cls.name)
            if need is None or need > 1:
                return f"compiled although the TempStorage needs {need} bytes"
        return None
    # numba reports a function's typing failure with the exception's name, a bound method's
    # without: coopgen's messages start with the primitive's name. A CoopgenTypeError may come
    # from lowering only for what lowering alone compiles (a Python operator's body).
    if not msg.startswith(("TypingError", "CoopgenTypeError")) or f"{c.entry.prim}:" not in msg:
        return f"not coopgen's error: {msg[-1500:]}"
    leaked = [x for x in INTERNAL if x in msg]
    if leaked:
        return f"{leaked[0]} surfaced: {msg[-1500:]}"
    missing = [s for s in c.expect if s not in msg]
    if missing:
        return f"message lacks {missing}: {msg[-1500:]}"
    return None


def cases_of(prim: str) -> list[Case]:
    """The wrong calls of one callable name: each kind of mistake once per parameter name
    (overloads share most names; the resolver treats them alike), then the template ones."""
    mine = [e for e in ENTRIES if e.prim == prim]
    cases, seen = [], set()
    for e in mine:
        siblings = [o for o in mine if o is not e and o.method is not e.method]
        for c in parameter_cases(e, siblings):
            if c.label not in seen:
                seen.add(c.label)
                cases.append(c)
    surface = "faithful" if prim.split(".")[1][0].isupper() else "pythonic"
    full = (surface, mine[0].cls.name) not in FIRST_OF_CLASS or FIRST_OF_CLASS[
        surface, mine[0].cls.name] == prim
    return cases + template_cases(mine[0], full)


ENTRIES = entries()
#: (surface, class) -> the first callable name that gets every template-level wrong call.
FIRST_OF_CLASS = {}
for _e in ENTRIES:
    if _e.template_level:
        FIRST_OF_CLASS.setdefault(("faithful" if _e.prim.split(".")[1][0].isupper()
                                   else "pythonic", _e.cls.name), _e.prim)
NAMES = sorted({e.prim for e in ENTRIES})


@pytest.fixture
def storage_needs(monkeypatch):
    """Class name -> bytes of TempStorage the explicit-storage check read back."""
    needs = {}
    real = layout.resolved_layout

    def recording(cls, args):
        out = real(cls, args)
        needs[cls.name] = out[0]
        return out
    monkeypatch.setattr(layout, "resolved_layout", recording)
    return needs


def test_every_namespace_entry_is_swept():
    callables = {f"{s}.{n}" for s, ns in (("block", block), ("warp", warp)) for n in ns.__all__
                 if isinstance(getattr(ns, n), Primitive)}
    classes = {f"{s}.{n}" for s, ns in (("block", block), ("warp", warp)) for n in ns.__all__
               if isinstance(getattr(ns, n), PrimitiveClass)}
    assert callables <= set(NAMES)
    assert all(any(name.startswith(c + ".") for name in NAMES) for c in classes
               if getattr(block if c.startswith("block") else warp, c.split(".")[1])._cls.methods)


@pytest.mark.parametrize("prim", NAMES)
def test_wrong_calls_get_coopgens_error(prim, tmp_path, storage_needs):
    cases = cases_of(prim)
    mod = _module(cases, tmp_path / f"wrong_{prim.replace('.', '_')}.py")
    problems = []
    for k, c in enumerate(cases):
        problem = _problem(c, _outcome(getattr(mod, f"kernel_{k}"), c.threads), storage_needs)
        if problem:
            problems.append(f"[{c.label}] {c.call} (overload {c.entry.method.signature}): "
                            f"{problem}")
    assert not problems, f"{len(problems)} of {len(cases)} wrong calls:\n" + "\n\n".join(problems)


# --- generated values: invalid template keyword values on a sample of callables -----------

SAMPLE = [e for e in ENTRIES if e.template_level][::7]


@settings(max_examples=25, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow])
@given(entry=st.sampled_from(SAMPLE),
       keyword=st.sampled_from(["items_per_thread", "threads_per_block",
                                "logical_warp_threads"]),
       value=st.one_of(st.integers(-5000, 0), st.integers(1025, 10 ** 6),
                       st.text("abcxyz_", min_size=1, max_size=6),
                       st.floats(0.5, 100.0).filter(lambda v: v != int(v))))
def test_invalid_template_keyword_values(entry, keyword, value, tmp_path_factory):
    if keyword == "logical_warp_threads" and keyword not in template_keywords(entry.cls):
        return
    if keyword == "items_per_thread" and isinstance(value, int) and value > 0:
        return  # a large count is merely large
    rest = [k for k in entry.kws if not k.startswith(keyword + "=")]
    case = Case("generated", entry, _call(entry, kws=rest + [f"{keyword}={value!r}"]),
                (keyword,))
    path = tmp_path_factory.mktemp("gen") / "wrong_generated.py"
    mod = _module([case], path)
    problem = _problem(case, _outcome(mod.kernel_0, THREADS), {})
    assert problem is None, f"{case.call}: {problem}"


def test_the_sweep_covers_both_surfaces_and_scopes():
    kinds = {(e.prim.split(".")[0], e.prim.split(".")[1][0].isupper()) for e in ENTRIES}
    assert kinds == {("block", True), ("block", False), ("warp", True), ("warp", False)}
    assert len(ENTRIES) > 100 and len(list(itertools.chain(NAMES))) > 40
