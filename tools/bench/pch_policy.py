"""When should a process build NVRTC's precompiled header (PCH)? Measured without a GPU.

    python tools/bench/pch_policy.py [--rounds N] [--kernels K]

Each round runs one fresh process per policy, with an empty shim cache, that compiles the
benchmark's coopgen kernels one after another ahead of time (``cuda.compile_all`` for sm_90,
as a launch would) and reports, per kernel, the NVRTC compile's wall and CPU time. Policies:

* ``off``    -- never ``-pch``;
* ``second`` -- the first compile plain, every later one with ``-pch`` (the second builds it);
* ``first``  -- every compile with ``-pch`` (the first builds it).

CPU time is the process's (all threads), so the table means something on a loaded machine;
wall time is what a user waits for where the machine is idle.
"""
from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

POLICIES = {
    "off": lambda compiles_before: False,
    "second": lambda compiles_before: compiles_before > 0,
    "first": lambda compiles_before: True,
}
KERNELS = ("sum", "scan", "sort", "merge_sort", "warp_scan", "sum_f64")


def one_process(policy: str, kernels: list[str]) -> list[dict]:
    from cases import CASES
    from numba import cuda
    from numba.cuda.np import numpy_support

    import coopgen
    from coopgen.codegen import nvrtc

    choose = POLICIES[policy]
    nvrtc._use_pch = lambda kind: kind == "ltoir" and choose(nvrtc.compile_count())
    timings = []
    original = nvrtc._nvrtc_compile

    def timed(*args, **kwargs):
        w, c = time.perf_counter(), time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            timings.append((time.perf_counter() - w, time.process_time() - c,
                            "-pch" in args[1]))

    nvrtc._nvrtc_compile = timed
    rows = []
    for name in kernels:
        case = CASES[name]
        kernel = case.make()
        item = numpy_support.from_dtype(case.dtype)
        sig = (item[::1], item[::1])
        timings.clear()
        w = time.perf_counter()
        with coopgen.block_shape(case.threads):
            pieces, _ = cuda.compile_all(kernel.py_func, sig, device=False, abi="numba",
                                         cc=(9, 0), output="ltoir")
        for piece in pieces:  # the shim bundle compiles when the linker reads it
            getattr(piece, "data", None)
        rows.append({"kernel": name, "total_wall": time.perf_counter() - w,
                     "nvrtc_wall": sum(t[0] for t in timings),
                     "nvrtc_cpu": sum(t[1] for t in timings),
                     "pch": any(t[2] for t in timings)})
    return rows


def main(argv):
    if len(argv) > 1 and argv[1] == "one":
        print(json.dumps(one_process(argv[2], argv[3].split(","))))
        return
    rounds = int(argv[argv.index("--rounds") + 1]) if "--rounds" in argv else 3
    count = int(argv[argv.index("--kernels") + 1]) if "--kernels" in argv else len(KERNELS)
    kernels = list(KERNELS[:count])
    results = {p: [] for p in POLICIES}
    for _ in range(rounds):
        for policy in POLICIES:
            with tempfile.TemporaryDirectory() as cache:
                env = dict(os.environ, COOPGEN_CACHE_DIR=cache)
                out = subprocess.run([sys.executable, __file__, "one", policy, ",".join(kernels)],
                                     env=env, capture_output=True, encoding="utf-8", errors="replace")
            if out.returncode:
                sys.exit(out.stderr[-3000:])
            results[policy].append(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"NVRTC time per new kernel of a fresh process, median of {rounds} "
          f"(CPU s / wall s; * = compiled with -pch)\n")
    print("| policy | " + " | ".join(f"{i + 1}. {k}" for i, k in enumerate(kernels))
          + " | sum of all |")
    print("|---" * (len(kernels) + 2) + "|")
    for policy, runs in results.items():
        cells = []
        for i in range(len(kernels)):
            cpu = statistics.median(r[i]["nvrtc_cpu"] for r in runs)
            wall = statistics.median(r[i]["nvrtc_wall"] for r in runs)
            cells.append(f"{cpu:.2f} / {wall:.2f}{'*' if runs[0][i]['pch'] else ''}")
        total = statistics.median(sum(x["nvrtc_cpu"] for x in r) for r in runs)
        print(f"| {policy} | " + " | ".join(cells) + f" | {total:.2f} CPU s |")


if __name__ == "__main__":
    main(sys.argv)
