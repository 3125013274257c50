"""Benchmark coopgen kernels against the same kernels in CUDA C++ with CUB, built by nvcc.

    python tools/bench/bench.py                 # everything (needs a GPU, nvcc and CuPy)
    python tools/bench/bench.py runtime [CASE ...]
    python tools/bench/bench.py compile [CASE ...]
    python tools/bench/bench.py resources       # no GPU: registers/shared memory of both builds
    python tools/bench/bench.py runtime --compiler cute  # the kernels in CuTe DSL (cute_cases.py)
    python tools/bench/bench.py apps            # the examples/ kernels against their baselines
    python tools/bench/bench.py rmsnorm [dtype:ROWSxHIDDEN ...]  # against PyTorch and Triton
    python tools/bench/bench.py draw [RESULT.json ...] [--img DIR]  # the charts, no GPU

Run time: CUDA events around batches of back-to-back launches, each batch behind an untimed
leader launch (so the host's launch cost is not timed as idle GPU), 3 warm-up launches, 25
batches of 10, the median batch; the two builds are timed interleaved, three rounds, and each
keeps its fastest median. Outputs are checked against numpy and against each other before
timing.

Compile time: one fresh process per measurement, timing the kernel's first launch (compile,
link, load, run, sync), imports and input set-up excluded; the median of 3. "cold" has empty
coopgen and numba caches; "warm" has coopgen's LTO-IR cache filled by an earlier process (numba
still compiles the kernel); "cached" is ``@cuda.jit(cache=True)`` loaded from disk by a second
process. The first row is a numba kernel without coopgen: numba's own start-up, the floor of
every column. The last column is two more new kernels (merge sort, then warp scan) launched
in the cold process, a second apart: what further kernels cost. COOPGEN_BENCH_REPEATS=N
measures each state N times instead of 3.

RMSNorm: rmsnorm.py says what it times and how.

The kernels are written for numba-cuda; with COOPGEN_COMPILER=numba_cuda_mlir the same kernels
are compiled by numba-cuda-mlir (coopgen's mlir backend), and the results are written as
<what>-numba_cuda_mlir; the cases numba-cuda-mlir cannot compile (``Case.not_on_mlir``) are
listed, not run. ``--compiler cute`` (COOPGEN_COMPILER=cute) times the same cases written as
CuTe DSL kernels (cute_cases.py) against the same nvcc builds, results in <what>-cute; it runs
``runtime`` and ``resources`` (first_launch.py measures CuTe DSL's first launches).

Every run writes its raw numbers and its tables to <dir>/<what>.json and <dir>/<what>.md, and
when matplotlib imports, draws its charts (draw.py) into <img>: <dir> is tools/bench/results and
<img> is docs/img, or both are COOPGEN_BENCH_OUT=<dir> when it is set.
"""
from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cases import (CASES, COMPILE_CASES, INPUT_DTYPE, NATIVE_CU, compiler, compiler_name,
                   make_kernel, not_run)

BATCHES, PER_BATCH, WARMUP, ROUNDS = 25, 10, 3, 3
COMPILE_REPEATS = int(os.environ.get("COOPGEN_BENCH_REPEATS", 3))


# --- native build ---------------------------------------------------------------------------

def build_native(kind: str = "cubin", arch: str = "sm_90") -> str:
    """nvcc -O3 the reference kernels; returns the output path."""
    from coopgen.model import registry
    d = tempfile.mkdtemp(prefix="coopgen-bench-")  # CuPy loads lazily: keep the file
    src = os.path.join(d, "native.cu")
    with open(src, "w", encoding="utf-8") as f:
        f.write(NATIVE_CU)
    out = os.path.join(d, f"native.{kind}")
    cmd = ["nvcc", "-O3", f"-arch={arch}", f"-{kind}", f"-I{registry.include_dir()}",
           "-o", out, src]
    if kind == "cubin":
        cmd.insert(1, "-Xptxas=-v")
    res = subprocess.run(cmd, capture_output=True, encoding="utf-8", errors="replace")
    if res.returncode:
        raise RuntimeError(res.stderr[-4000:])
    with open(out + ".log", "w", encoding="utf-8") as f:
        f.write(res.stderr)
    return out


# --- run time -------------------------------------------------------------------------------

