"""Kernel source for a batch of configurations: one kernel, one call per configuration.

Every parameter of a call gets its own global array (a slot), so a batch of calls needs no
shared layout: per-thread arrays hold ``items`` values per thread (blocked: thread-major),
per-group scalars one value per group (thread block or logical warp), tiles and histograms
``n`` values per group. Each thread loads its values, makes the call with keyword arguments
only (independent of the surfaces' positional order), and stores every output back. Outputs
start as random values, so a value the call must leave alone is checked too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .space import group_call, surface_fixed

#: C++ type names in CUB's signatures -> the config's dtype they take.
MAIN_TYPES = {"T", "KeyT", "InputT", "InputType", "ItemT", "DefaultT", "OutputT", "OutputType",
              "UnsignedBits", "RandomAccessIterator", "InputIteratorT", "OutputIteratorT",
              "BlockPrefixCallbackOp"}
FIXED_TYPES = {"OffsetT": "int32", "ValidFlag": "int32", "FlagT": "int32",
               "CounterT": "uint32", "int": "int32", "unsigned int": "uint32",
               "RunLengthT": "int32", "UserRunOffsetT": "int32", "TotalDecodedSizeT": "uint32",
               "RelativeOffsetT": "uint32", "DecodedOffsetT": "uint32"}
#: Scalar inputs each thread supplies; every other scalar input is one value per group.
PER_THREAD_SCALARS = ("input", "head_flag", "tail_flag")

PRELUDE = '''\
import numpy as np
from numba import cuda
from coopgen import TempStorage, block, coop, thread, warp, local, shared

TS_EXCLUSIVE = TempStorage("exclusive")  # temp_storage= of calls drawn with storage "exclusive"
TS_SHARED = TempStorage("shared")  # ... and "shared" (the kernel syncs before each use)


@cuda.jit(device=True)
def py_add(a, b):
    return a + b


@cuda.jit(device=True)
def py_max(a, b):
    return a if a > b else b


@cuda.jit(device=True)
def py_sub(a, b):
    return a - b


@cuda.jit(device=True)
def py_less(a, b):
    return a < b


@cuda.jit(device=True)
def py_greater(a, b):
    return a > b


@cuda.jit(device=True)
def py_ne(a, b):
    return not a == b  # numba-cuda-mlir 0.6.0 compiles float a != b as ordered: False for NaN


RECORD = np.dtype([("a", np.int32), ("b", np.float32)], align=True)  # families.RECORD


@cuda.jit(device=True)
def py_cplx_less(a, b):  # numpy's order of complex numbers: by real part, then imaginary
    return a.real < b.real or (a.real == b.real and a.imag < b.imag)


@cuda.jit(device=True)
def py_rec_less(x, y):
    return x.a < y.a or (x.a == y.a and x.b < y.b)


@cuda.jit(device=True)
def running_prefix(state, block_aggregate):
    return state[0]  # the block's prefix; CUB calls this once per tile (first warp)
'''


@dataclass(frozen=True)
class Slot:
    """One global array of a configuration."""
    param: str  # parameter name, or "return"
    kind: str  # "thread" | "group" | "tile" | "bins"
    dtype: str
    items: int  # values per thread ("thread"), per group ("tile", "bins"); 1 for "group"
    out: bool  # the kernel writes it back

    def arg(self, j: int) -> str:
        return f"c{j}_{self.param}"


def dtype_for(cfg, base: str) -> str:
    base = base.split("[")[0].strip()
    if base in MAIN_TYPES:
        return cfg.dtype
    if base == "ValueT":
        return cfg.value_dtype
    return FIXED_TYPES.get(base, "int32")


def bins_of(cfg) -> int:
    return int(dict(cfg.tkw).get("bins", 0))


def tile_items(cfg) -> int:
    return cfg.group_threads * cfg.ipt


def extent_items(cfg, extent: str | None) -> int:
    """Items per thread of an array parameter: its extent's template keyword when the
    configuration sets it (runs_per_thread=), else items per thread."""
    keyword = next((t.keyword for t in cfg.spec.template_params if t.name == extent), None)
    return int(dict(cfg.tkw).get(keyword, cfg.ipt))


def call_params(cfg):
    """The constructor's parameters (objects built in the kernel), then the method's."""
    ctor = cfg.constructor
    return (tuple(ctor.params) if ctor else ()) + tuple(cfg.method.params)


def slots(cfg) -> list[Slot]:
    out = []
    m = cfg.method
    if m.returns not in ("void", ""):
        out.append(Slot("return", "thread", cfg.dtype, 1, True))
    for p in call_params(cfg):
        dt = dtype_for(cfg, p.base)
        if p.role in ("input_array", "output_array", "inout_array", "range_input"):
            out.append(Slot(p.name, "thread", dt, extent_items(cfg, p.extent),
                            p.role not in ("input_array", "range_input")))
        elif p.role == "range_output":  # CUB's ceil_div(Batches, logical warp threads)
            out.append(Slot(p.name, "thread", dt, -(-cfg.ipt // (cfg.warp or 32)), True))
        elif p.role == "output_scalar":
            out.append(Slot(p.name, "thread", dt, 1, True))
        elif p.role == "input_scalar":
            kind = "thread" if p.name in PER_THREAD_SCALARS else "group"
            out.append(Slot(p.name, kind, dt, 1, False))
        elif p.role in ("count", "prefix_callback"):
            out.append(Slot(p.name, "group", dt, 1, False))
        elif p.role in ("iterator_in", "iterator_out"):
            out.append(Slot(p.name, "tile", dt, tile_items(cfg), p.role == "iterator_out"))
        elif p.role == "memory_inout":
            out.append(Slot(p.name, "bins", dt, bins_of(cfg), True))
    return out


def returned(cfg) -> list[str]:
    """Names of the values the call returns, in order: the C++ return value, then the output
    scalars left out of the call."""
    m = cfg.method
    names = ["return"] if m.returns not in ("void", "") else []
    return names + [p.name for p in m.params if p.role == "output_scalar" and p.name in cfg.omit]


def _np(dtype: str) -> str:
    if dtype == "bfloat16":  # numba-cuda's (numpy has none of its own)
        return "cuda.bfloat16"
    return "RECORD" if dtype == "record" else f"np.{dtype}"


def _callee(cfg) -> tuple[str, list[str]]:
    scope = cfg.spec.scope
    if cfg.surface == "faithful" and cfg.spec.function:  # block.LoadDirectStriped(...)
        return f"{scope}.{cfg.cls}", []
    if cfg.surface == "faithful":
        return f"{scope}.{cfg.cls}.{cfg.method.name}", []
    name, _, sel = cfg.surface.partition(":")
    if not sel:
        return f"{scope}.{name}", []
    from coopgen.model import registry
    select = next(r.select for r in registry.package().PYTHONIC
                  if r.scope == scope and r.name == name)
    return f"{scope}.{name}", [f"{select}={sel!r}"]


def digit_bits(cfg) -> tuple[int, int]:
    """(shift, mask) of a digit extractor's digit: radix_bits bits of the key."""
    from .families import digit_shift
    return digit_shift(cfg), (1 << int(dict(cfg.tkw)["radix_bits"])) - 1


