"""Generated smoke kernels: one call of every bound overload, built from the generated specs.

``kernel_source(cls)`` writes a kernel calling each bound overload of a class once, with an
argument of the right kind for every parameter (local arrays, device arrays, scalars, built-in
or Python operators, explicit temp storage for the TempStorage constructor).
"""
from __future__ import annotations

import numpy as np

THREADS = 128
ITEMS = 4
RADIX_BITS = 5  # BlockRadixRankMatchEarlyCounts needs at least 32 digits
BINS_PER_THREAD = ((1 << RADIX_BITS) + THREADS - 1) // THREADS
#: dtype for each C++ type name CUB uses in these signatures (ValueT differs from the key so
#: pairs are checked with two dtypes).
DTYPES = {"ValueT": "np.float32", "UnsignedBits": "np.uint32", "int": "np.int32",
          "unsigned int": "np.uint32", "__half": "np.float16", "__nv_bfloat16": "bfloat16"}
#: a value per template keyword of a free function (its enum's values are cycled through)
FUNCTION_KEYWORDS = {"label_bits": "4"}
BUILTIN = {"ReductionOp": '"+"', "ScanOp": '"max"', "CompareOp": '"<"', "FlagOp": '"!="',
           "DifferenceOpT": '"-"'}
PY_OPERATOR = {"DigitExtractorT": "digit", "CountsCallback": "counts"}

PRELUDE = '''
import numpy as np
from numba import cuda
from coopgen import block, warp, thread, local, shared
from ml_dtypes import bfloat16

RECORD = np.dtype([("a", np.int32), ("b", np.float32)], align=True)


@cuda.jit(device=True)
def digit(key):
    return key & 15


@cuda.jit(device=True)
def counts(bins):
    bins[0] += 0


@cuda.jit(device=True)
def running_prefix(state, aggregate):
    old = state[0]
    state[0] = old + aggregate
    return old
'''


def _dtype(base: str) -> str:
    return DTYPES.get(base, "np.int32")


def call_args(cls, method, tag: str) -> tuple[list[str], list[str]]:
    """(setup lines, argument expressions) for one call of ``method``."""
    setup, args = [], []
    records = any(p.base == "DecomposerT" for p in method.params)
    for p in method.params:
        v = f"{p.name}_{tag}"
        if p.role in ("input_array", "output_array", "inout_array"):
            n = BINS_PER_THREAD if p.extent and "BINS" in p.extent else ITEMS
            dtype = "RECORD" if records and p.base == "KeyT" else _dtype(p.base)
            setup.append(f"{v} = local.array({n}, {dtype})")
            if p.role != "output_array" and dtype != "RECORD":
                setup.append(f"for i in range({n}):\n        {v}[i] = d_in[i]")
            args.append(v)
        elif p.role in ("range_input", "range_output"):
            # ITEMS inputs (WarpReduceBatched: Batches = ITEMS); an output range holds
            # ceil_div(Batches, logical warp threads) = ceil_div(4, 32) = 1 item.
            n = ITEMS if p.role == "range_input" else 1
            setup.append(f"{v} = local.array({n}, np.int32)")
            if p.role == "range_input":
                setup.append(f"for i in range({n}):\n        {v}[i] = d_in[i]")
            args.append(v)
        elif p.role in ("output_scalar", "inout_scalar"):
            setup.append(f"{v} = local.array(1, {_dtype(p.base)})")
            args.append(v)
        elif p.role == "input_scalar" and p.base in ("__half", "__nv_bfloat16"):
            setup.append(f"{v} = local.array(1, {_dtype(p.base)})")  # a value of that type
            args.append(f"{v}[0]")
        elif p.role == "input_scalar" and p.base == "bool":
            args.append("d_in[0] > 0")
        elif p.role == "input_scalar":
            args.append(f"{_dtype(p.base)}(d_in[0])")
        elif p.role == "thread_rank":
            args.append("cuda.threadIdx.x")
        elif p.role == "count":
            args.append("n")
        elif p.role in ("iterator_in", "iterator_out"):
            args.append("d_in" if p.role == "iterator_in" else "d_out")
        elif p.role == "memory_inout":
            setup.append(f"{v} = shared.array(16, np.int32)")
            args.append(v)
        elif p.role == "operator" and p.base == "DecomposerT":
            args.append('("a", "b")')
        elif p.role == "operator":
            args.append(BUILTIN.get(p.base) or PY_OPERATOR[p.base])
        elif p.role == "temp_storage":
            args.append("temp_storage")  # replaced by temp_storage= in kernel_source
        elif p.role == "prefix_callback":
            setup.append(f"{v} = local.array(1, np.int32)")
            args.append(f"(running_prefix, {v})")
        else:
            raise AssertionError(f"smoke kernels do not know role {p.role}")
    return setup, args


