"""Build, run and check batches of configurations; spread batches over worker processes.

A batch is up to ``batch_size`` configurations with the same block shape: one kernel, one
NVRTC (clang, for CuTe DSL) translation unit. If the batch kernel fails to compile or launch,
each half is tried on its own, down to single configurations, so an error names the one call
that causes it. A kernel fault (a sticky CUDA
error) ends the worker process; the parent records it and starts a new worker.
"""
from __future__ import annotations

import importlib
import importlib.util
import math
import os
import re
import sys
import tempfile
import time
import traceback
import zlib
from dataclasses import dataclass, replace

import numpy as np

from . import families, kernels
from .space import TILES, Config

FAULT_EXIT = 70


@dataclass
class Result:
    config: Config
    status: str  # "ok" | "mismatch" | "error" | "fault" | "compiled"
    detail: str = ""

    def line(self) -> str:
        return (f"{self.status.upper()} {self.config.label()} [{self.config.surface}] "
                f"{self.detail} | repro: python -m tools.fuzz --repro '{self.config.to_json()}'")


# --- data ------------------------------------------------------------------------------------


def compiler():
    """The package whose ``cuda`` the kernels are written with (``--backend``; workers inherit
    it from the environment): numba (numba-cuda) or numba_cuda_mlir."""
    return os.environ.get("COOPGEN_COMPILER", "numba")


def _cuda():
    return importlib.import_module(f"{compiler()}.cuda" if compiler() == "numba" else
                                   "numba_cuda_mlir.cuda")


def _typeof():
    if compiler() == "numba":
        from numba.cuda.typing.typeof import typeof  # knows ml_dtypes' bfloat16
        return typeof
    from numba_cuda_mlir.numba_cuda.typing.typeof import typeof
    return typeof


def to_device(a):
    """bfloat16 arrays have no buffer protocol (numpy's 'E'): move their bits, view them."""
    cuda = _cuda()
    if a.dtype.name == "bfloat16":
        return cuda.to_device(a.view(np.uint16)).view(a.dtype)
    return cuda.to_device(a)


def to_host(d):
    if d.dtype.name == "bfloat16":
        return d.view(np.uint16).copy_to_host().view(d.dtype)
    return d.copy_to_host()

def edge_values(dtype, allowed) -> np.ndarray:
    dt = families.np_dtype(dtype)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        vals = [info.min, info.max, 0, 1] + ([-1] if dt.kind == "i" else [])
        return np.array(vals, dt)
    fi = families.ml_dtypes.finfo(dt) if dt.name == "bfloat16" else np.finfo(dt)
    table = {"0.0": 0.0, "-0.0": -0.0, "inf": np.inf, "-inf": -np.inf, "nan": np.nan,
             "max": fi.max, "lowest": fi.min, "tiny": fi.tiny}
    return np.array([table[a] for a in allowed], dt)


def random_values(dtype, shape, rng, edges=()) -> np.ndarray:
    """Random values of ``dtype``: half the time over the full range (or [-100, 100) for
    floats), half the time from a few small values (so ties occur), with edge values mixed in
    at random places in half of the arrays."""
    dt = families.np_dtype(dtype)
    n = math.prod(shape)
    if dt.names:  # a record: each field on its own
        x = np.empty(n, dt)
        for name in dt.names:
            x[name] = random_values(dt.fields[name][0], (n,), rng)
        return x.reshape(shape)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        if rng.random() < 0.5:
            x = rng.integers(info.min, info.max, n, dtype=dt, endpoint=True)
        else:
            x = rng.integers(max(info.min, -8), 9, n).astype(dt)
    elif rng.random() < 0.5:
        x = rng.uniform(-100, 100, n).astype(dt)
    else:
        x = rng.integers(-8, 9, n).astype(dt)
    if dt.kind == "c":  # an imaginary part of the same kind
        x = x + 1j * random_values(dt.type(0).real.dtype, (n,), rng)
    ev = edge_values(dt, edges)
    if len(ev) and n and rng.random() < 0.5:
        where = rng.random(n) < 0.03
        x[where] = ev[rng.integers(len(ev), size=int(where.sum()))]
    return x.reshape(shape)


