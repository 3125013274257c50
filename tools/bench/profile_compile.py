"""Where a kernel's first launch spends its time, in fresh processes (needs a GPU).

    python tools/bench/profile_compile.py ["plain numba"|sum|scan|sort ...] [--top N]

For each cache state (cold: nothing cached; warm: coopgen's LTO-IR cache filled by an earlier
process; kernel cache: ``@cuda.jit(cache=True)`` loaded from disk by a second process) it runs
one fresh process that imports everything, makes the input, then profiles only the first
launch. It prints the wall time split by stage (NVRTC, NVVM, nvJitLink, module load, the
rest: numba's typing, lowering and start-up) and the functions with the most cumulative time.
"plain numba" is a numba kernel without coopgen: the floor every first launch pays.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from cases import COMPILE_CASES  # noqa: E402

STAGES = {  # label -> (module, qualified attribute) wrapped with a timer
    "nvrtc": ("coopgen.codegen.nvrtc", "_nvrtc_compile"),
    "nvvm": ("numba.cuda.cudadrv.nvvm", "compile_ir"),
    "nvjitlink": ("numba.cuda.cudadrv.driver", "_Linker.complete"),
    "module load": ("numba.cuda.cudadrv.driver", "Context.create_module_image"),
}


def _wrap_stages(totals):
    import importlib

    for label, (mod_name, attr) in STAGES.items():
        mod = importlib.import_module(mod_name)
        owner, name = (mod, attr) if "." not in attr else (getattr(mod, attr.split(".")[0]),
                                                           attr.split(".")[1])
        orig = getattr(owner, name, None)
        if orig is None:
            continue

        def timed(*a, __orig=orig, __label=label, **k):
            t = time.perf_counter()
            try:
                return __orig(*a, **k)
            finally:
                totals[__label] = totals.get(__label, 0.0) + time.perf_counter() - t

        setattr(owner, name, timed)


def profile_one(name: str, top: int) -> dict:
    import cProfile
    import io
    import pstats

    import numpy as np
    from numba import cuda

    totals: dict = {}
    _wrap_stages(totals)
    cache = os.environ.get("COOPGEN_BENCH_KERNEL_CACHE") == "1"
    case = COMPILE_CASES[name]
    kernel, threads = case.make(cache=cache), case.threads
    args = case.device_args(np.random.default_rng(1), tiles=64)
    cuda.synchronize()
    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    kernel[64, threads](*args)
    cuda.synchronize()
    prof.disable()
    wall = time.perf_counter() - t0
    s = io.StringIO()
    pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(top)
    return {"wall_s": wall, "stages": totals, "profile": s.getvalue()}


def main(argv):
    if len(argv) > 2 and argv[1] == "one":
        print(json.dumps(profile_one(argv[2], int(argv[3]))))
        return
    top = int(argv[argv.index("--top") + 1]) if "--top" in argv else 25
    names = [a for a in argv[1:] if not a.startswith("--") and a != str(top)]
    names = names or list(COMPILE_CASES)
    for name in names:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, COOPGEN_CACHE_DIR=cache,
                       NUMBA_CACHE_DIR=os.path.join(cache, "numba"))
            for state in ("cold", "warm", "kernel-cache 1st", "kernel-cache 2nd"):
                run_env = dict(env, COOPGEN_BENCH_KERNEL_CACHE="1" if "kernel" in state else "0")
                out = subprocess.run([sys.executable, __file__, "one", name, str(top)],
                                     env=run_env, capture_output=True, encoding="utf-8", errors="replace")
                if out.returncode:
                    print(out.stderr[-3000:])
                    continue
                r = json.loads(out.stdout.strip().splitlines()[-1])
                stages = ", ".join(f"{k} {v:.3f}" for k, v in r["stages"].items())
                rest = r["wall_s"] - sum(r["stages"].values())
                print(f"\n=== {name} / {state}: first launch {r['wall_s']:.3f} s "
                      f"({stages}, rest {rest:.3f})")
                if state in ("cold", "kernel-cache 2nd", "warm"):
                    print(r["profile"])


if __name__ == "__main__":
    main(sys.argv)