def template_kws(cls) -> str:
    kws = []
    if cls.scope == "block" or cls.temp_storage != "none":
        kws.append(f"threads_per_block={THREADS}")
    extents = {p.extent for m in cls.methods for p in m.params if p.extent}
    ctor_extents = {p.extent for m in cls.constructors for p in m.params if p.extent}
    range_extents = {p.extent for m in cls.methods for p in m.params
                     if p.role == "range_input" and p.extent}
    for t in cls.template_params:
        if t.kind == "value" and t.default is None and (
                t.keyword.endswith("per_thread") or t.name in range_extents) and \
                t.name not in ctor_extents and t.keyword != "items_per_thread":
            kws.append(f"{t.keyword}={ITEMS}")  # known to methods only: a parent needs it
            continue
        if t.default is not None or t.kind != "value" or t.name in extents | ctor_extents or \
                t.keyword.startswith("block_dim") or t.keyword == "logical_warp_threads":
            continue
        kws.append(f"{t.keyword}={'False' if t.cpp_type == 'bool' else 16 if t.keyword == 'bins' else RADIX_BITS}")
    kws.append(f"items_per_thread={ITEMS}")
    seen, unique = set(), []
    for kw in kws:  # one value per keyword
        if kw.split("=")[0] not in seen:
            seen.add(kw.split("=")[0])
            unique.append(kw)
    return ", ".join(unique)


def dtype_kw(cls, method) -> list[str]:
    """dtype= when no argument of the call carries the class's first type parameter."""
    first = cls.value_type
    if first is None or any(p.base == first.name for p in method.params):
        return []
    return ["dtype=np.int32"]


def kernel_source(cls, scope: str) -> tuple[str, list[str]]:
    """Kernel source calling every bound overload of ``cls`` once, and the signatures covered:
    each constructor builds a parent object; methods are called one-shot (on a temporary) or,
    for classes that need constructor data, on the last parent built."""
    lines = [PRELUDE, "", "def kernel(d_in, d_out, n):"]
    covered = []
    kws = template_kws(cls)
    one_shot = any(all(p.role == "temp_storage" for p in c.params) for c in cls.constructors)
    for i, c in enumerate(cls.constructors):
        setup, args = call_args(cls, c, f"c{i}")
        if any(p.role == "temp_storage" for p in c.params):
            setup.append(f"ts_c{i} = shared.array(20480, np.uint8)")
            args = [a for a, p in zip(args, c.params) if p.role != "temp_storage"] + [f"temp_storage=ts_c{i}"]
        lines += [f"    {s}" for s in setup]
        ctor_kws = args + (["dtype=np.int32"] if dtype_kw(cls, c) else []) + ([kws] if kws else [])
        lines.append(f"    obj = {scope}.{cls.name}({', '.join(ctor_kws)})")
        covered.append(f"{cls.name}::{c.signature}")
    for i, m in enumerate(cls.methods):
        setup, args = call_args(cls, m, str(i))
        args += [f"{t.keyword}={i % 2 == 0}" for t in m.keywords]  # both values of a bool
        lines += [f"    {s}" for s in setup]
        if one_shot:
            call = f"{scope}.{cls.name}.{m.name}({', '.join(args + dtype_kw(cls, m) + ([kws] if kws else []))})"
        else:
            call = f"obj.{m.name}({', '.join(args)})"
        lines.append(f"    {call}")
        covered.append(f"{cls.name}::{m.signature}")
    # One-shot calls with explicit temp storage (the TempStorage& constructor of a temporary).
    if cls.methods and one_shot and any(c.params for c in cls.constructors):
        m = cls.methods[0]
        setup, args = call_args(cls, m, "ts")
        args += [f"{t.keyword}=True" for t in m.keywords]
        lines += [f"    {s}" for s in setup]
        lines.append("    ts = shared.array(20480, np.uint8)")
        call = f"{scope}.{cls.name}.{m.name}({', '.join(args + dtype_kw(cls, m) + ['temp_storage=ts', kws])})"
        lines.append(f"    {call}")
    return "\n".join(lines) + "\n", covered