def make_inputs(cfg: Config, groups: int) -> dict[str, np.ndarray]:
    """Host arrays of every slot, from the configuration's seed."""
    rng = np.random.default_rng(cfg.seed)
    fam = cfg.family
    special = fam.inputs(cfg, rng, groups) if fam.inputs else {}
    special.update({k: v for k, v in families.count_inputs(cfg, rng, groups).items()
                    if k not in special})
    edges = families.float_edges(cfg)
    out = {}
    for s in kernels.slots(cfg):
        shape = kernels.host_shape(cfg, s, groups)
        if s.param in special:
            out[s.param] = np.ascontiguousarray(
                special[s.param].reshape(shape).astype(families.np_dtype(s.dtype)))
        elif s.dtype == "int32" and s.param.endswith(("flag", "flags", "is_valid")):
            out[s.param] = (rng.random(shape) < 0.3).astype(np.int32)
        else:
            out[s.param] = random_values(s.dtype, shape, rng, edges)
    return out


# --- checking ----------------------------------------------------------------------------

def compare(cfg: Config, check: families.Check, got: np.ndarray, ins) -> str:
    want = np.asarray(check.want)
    if want.shape != got.shape:
        return f"{check.name}: shape {got.shape}, expected {want.shape}"
    mask = np.ones(got.shape, bool) if check.mask is None else np.asarray(check.mask, bool)
    g, w = got[mask], want[mask].astype(got.dtype, copy=False)
    if got.dtype.name == "bfloat16":  # compared as float32 (exact)
        g, w = g.astype(np.float32), w.astype(np.float32)
    if check.magnitude is not None:  # float16, bfloat16, complex sums
        bad = sum_mismatch(cfg, g, want[mask], np.asarray(check.magnitude)[mask], got.dtype)
        ok = ~bad
    elif g.dtype.kind in "fc":
        same_nan = np.isnan(g) & np.isnan(w)
        if check.mode == "sum":
            data = np.concatenate([np.ravel(v) for k, v in ins.items()
                                   if v.dtype == got.dtype] or [np.zeros(1)])
            finite = np.abs(data[np.isfinite(data)]).astype(np.float64)
            scale = max(float(finite.max()) if finite.size else 1.0, 1.0)
            n = cfg.group_threads * cfg.ipt + 1
            atol = 4.0 * n * float(np.finfo(got.dtype).eps) * scale
            ok = np.isclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-5, atol=atol) | same_nan
        else:
            ok = (g == w) | same_nan
    else:
        ok = g == w
    if ok.all():
        return ""
    bad = np.argwhere(mask)[np.flatnonzero(~ok)[0]]
    where = " ".join(f"{a}={b}" for a, b in zip(("group", "thread", "item"), bad))
    note = f" ({check.note})" if check.note else ""
    return (f"{check.name}{note}: {int((~ok).sum())} of {ok.size} differ; first at {where}: "
            f"got {got[tuple(bad)]!r} expected {want[tuple(bad)]!r}")


def sum_mismatch(cfg: Config, got, want, magnitude, dtype) -> np.ndarray:
    """Where a sum is outside the worst case of any summation order: each part's error at most
    (n - 1) * u * sum(|term|) (u: the type's unit roundoff, n: the terms of the longest sum,
    the group's tile and an initial value), plus one rounding of the reference to the type (and,
    for complex128, the float64 reference's own error: the bound twice), per part of a complex
    number (the magnitude is then Σ|re| + i Σ|im|). Non-finite results
    (infinities, NaN among the inputs) must be the same."""
    wide = families.wide(dtype)
    g, w = got.astype(wide), np.asarray(want).astype(wide)
    u = families.unit_roundoff(dtype)
    n = cfg.group_threads * cfg.ipt + 1
    magnitude = np.asarray(magnitude)
    parts = (g.real, w.real, magnitude.real), (g.imag, w.imag, magnitude.imag
                                                 if np.iscomplexobj(magnitude) else magnitude)
    bad = np.zeros(g.shape, bool)
    for gp, wp, mag in parts:
        bound = (n - 1) * u * mag * (2 if u < 2.0**-50 else 1)
        finite = np.isfinite(gp) & np.isfinite(wp)
        same = (gp == wp) | (np.isnan(gp) & np.isnan(wp))
        with np.errstate(invalid="ignore", over="ignore"):
            close = finite & (np.abs(gp - wp) <= bound + u * np.abs(wp))
        bad |= ~(same | close)
    return bad