class Dialect:
    """How a compiler's kernels spell what the calls need: numba-cuda's (and numba-cuda-mlir's)
    here; CuTe DSL's in tools.fuzz.cute. The calls themselves are the same."""
    block_index = "cuda.blockIdx.x"
    sync = "cuda.syncthreads()"
    group_calls = True  # cuda.coop's group-first calls

    def dtype(self, name: str) -> str:
        return _np(name)

    def local(self, n: int, dtype: str) -> str:
        return f"local.array({n}, {self.dtype(dtype)})"

    def shared(self, n: int, dtype: str) -> str:
        return f"shared.array({n}, {self.dtype(dtype)})"

    def items(self, n: int) -> str:
        """The loop over a thread's ``n`` items."""
        return f"range({n})"

    def tile(self, a: str, n: int) -> str:
        """Group g's ``n`` items of global array ``a`` (an iterator)."""
        return f"{a}[g * {n}:]"

    def digit_extractor(self, cfg, j: int) -> str:
        shift, mask = digit_bits(cfg)
        return (f"\n\n@cuda.jit(device=True)\ndef c{j}_digit(key):\n"
                f"    return np.uint32((key >> np.uint32({shift})) & np.uint32({mask}))\n")

    def module(self, configs, args: list, body: list, defs: str) -> str:
        nt = configs[0].threads
        head = ("@cuda.jit\n"
                f"def kernel({', '.join(args)}):\n"
                "    t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y "
                "* cuda.threadIdx.z)\n"
                f"    r = cuda.blockIdx.x * {nt} + t\n")
        return PRELUDE + defs + "\n\n" + head + "".join(f"    {line}\n" for line in body)