def _time(launch) -> float:
    cuda = compiler()
    for _ in range(WARMUP):
        launch()
    cuda.synchronize()
    times = []
    for _ in range(BATCHES):
        start, stop = cuda.event(), cuda.event()
        # A leader launch keeps the GPU busy while the host records the start event and
        # enqueues the timed launches, so the host's launch cost (larger for numba than for
        # CuPy) is not timed as idle GPU time before the first timed kernel.
        launch()
        start.record()
        for _ in range(PER_BATCH):
            launch()
        stop.record()
        stop.synchronize()
        times.append(cuda.event_elapsed_time(start, stop) / PER_BATCH)
    times.sort()
    return times[len(times) // 2]


def _check(case, got, want, what):
    import numpy as np
    if case.exact:
        ok = np.array_equal(got, want)
    else:
        ok = np.allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())
    if not ok:
        bad = np.flatnonzero(got != want)[:5]
        raise AssertionError(f"{case.name}: {what} differs from numpy at {bad}: "
                             f"{got[bad]} vs {want[bad]}")


def runtime_rows(names) -> list[dict]:
    import cupy
    import numpy as np
    cuda = compiler()

    module = cupy.RawModule(path=build_native())
    rows = []
    for name in names:
        case = CASES[name]
        rng = np.random.default_rng(2026)
        host = case.make_input(rng, case.n)
        n_out = case.out_len(case.n)
        d_in = cuda.to_device(host)
        d_py = cuda.device_array(n_out, case.dtype)
        d_cx = cupy.empty(n_out, case.dtype)
        cx_in = cupy.asarray(d_in)  # same memory, seen by CuPy
        kernel = make_kernel(case)[case.grid, case.threads]
        fn = module.get_function(case.native)
        smem = case.native_dynamic_smem() if case.native_dynamic_smem else 0
        if smem:  # cudaFuncSetAttribute(MaxDynamicSharedMemorySize); coopgen's launch does it
            fn.max_dynamic_shared_size_bytes = smem
        py = lambda: kernel(d_in, d_py, *case.extra_args)
        cx = lambda: fn((case.grid,), (case.threads,), (cx_in, d_cx), shared_mem=smem)
        py()
        cx()
        cuda.synchronize()
        want = case.expected(host)
        got_py, got_cx = d_py.copy_to_host(), cupy.asnumpy(d_cx)
        _check(case, got_py, want, "coopgen")
        _check(case, got_cx, want, "nvcc+CUB")
        same = bool(np.array_equal(got_py, got_cx))
        rounds = [(_time(py), _time(cx)) for _ in range(ROUNDS)]  # interleaved: drift hits both
        t_py, t_cx = min(r[0] for r in rounds), min(r[1] for r in rounds)
        in_bytes = case.n * np.dtype(INPUT_DTYPE.get(name, case.dtype)).itemsize
        moved = in_bytes + n_out * np.dtype(case.dtype).itemsize
        rows.append({
            "case": name, "what": case.what, "n": case.n,
            "dtype": np.dtype(INPUT_DTYPE.get(name, case.dtype)).name,
            "coopgen_ms": t_py, "native_ms": t_cx, "ratio": t_cx / t_py,
            "coopgen_GBps": moved / t_py / 1e6, "native_GBps": moved / t_cx / 1e6,
            "same_output": same,
            "coopgen_regs": _registers(kernel),
            "native_regs": fn.num_regs,
            "rounds_ms": rounds,
        })
        del d_in, d_py, d_cx, cx_in
    return rows


def _registers(kernel) -> int | None:
    """Registers a thread of a launched kernel: numba's dispatcher's, or a CuTe DSL kernel's."""
    if hasattr(kernel, "dispatcher"):
        return next(iter(kernel.dispatcher.get_regs_per_thread().values()))
    return getattr(kernel, "registers", None)


def runnable(names) -> tuple[list[str], dict]:
    """(the cases this compiler runs, {case: why not} for those it cannot compile)."""
    skipped = {n: not_run(CASES[n]) for n in names if not_run(CASES[n])}
    return [n for n in names if n not in skipped], skipped


def print_runtime(rows, skipped=None) -> str:
    lines = ["| case | n | coopgen ms | nvcc+CUB ms | coopgen GB/s | native GB/s | "
             "ratio (native/coopgen) | regs coopgen/native | outputs equal |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['case']} | 2^{r['n'].bit_length() - 1} {r['dtype']} | "
                     f"{r['coopgen_ms']:.4f} | {r['native_ms']:.4f} | {r['coopgen_GBps']:.0f} | "
                     f"{r['native_GBps']:.0f} | **{r['ratio']:.3f}** | "
                     f"{r['coopgen_regs']}/{r['native_regs']} | {r['same_output']} |")
    for name, why in (skipped or {}).items():
        lines.append(f"| {name} | not run: {why} | | | | | | | |")
    text = "\n".join(lines)
    print(text)
    return text


# --- compile time ---------------------------------------------------------------------------