def partial_groups(cfg: Config, outs) -> np.ndarray | None:
    """(groups,) flags of the partial logical warps, or None when there are none."""
    if not cfg.warp or min(32, cfg.threads) % cfg.warp == 0:
        return None
    groups = kernels.groups_of(cfg, TILES)
    return np.arange(groups) % cfg.warps_per_hw_warp == cfg.warps_per_hw_warp - 1


def _without_groups(check, groups) -> np.ndarray:
    shape = np.shape(check.want)
    mask = np.ones(shape, bool) if check.mask is None else np.array(check.mask, bool)
    mask[groups] = False
    return mask


def check_config(cfg: Config, ins, outs) -> Result:
    try:
        checks = cfg.family.reference(cfg, ins, outs)
    except Exception as e:  # a reference that cannot handle a draw is a driver bug: report it
        return Result(cfg, "error", f"reference failed: {e!r}")
    partial = partial_groups(cfg, outs)
    if partial is not None:  # CUB leaves the results of partial logical warps undefined
        checks = [replace(c, mask=_without_groups(c, partial)) for c in checks]
    problems = [p for c in checks if (p := compare(cfg, c, outs[c.name], ins))]
    return Result(cfg, "mismatch" if problems else "ok", "; ".join(problems))


# --- building and running ------------------------------------------------------------------

_module_dir = None


def import_source(src: str):
    """Write a batch's module (numba and CuTe DSL read the kernel's source from disk) and
    import it."""
    global _module_dir
    if _module_dir is None:
        _module_dir = tempfile.mkdtemp(prefix="coopgen-fuzz-")
    name = f"fuzz_{zlib.crc32(src.encode()):08x}"
    path = os.path.join(_module_dir, name + ".py")
    with open(path, "w", encoding="utf-8") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build_kernel(configs):
    """The batch's numba kernel."""
    src = kernels.kernel_source(configs).replace("from numba import cuda",
                                                 f"from {compiler()} import cuda", 1)
    return import_source(src).kernel


def _host_arrays(configs):
    per_cfg = []
    for cfg in configs:
        groups = kernels.groups_of(cfg, TILES)
        per_cfg.append(make_inputs(cfg, groups))
    return per_cfg


def _flat_args(configs, per_cfg):
    args = []
    for cfg, arrays in zip(configs, per_cfg):
        for s in kernels.slots(cfg):
            args.append(np.ascontiguousarray(arrays[s.param]).reshape(-1))
    return args


def _is_sticky(e: Exception) -> bool:
    text = repr(e)
    return any(k in text for k in ("ILLEGAL_ADDRESS", "LAUNCH_FAILED", "MISALIGNED",
                                   "ILLEGAL_INSTRUCTION", "HARDWARE_STACK", "ASSERT",
                                   "UNKNOWN"))


def _run_numba(configs, args, compile_only: bool) -> list[np.ndarray] | None:
    """Compile the batch's numba kernel; unless ``compile_only``, launch it on TILES tiles:
    the arrays afterwards."""
    import coopgen

    cuda, typeof = _cuda(), _typeof()
    block = configs[0].block
    kernel = build_kernel(configs)
    if compile_only:
        from coopgen.linkcheck import link_cubin
        with coopgen.block_shape(block):
            link_cubin(kernel, tuple(typeof(a) for a in args))
        return None
    dargs = [to_device(a) for a in args]
    kernel[TILES, block](*dargs)
    cuda.synchronize()
    return [to_host(d) for d in dargs]


def _run_kernel(configs, args, compile_only: bool) -> list[np.ndarray] | None:
    if compiler() == "cute":
        from . import cute
        return cute.run_kernel(configs, args, compile_only, import_source)
    return _run_numba(configs, args, compile_only)