NUMBA = Dialect()


def emit(cfg, j: int, d: Dialect = NUMBA) -> tuple[list[str], list[str], str]:
    """(kernel arguments, body lines, module-level definitions) of configuration ``j``."""
    cls, m = cfg.spec, cfg.method
    nt = cfg.threads
    lines = [f"# c{j}: {cfg.label()} via {cfg.surface}"]
    if cfg.warp:  # logical warps as CUB forms them, inside each hardware warp
        w = cfg.warp
        lines += [f"g = {d.block_index} * {cfg.warps_per_block} + (t // 32) * "
                  f"{cfg.warps_per_hw_warp} + (t % 32) // {w}",
                  f"q = g * {w} + (t % 32) % {w}"]
    else:
        lines += [f"g = {d.block_index}", "q = r"]
    defs = ""
    by_name = {s.param: s for s in slots(cfg)}
    args = [s.arg(j) for s in slots(cfg)]
    kwargs, after = [], []
    ret = returned(cfg)
    ctor_params = cfg.constructor.params if cfg.constructor else ()
    ctor_kwargs = []
    fixed = surface_fixed(cfg.spec, cfg.surface)  # passed by the function itself
    for k, p in enumerate(call_params(cfg)):
        if k == len(ctor_params):  # the object's arguments are all set up: build it
            ctor_kwargs, kwargs = kwargs, []
        s = by_name.get(p.name)
        v = f"c{j}_{p.name}_v"
        a = s.arg(j) if s else ""
        if p.role in ("temp_storage", "thread_rank") or p.name in fixed:
            continue  # (a free function's linear_tid: the thread's rank, from coopgen)
        if p.role in ("input_array", "output_array", "inout_array", "range_input",
                      "range_output"):
            lines += [f"{v} = {d.local(s.items, s.dtype)}",
                      f"for i in {d.items(s.items)}:",
                      f"    {v}[i] = {a}[q * {s.items} + i]"]
            if s.out:
                after += [f"for i in {d.items(s.items)}:", f"    {a}[q * {s.items} + i] = {v}[i]"]
        elif p.role == "output_scalar":
            if p.name in cfg.omit:
                continue
            lines += [f"{v} = {d.local(1, s.dtype)}", f"{v}[0] = {a}[q]"]
            after.append(f"{a}[q] = {v}[0]")
        elif p.role == "input_scalar":
            v = f"{a}[q]" if s.kind == "thread" else f"{a}[g]"
        elif p.role == "count":
            v = f"{a}[g]"
        elif p.role in ("iterator_in", "iterator_out"):
            v = d.tile(a, s.items)
        elif p.role == "memory_inout":
            lines += [f"{v} = {d.shared(s.items, s.dtype)}",
                      f"for k in range(t, {s.items}, {nt}):",
                      f"    {v}[k] = {a}[g * {s.items} + k]",
                      d.sync]
            after += [d.sync, f"for k in range(t, {s.items}, {nt}):",
                      f"    {a}[g * {s.items} + k] = {v}[k]"]
        elif p.role == "prefix_callback":
            lines += [f"{v} = {d.local(1, s.dtype)}", f"{v}[0] = {a}[g]"]
            v = f"(running_prefix, {v})"
        elif p.role == "operator" and p.base == "DecomposerT":  # the record's fields, by name
            from .families import RECORD
            v = repr(tuple(RECORD.names))
        elif p.role == "operator" and p.base == "DigitExtractorT":
            defs += d.digit_extractor(cfg, j)
            v = f"c{j}_digit"
        elif p.role == "operator":
            v = cfg.op if cfg.op.startswith("py_") else repr(cfg.op)
        else:
            raise AssertionError(f"fuzz kernels do not bind role {p.role} ({cfg.label()})")
        kwargs.append(f"{p.name}={v}")
    if cfg.surface == "group":
        return args, lines + _group_call(cfg, j, kwargs, ret, d) + after, defs
    callee, extra = _callee(cfg)
    template = extra + [f"{k}={v!r}" for k, v in cfg.tkw]
    if cfg.constructor:  # template keywords go to the constructor
        lines.append(f"c{j}_obj = {cfg.spec.scope}.{cfg.cls}({', '.join(ctor_kwargs + template)})")
        callee, template = f"c{j}_obj.{m.name}", []
    kwargs += template
    if cfg.warp:
        kwargs.append(f"logical_warp_threads={cfg.warp}")
    ipt_param = next((t.name for t in cls.template_params if t.keyword == "items_per_thread"), None)
    if ipt_param and not any(p.extent == ipt_param for p in m.params):
        kwargs.append(f"items_per_thread={cfg.ipt}")
    first = cls.value_type
    if first is not None and not any(p.base == first.name for p in m.params):
        kwargs.append(f"dtype={d.dtype(cfg.dtype)}")
    if cfg.storage != "implicit":
        kwargs.append(f"temp_storage=TS_{cfg.storage.upper()}")
        if cfg.storage == "shared":
            lines.append(f"{d.sync}  # the storage may be in use by the previous call")
    call = f"{callee}({', '.join(kwargs)})"
    if ret:
        lines.append(f"res = {call}")
        for k, name in enumerate(ret):
            val = "res" if len(ret) == 1 else f"res[{k}]"
            after.append(f"c{j}_{name}[q] = {val}")
    else:
        lines.append(call)
    return args, lines + after, defs