def compile_one(name: str) -> dict:
    """First launch of one kernel in this fresh process."""
    import numpy as np
    from coopgen.codegen import nvrtc
    cuda = compiler()

    case = COMPILE_CASES[name]
    kernel = case.make(cache=os.environ.get("COOPGEN_BENCH_KERNEL_CACHE") == "1")
    args = case.device_args(np.random.default_rng(), tiles=64)
    cuda.synchronize()
    t0 = time.perf_counter()
    kernel[64, case.threads](*args)
    cuda.synchronize()
    first = time.perf_counter() - t0
    compiles = nvrtc.compile_count()
    hits = nvrtc.cache_hit_count()
    # Then two different new kernels in the same process, each a second after the previous
    # launch: what further kernels cost once numba is set up. The process's second NVRTC
    # compile also builds NVRTC's PCH of the CUB headers, which the third one uses.
    later = []
    more = name in CASES and os.environ.get("COOPGEN_BENCH_LATER") == "1"
    for other_name in (("merge_sort", "warp_scan") if more else ()):
        time.sleep(1.0)
        other = CASES[other_name]
        kernel2 = other.make(cache=False)
        args2 = other.device_args(np.random.default_rng(), tiles=64)
        cuda.synchronize()
        t1 = time.perf_counter()
        kernel2[64, other.threads](*args2)
        cuda.synchronize()
        later.append(time.perf_counter() - t1)
    return {"case": name, "first_launch_s": first, "nvrtc_compiles": compiles,
            "cache_hits": hits, "later_kernels_s": later}


STATES = ("cold", "warm", "cached 1st", "cached")


def compile_rows(names, repeats: int = COMPILE_REPEATS) -> list[dict]:
    """Each state measured ``repeats`` times (fresh cache directories each time), median kept:
    single first-launch times vary by ~0.2 s from process to process."""
    import statistics

    rows = []
    for name in names:
        samples = {state: [] for state in STATES}
        row = {"case": name}
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, COOPGEN_CACHE_DIR=cache,
                           NUMBA_CACHE_DIR=os.path.join(cache, "numba"))
                for state in STATES:
                    run_env = dict(env, COOPGEN_BENCH_KERNEL_CACHE="1" if "cached" in state
                                   else "0", COOPGEN_BENCH_LATER="1" if state == "cold" else "0")
                    out = subprocess.run([sys.executable, __file__, "compile-one", name],
                                         env=run_env, capture_output=True, encoding="utf-8", errors="replace")
                    if out.returncode:
                        raise RuntimeError(out.stderr[-3000:])
                    r = json.loads(out.stdout.strip().splitlines()[-1])
                    samples[state].append(r["first_launch_s"])
                    row[f"{state} nvrtc"] = r["nvrtc_compiles"]
                    if state == "cold" and r["later_kernels_s"]:
                        samples.setdefault("2nd kernel", []).append(r["later_kernels_s"][0])
                        samples.setdefault("3rd kernel", []).append(r["later_kernels_s"][1])
        for state, times in samples.items():
            row[state] = statistics.median(times)
            row[f"{state} samples"] = times
        rows.append(row)
    return rows


def print_compile(rows) -> str:
    lines = ["| kernel | cold s (target 1.0) | NVRTC compiles | warm s (target 0.3) | "
             "NVRTC compiles | cache=True, 2nd process s | then 2nd / 3rd new kernel s |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        later = (f"{r['2nd kernel']:.3f} / {r['3rd kernel']:.3f}" if "2nd kernel" in r
                 else "-")
        lines.append(f"| {r['case']} | {r['cold']:.3f} | {r['cold nvrtc']} | {r['warm']:.3f} | "
                     f"{r['warm nvrtc']} | {r['cached']:.3f} | {later} |")
    text = "\n".join(lines)
    print(text)
    return text


# --- resources without a GPU ----------------------------------------------------------------

def resources(names) -> None:
    """Registers and shared memory of both builds for sm_90, from the linkers' logs."""
    import numpy as np
    from coopgen.linkcheck import link_as_launched, parse_link_log

    native, _, _ = parse_link_log(open(build_native() + ".log", encoding="utf-8").read())
    print(f"{'case':12} {'regs coopgen/native':>20} {'smem coopgen/native':>20}")
    for name in names:
        case = CASES[name]
        if not_run(case):
            print(f"{name:12} not run: {not_run(case)}")
            continue
        if compiler_name() == "cute":  # CuTe DSL's PTX for sm_90a, through ptxas
            import cute_cases
            functions, entries, _ = parse_link_log(cute_cases.ptxas_log(case))
            # the kernel's lines: ptxas's (registers), then nvJitLink's quoted (shared memory)
            r = max((f for n, f in functions.items() if n.strip("':") == entries[0]),
                    key=lambda f: f.smem)
        else:
            args = (np.empty(1, INPUT_DTYPE.get(name, case.dtype)), np.empty(1, case.dtype),
                    *case.extra_args)
            r = link_as_launched(case.make(), case.threads, *args)
        ref = native[case.native]
        regs, smem = ref.registers, ref.smem
        print(f"{name:12} {f'{r.registers}/{regs}':>20} {f'{r.smem}/{smem}':>20}")


