"""Command line: ``python -m tools.fuzz --configs N --seed S [--workers W]``."""
from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import time

from . import runner, space


#: What a backend's kernels may call: why an overload is not drawn on it, whether cuda.coop's
#: group-first calls are, and the item dtypes it draws by default (None: every family's).
BACKENDS = {"numba-cuda": (None, True, None),
            "mlir": (None, True, (*space.ALL_DTYPES, "record")),  # no half or complex items yet
            "cute": ("cute", True, "cute")}


def backend_profile(name: str):
    """(skip, group_calls, dtypes, refuse) of a backend (tools.fuzz.cute imports no
    cutlass)."""
    skip, group_calls, dtypes = BACKENDS[name]
    if skip == "cute":
        from . import cute
        return cute.skip_reason, group_calls, cute.DTYPES, cute.refused
    return skip, group_calls, dtypes, None


def _list_overloads(skip, group_calls: bool, dtypes, refuse=None) -> int:
    drawn = skipped = 0
    for cls, m, fam, reason in space.overloads(skip):
        if fam is not None and not space.dtype_pool(fam, dtypes):
            fam, reason = None, f"none of its dtypes is drawn here ({', '.join(fam.dtypes)})"
        if fam is None:
            skipped += 1
            print(f"SKIP {cls.name}::{m.signature}: {reason}")
        else:
            drawn += 1
            print(f"DRAW {cls.name}::{m.signature} via "
                  f"{', '.join(space.surfaces(cls, m, group_calls))}")
    if not group_calls:
        print("SKIP cuda.coop's group-first calls (coop.sum(coop.this_block(), x), ...): not "
              "callable in this backend's kernels")
    if refuse is not None:
        print(f"SKIP {refuse.what}")
    if dtypes is not None:
        print(f"items drawn: {', '.join(dtypes)}")
    print(f"{drawn} overloads drawn, {skipped} skipped")
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__)
    ap.add_argument("--configs", type=int, default=200, help="configurations to draw")
    ap.add_argument("--seed", type=int, default=None, help="seed of the draw (default: random)")
    ap.add_argument("--workers", type=int, default=1, help="processes (one CUDA context each)")
    ap.add_argument("--batch", type=int, default=None,
                    help="configurations per kernel (default 8; cute: 40, its compiles cost "
                         "more per kernel)")
    ap.add_argument("--only", default=None, help="overloads whose 'Class::Signature' contains this")
    ap.add_argument("--surface", default=None,
                    help="call every configuration through this surface: 'group' (cuda.coop's "
                         "group-first calls), 'faithful', or a Pythonic name")
    ap.add_argument("--dtypes", default=None,
                    help="draw items of these dtypes only, e.g. float16,bfloat16,complex64,complex128")
    ap.add_argument("--block", default=None,
                    help="one block shape for every configuration, e.g. 128 or 32,4")
    ap.add_argument("--compile-only", action="store_true",
                    help="compile and link for sm_90 (cute: sm_90a, or CUTE_DSL_ARCH) without a "
                         "GPU; check nothing")
    ap.add_argument("--repro", default=None, help="run one configuration (its JSON line)")
    ap.add_argument("--repro-file", default=None,
                    help="run the configurations of this file (one JSON line each)")
    ap.add_argument("--list", action="store_true", help="list drawn and skipped overloads")
    ap.add_argument("--json", default=None, help="write every result to this file")
    ap.add_argument("--time-limit", type=float, default=None,
                    help="stop after this many seconds (workers > 1); unfinished kernels are left out")
    ap.add_argument("--quiet", action="store_true", help="print only failures and the summary")
    ap.add_argument("--backend", choices=tuple(BACKENDS), default="numba-cuda",
                    help="the compiler the kernels are written for (numba-cuda-mlir: mlir; "
                         "CuTe DSL: cute)")
    a = ap.parse_args(argv)
    os.environ["COOPGEN_COMPILER"] = {"mlir": "numba_cuda_mlir", "cute": "cute"}.get(a.backend,
                                                                                  "numba")
    skip, group_calls, backend_dtypes, refuse = backend_profile(a.backend)
    if a.list:
        return _list_overloads(skip, group_calls, backend_dtypes, refuse)
    if a.surface == "group" and not group_calls:
        ap.error(f"--surface group: {a.backend} kernels make no cuda.coop group-first calls")
    if a.repro or a.repro_file:
        lines = [a.repro] if a.repro else open(a.repro_file, encoding="utf-8").read().split("\n")
        configs = [space.Config.from_json(ln) for ln in lines if ln.strip()]
        seed = None
    else:
        seed = a.seed if a.seed is not None else random.SystemRandom().randrange(2**31)
        block = tuple(int(x) for x in a.block.split(",")) if a.block else None
        dtypes = a.dtypes.split(",") if a.dtypes else backend_dtypes
        configs = space.draw(a.configs, seed, a.only, block, dtypes, a.surface, skip,
                             group_calls, refuse)
    batches = runner.batches_of(configs, a.batch or (40 if a.backend == "cute" else 8))
    print(f"seed {seed}: {len(configs)} configurations in {len(batches)} kernels, "
          f"{a.workers} worker(s){', compile only' if a.compile_only else ''}", flush=True)
    t0 = time.time()

    seen = collections.Counter()

    def show(r):
        seen[r.status] += 1
        if sum(seen.values()) % 500 == 0:
            print(f"progress: {sum(seen.values())}/{len(configs)} in {time.time() - t0:.0f} s: "
                  f"{dict(seen)}", flush=True)
        if r.status not in ("ok", "compiled") or not a.quiet:
            print(r.line() if r.status not in ("ok", "compiled") else
                  f"{r.status.upper()} {r.config.label()} [{r.config.surface}]", flush=True)

    if a.workers > 1:
        results = runner.run_parallel(batches, a.workers, a.compile_only, on_result=show,
                                      time_limit=a.time_limit)
    else:
        results = []
        for b in batches:
            for r in runner.run_batch(b, a.compile_only):
                show(r)
                results.append(r)
    wall = time.time() - t0
    counts = collections.Counter(r.status for r in results)
    skipped = [(c.name, m.signature, why) for c, m, fam, why in space.overloads(skip)
               if fam is None]
    print(f"\n{len(results)} configurations in {wall:.1f} s: " +
          ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) +
          f" (seed {seed}); {len(skipped)} overloads skipped (--list says why)")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump({"seed": seed, "wall_s": wall, "counts": dict(counts),
                       "results": [{"status": r.status, "detail": r.detail,
                                    "config": json.loads(r.config.to_json())} for r in results],
                       "skipped": skipped}, f)
    return 0 if counts.keys() <= {"ok", "compiled"} else 1


if __name__ == "__main__":
    sys.exit(main())