def run_batch(configs, compile_only: bool = False) -> list[Result]:
    """Compile the batch as one kernel, launch it on TILES tiles, and check every config."""
    per_cfg = _host_arrays(configs)
    args = _flat_args(configs, per_cfg)
    try:
        got = _run_kernel(configs, args, compile_only)
        if compile_only:
            return [Result(c, "compiled") for c in configs]
    except Exception as e:
        if _is_sticky(e):
            raise
        if len(configs) > 1:  # find the calls that fail: each half on its own
            half = len(configs) // 2
            return run_batch(configs[:half], compile_only) + run_batch(configs[half:],
                                                                       compile_only)
        # (CuTe DSL's errors are coloured, and open with a line saying they are its own)
        msg = re.sub(r"\x1b\[[0-9;]*m", "", str(e)).strip().splitlines()
        first = next((ln for ln in msg if "coopgen" in ln or "error" in ln.lower()
                      and "internal DSL problem" not in ln), msg[0] if msg else repr(e))
        return [Result(configs[0], "error", f"{type(e).__name__}: {first.strip()[:400]}")]
    results = []
    k = 0
    for cfg, ins in zip(configs, per_cfg):
        outs = {}
        for s in kernels.slots(cfg):
            outs[s.param] = got[k].reshape(ins[s.param].shape)
            k += 1
        results.append(check_config(cfg, ins, outs))
    return results


def batches_of(configs, batch_size: int) -> list[list[Config]]:
    by_shape: dict = {}
    for c in configs:
        by_shape.setdefault(c.block, []).append(c)
    out = []
    for group in by_shape.values():
        for i in range(0, len(group), batch_size):
            out.append(group[i:i + batch_size])
    return out


# --- worker processes ----------------------------------------------------------------------

def _worker(tasks, results, batches, compile_only):
    while True:
        idx = tasks.get()
        if idx is None:
            return
        results.put(("start", os.getpid(), idx))
        try:
            res = run_batch(batches[idx], compile_only)
        except Exception as e:  # a kernel fault: the CUDA context is lost for this process
            res = [Result(c, "fault", f"{type(e).__name__}: {str(e)[:300]}")
                   for c in batches[idx]]
            results.put(("done", os.getpid(), idx, [(r.status, r.detail) for r in res]))
            results.close()
            results.join_thread()  # the message must leave before the process does
            sys.stdout.flush()
            os._exit(FAULT_EXIT)
        except BaseException:
            traceback.print_exc()
            raise
        results.put(("done", os.getpid(), idx, [(r.status, r.detail) for r in res]))


def run_parallel(batches, workers: int, compile_only: bool = False, on_result=None,
                 batch_timeout: float = 300.0, time_limit: float | None = None) -> list[Result]:
    """Run ``batches`` on ``workers`` processes (spawned: each has its own CUDA context).
    After ``time_limit`` seconds, batches not finished are left out of the results."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    tasks, results = ctx.Queue(), ctx.Queue()
    for i in range(len(batches)):
        tasks.put(i)
    procs = {}
    t0 = time.time()  # the limit counts the workers' start-up (imports) too

    def start():
        p = ctx.Process(target=_worker, args=(tasks, results, batches, compile_only))
        p.start()
        procs[p.pid] = [p, None, None]  # process, current batch, started at

    for _ in range(min(workers, len(batches))):
        start()
    done: dict[int, list[Result]] = {}
    while len(done) < len(batches):
        if time_limit is not None and time.time() - t0 > time_limit:
            for p, _, _ in procs.values():
                p.kill()
            procs.clear()
            break
        try:
            msg = results.get(timeout=1.0)
        except Exception:
            msg = None
        if msg is not None:
            if msg[0] == "start":
                if msg[1] in procs:
                    procs[msg[1]][1:] = [msg[2], time.time()]
            else:
                _, pid, idx, res = msg
                done[idx] = [Result(c, s, d) for c, (s, d) in zip(batches[idx], res)]
                if pid in procs:
                    procs[pid][1] = None
                if on_result:
                    for r in done[idx]:
                        on_result(r)
            continue
        for pid, (p, idx, since) in list(procs.items()):
            hung = idx is not None and time.time() - since > batch_timeout
            if hung:
                p.kill()
            if p.is_alive() and not hung:
                continue
            p.join()
            del procs[pid]
            if idx is not None and idx not in done:
                why = "timeout" if hung else f"worker died (exit {p.exitcode})"
                done[idx] = [Result(c, "fault", why) for c in batches[idx]]
                if on_result:
                    for r in done[idx]:
                        on_result(r)
            if len(done) + len(procs) < len(batches):
                start()
    for _ in procs:
        tasks.put(None)
    for p, _, _ in procs.values():
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
    return [r for i in range(len(batches)) if i in done for r in done[i]]