# --- main -----------------------------------------------------------------------------------

def environment(modules=()) -> dict:
    """The run's date, versions and GPU; ``modules``: more packages whose versions count."""
    import importlib

    import numba_cuda
    import numpy as np
    from coopgen.codegen import nvrtc
    from coopgen.model import registry
    info = {"date": time.strftime("%Y-%m-%d"), "python": platform.python_version(),
            "numpy": np.__version__, "numba-cuda": numba_cuda.__version__,
            "nvrtc": ".".join(map(str, nvrtc.nvrtc_version())), "cccl": registry.package().CCCL}
    if compiler_name() != "numba":  # CuTe DSL's package is cutlass (nvidia-cutlass-dsl)
        modules = ({"cute": "cutlass"}.get(compiler_name(), compiler_name()), *modules)
    for name in modules:
        info[name] = importlib.import_module(name).__version__
    try:
        info["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                                      "--format=csv,noheader"], capture_output=True,
                                     encoding="utf-8", errors="replace").stdout.strip()
        info["nvcc"] = subprocess.run(["nvcc", "--version"], capture_output=True,
                                      encoding="utf-8", errors="replace").stdout.strip().splitlines()[-1]
    except OSError:
        pass
    return info


def output_dirs() -> tuple[str, str]:
    """(results folder, charts folder) of a run."""
    out = os.environ.get("COOPGEN_BENCH_OUT")
    from draw import IMG_DIR, RESULTS_DIR
    return (out, out) if out else (RESULTS_DIR, IMG_DIR)


def write_results(what: str, results: dict, md: list[str]) -> None:
    """<what>.json and <what>.md, then the charts when matplotlib imports."""
    results_dir, img_dir = output_dirs()
    os.makedirs(results_dir, exist_ok=True)
    if compiler_name() != "numba":
        what = f"{what}-{compiler_name()}"
    path = os.path.join(results_dir, f"{what}.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(results, f, indent=1, default=str)
        f.write("\n")
    with open(os.path.join(results_dir, f"{what}.md"), "w", encoding="utf-8") as f:
        f.write("\n\n".join(md) + "\n")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed (pip install 'coopgen[bench]'): no charts")
        return
    import draw
    for chart in draw.draw([path], img_dir):
        print(f"wrote {chart}")


def main(argv):
    argv = list(argv)
    if "--compiler" in argv:  # the kernels' compiler: numba (numba-cuda), numba_cuda_mlir, cute
        i = argv.index("--compiler")
        if i + 1 == len(argv):
            raise SystemExit("bench.py: --compiler takes numba, numba_cuda_mlir or cute")
        os.environ["COOPGEN_COMPILER"] = argv[i + 1]
        del argv[i:i + 2]
    what = argv[1] if len(argv) > 1 else "all"
    names = argv[2:]
    if compiler_name() == "cute" and what not in ("runtime", "resources"):
        raise SystemExit(f"bench.py: {what!r} is not measured for CuTe DSL kernels: run "
                         "'runtime' or 'resources' (first_launch.py times their first launch)")
    if what == "compile-one":
        print(json.dumps(compile_one(names[0])))
        return
    if what == "resources":
        resources(names or list(CASES))
        return
    if what == "draw":
        import draw
        draw.main(names)
        return
    if what not in ("all", "runtime", "compile", "apps", "rmsnorm"):
        raise SystemExit(f"bench.py: unknown command {what!r}\n{__doc__}")
    modules = ("torch", "triton") if what == "rmsnorm" else ()
    results, md = {"environment": environment(modules)}, []
    print(json.dumps(results["environment"]))
    if what in ("all", "runtime"):
        names, skipped = runnable(names or list(CASES))
        results["runtime"] = runtime_rows(names)
        results["runtime_not_run"] = skipped
        md.append(print_runtime(results["runtime"], skipped))
    if what in ("all", "compile"):
        results["compile"] = compile_rows(names or list(COMPILE_CASES))
        md.append(print_compile(results["compile"]))
    if what in ("all", "apps"):  # apps.py: the single-pass scan and Mamba's selective scan
        from apps import app_results
        rows, tables = app_results()
        results.update(rows)
        md.extend(tables)
    if what == "rmsnorm":  # not part of "all": it needs PyTorch and Triton
        import rmsnorm
        results["environment"]["L2_bytes"] = rmsnorm.l2_bytes()
        results["rmsnorm"] = rmsnorm.rmsnorm_rows(names)
        md.append(rmsnorm.print_rmsnorm(results["rmsnorm"], results["environment"]))
    write_results(what, results, md)


if __name__ == "__main__":
    main(sys.argv)