def _group_call(cfg, j: int, kwargs: list, ret: list, d: Dialect) -> list:
    """The configuration's call in cuda.coop's group-first form (space.GROUP_CALLS): the
    block, or its logical warp, as the group; the result copied where CUB writes it."""
    call, result, op_keyword = group_call(cfg.cls, cfg.method)
    name, _, mode = call.partition(":")
    given = dict(k.split("=", 1) for k in kwargs)
    first = cfg.method.params[0].name
    group = "coop.this_block()" if cfg.spec.scope == "block" else (
        f"coop.this_warp().group_by({cfg.warp})")
    extra = []
    if op_keyword:
        extra.append(f"{op_keyword}={given[cfg.method.params[-1].name]}")
    extra += [f"{k}={given[k]}" for k in ("begin_bit", "end_bit") if k in given]
    if name in ("sum", "reduce"):
        extra.append("broadcast=False")  # CUB's: the result in the group's first thread
    if mode == "descending":
        extra.append("descending=True")
    elif mode:
        extra.append(f"mode={mode!r}")
    extra += [f"algorithm={v!r}" for k, v in cfg.tkw if k == "algorithm"]
    if cfg.storage != "implicit":
        extra.append(f"temp_storage=TS_{cfg.storage.upper()}")
    lines = [f"{d.sync}  # the storage may be in use by the previous call"] \
        if cfg.storage == "shared" else []
    lines.append(f"res = coop.{name}({group}, {given[first]}{''.join(', ' + e for e in extra)})")
    kind, _, target = result.partition(":")
    if kind == "return":
        return lines + [f"c{j}_{n}[q] = res" for n in ret]
    if target in cfg.omit:  # an output CUB would return: the slot takes the result
        return lines + [f"c{j}_{target}[q] = res"]
    out = f"c{j}_{target}_v"
    p = next(p for p in cfg.method.params if p.name == target)
    if p.role == "output_scalar":
        return lines + [f"{out}[0] = res"]
    items = next(s for s in slots(cfg) if s.param == target).items
    return lines + [f"for i in {d.items(items)}:", f"    {out}[i] = res[i]"]


def kernel_source(configs, d: Dialect = NUMBA) -> str:
    """A module defining ``kernel`` that makes every configuration's call (all share one
    block shape)."""
    all_args, body, defs = [], [], ""
    for j, cfg in enumerate(configs):
        a, lines, dd = emit(cfg, j, d)
        all_args += a
        body += lines
        defs += dd
    return d.module(configs, all_args, body, defs)


def host_shape(cfg, slot: Slot, groups: int) -> tuple:
    if slot.kind == "thread":
        return (groups, cfg.group_threads, slot.items)
    if slot.kind == "group":
        return (groups,)
    return (groups, slot.items)


def groups_of(cfg, grid: int) -> int:
    return grid * cfg.warps_per_block if cfg.warp else grid


__all__ = ["Slot", "slots", "kernel_source", "host_shape", "groups_of", "np"]