def _keyword_value(t, i: int) -> str:
    """A value of a free function's template keyword: the i-th member of its enum (cycled),
    True/False alternately, or a count."""
    from coopgen.model import registry

    enum = registry.enums().get(t.cpp_type)
    if enum is not None:
        return repr(sorted(enum.values, key=lambda nv: nv[1])[i % len(enum.values)][0])
    if t.cpp_type == "bool":
        return str(i % 2 == 0)
    return FUNCTION_KEYWORDS.get(t.keyword, "32")


def function_source(functions, scope: str) -> tuple[str, list[str]]:
    """One kernel calling every bound overload of a scope's free functions once (one NVRTC
    translation unit for all of them), and the signatures covered."""
    lines = [PRELUDE, "", "def kernel(d_in, d_out, n):"]
    covered, i = [], 0
    for fn in functions:
        for m in fn.methods:
            setup, args = call_args(fn, m, str(i))
            # block_threads and logical warp threads are inferred; the others are given
            args += [f"{t.keyword}={_keyword_value(t, i)}" for t in m.keywords
                     if t.keyword not in ("block_threads", "logical_warp_threads")]
            if fn.scope == "block":
                args.append(f"threads_per_block={THREADS}")
            lines += [f"    {s}" for s in setup]
            call = f"{scope}.{fn.name}({', '.join(args)})"
            lines.append(f"    r{i} = {call}" if m.returns != "void" else f"    {call}")
            if m.returns != "void":  # keep the result alive
                lines.append(f"    d_out[{i % 64}] = r{i}")
            covered.append(f"{fn.name}::{m.signature}")
            i += 1
    return "\n".join(lines) + "\n", covered


def _load(src: str, name: str, tmp_path, compiler: str):
    import importlib.util

    src = src.replace("from numba import cuda", f"from {compiler} import cuda", 1)
    path = tmp_path / f"smoke_{name}_{compiler}.py"
    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(f"smoke_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.kernel


def build_function_kernel(functions, scope: str, tmp_path, compiler: str = "numba"):
    """``build_kernel`` for a scope's free functions."""
    src, covered = function_source(functions, scope)
    return _load(src, f"functions_{scope}", tmp_path, compiler), covered, src


def build_kernel(cls, scope: str, tmp_path, compiler: str = "numba"):
    """Write the kernel module to ``tmp_path`` (numba needs source on disk) and import it;
    ``compiler``: the package whose ``cuda`` it is written with (numba, numba_cuda_mlir)."""
    src, covered = kernel_source(cls, scope)
    return _load(src, cls.name, tmp_path, compiler), covered, src


def import_source(src: str, path, name: str):
    """Write a kernel module to ``path`` (the compilers need source on disk) and import it."""
    import importlib.util

    path.write_text(src, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


__all__ = ["build_function_kernel", "build_kernel", "function_source", "import_source",
           "kernel_source", "np"]
