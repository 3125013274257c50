"""First-launch times of CuTe DSL kernels calling coopgen, beside a plain CuTe DSL kernel.

Each kernel is measured in fresh processes; all have the same launch shape.

    python tools/bench/first_launch.py [--repeats N] [--json out.json]   # on a GPU
    python tools/bench/first_launch.py --no-launch    # no GPU: import + compile (CUTE_DSL_ARCH)

The kernels, all 256 threads x 16 int32 items a thread, one tile a block, 64 blocks:

- ``plain``: CuTe DSL alone, no coopgen: each thread adds 1 to its 16 items (a copy);
- ``block.sum``: bench.py's ``sum`` kernel (cute_cases.block_sum): striped load, BlockReduce;
- ``block.radix_sort_keys``: bench.py's ``sort`` kernel: load, BlockRadixSort, store.

Each process times, one after the other: ``import`` (cutlass and cutlass.cute; numpy is
imported before), ``import coopgen`` (coopgen and cute_cases: the coopgen kernels' processes
only; coopgen imports the numba backends it finds installed), and ``first call``: the
``@cute.jit`` function called on device pointers, as a CuTe DSL program launches a kernel, and
a synchronize. That call traces the kernel, compiles it (coopgen's clang compile of the shims,
or its cached bitcode; libNVVM and ptxas) or loads it from CuTe DSL's file cache, loads the
module and runs it. The GPU context and the inputs are made before it, untimed; the output is
checked against numpy. Without a GPU (``--no-launch``) the second column is ``cute.compile``
instead, which CuTe DSL never caches on disk.

States: ``cold`` has empty coopgen and CuTe DSL caches (COOPGEN_CACHE_DIR and
CUTE_DSL_CACHE_DIR of a new folder); ``warm`` is a second process on the caches the cold one
filled. Each state is measured ``--repeats`` times (3), each time with new folders, and the
median of each column is kept; the clang column is the shim compiles the process ran.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = ("plain", "block.sum", "block.radix_sort_keys")
#: The bench case each coopgen kernel is (cases.CASES), launched on BLOCKS tiles.
CASE_OF = {"block.sum": "sum", "block.radix_sort_keys": "sort"}
BLOCKS = 64
STATES = ("cold", "warm")
COLUMNS = ("import", "coopgen", "first", "total")


def plain_copy(threads: int, items: int, blocks: int):
    """A CuTe DSL kernel without coopgen, of the bench kernels' launch: y = x + 1 over a tile
    a block, each thread's items strided by the block (coalesced)."""
    import cutlass
    import cutlass.cute as cute
    tile = threads * items

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        src = cute.local_tile(x, (tile,), (bid,))
        dst = cute.local_tile(y, (tile,), (bid,))
        for i in cutlass.range_constexpr(items):
            dst[i * threads + tid] = src[i * threads + tid] + cutlass.Int32(1)

    @cute.jit
    def launch(x: cute.Pointer, y: cute.Pointer):
        kernel(cute.make_tensor(x, cute.make_layout(blocks * tile)),
               cute.make_tensor(y, cute.make_layout(blocks * tile))).launch(
            grid=(blocks, 1, 1), block=(threads, 1, 1))
    return launch


def one(name: str, run: bool) -> dict:
    """This process's import and first call of ``name`` (seconds)."""
    sys.path.insert(0, HERE)
    from cases import CASES, ITEMS, THREADS  # numpy and the case table: not timed
    t0 = time.perf_counter()
    import cutlass
    import cutlass.cute as cute
    import numpy as np
    from cutlass.base_dsl.enums import AddressSpace
    from cutlass.cute.runtime import make_ptr
    t_import = time.perf_counter() - t0
    if name != "plain":  # the plain kernel's process imports no coopgen
        import cute_cases
        from coopgen.cute import clang
        case = CASES[CASE_OF[name]]
    t_coopgen = time.perf_counter() - t0 - t_import

    def pointer(_, address=0):
        return make_ptr(cutlass.Int32, address, AddressSpace.gmem, assumed_align=16)

    if name == "plain":
        launch = plain_copy(THREADS, ITEMS, BLOCKS)
        n_in = n_out = BLOCKS * THREADS * ITEMS
        want = lambda x: x + 1  # noqa: E731
    else:
        n_in = BLOCKS * case.tile
        n_out = case.out_len(n_in)
        want = case.expected
        launch = cute_cases.host(cute_cases.KERNELS[case.name](case.dtype), BLOCKS,
                                 case.threads, n_in, n_out, (case.dtype, case.dtype))
    rng = np.random.default_rng(5)
    x = rng.integers(-1000, 1000, n_in, dtype=np.int32)
    if run:  # the context and the inputs first, untimed
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples"))
        from cute_sort_tiles import DeviceArray, current_device
        device = current_device()
        d_in, d_out = DeviceArray(device, x), DeviceArray(device, np.zeros(n_out, np.int32))

    args = (pointer(np.int32, d_in.address), pointer(np.int32, d_out.address)) if run else \
        (pointer(np.int32), pointer(np.int32))
    t1 = time.perf_counter()
    if run:  # trace, compile or the caches, load, launch
        launch(*args)
        device.sync()
    else:
        cute.compile(launch, *args)
    t_first = time.perf_counter() - t1
    if run and not np.array_equal(d_out.get(), want(x)):
        raise AssertionError(f"{name}: the first launch's output differs from numpy's")
    return {"kernel": name, "import": t_import, "coopgen": t_coopgen, "first": t_first,
            "total": t_import + t_coopgen + t_first,
            "clang": clang.compile_count() if name != "plain" else 0,
            "clang_cache_hits": clang.cache_hit_count() if name != "plain" else 0}


def measure(names, repeats: int, run: bool) -> list[dict]:
    rows = []
    for name in names:
        samples = {state: [] for state in STATES}
        for _ in range(repeats):
            with tempfile.TemporaryDirectory(prefix="coopgen-first-launch-") as cache:
                env = dict(os.environ, COOPGEN_CACHE_DIR=os.path.join(cache, "coopgen"),
                           CUTE_DSL_CACHE_DIR=os.path.join(cache, "cute"))
                for state in STATES:  # warm: the caches the cold process filled
                    cmd = [sys.executable, __file__, "--one", name,
                           *(() if run else ("--no-launch",))]
                    out = subprocess.run(cmd, env=env, capture_output=True, encoding="utf-8",
                                         errors="replace")
                    if out.returncode:
                        raise RuntimeError(f"{name} ({state}):\n{out.stderr[-3000:]}")
                    samples[state].append(json.loads(out.stdout.strip().splitlines()[-1]))
        row = {"kernel": name}
        for state, runs in samples.items():
            for col in (*COLUMNS, "clang"):
                row[f"{state} {col}"] = statistics.median(r[col] for r in runs)
            row[f"{state} samples"] = runs
        rows.append(row)
        print(f"{name}: done", file=sys.stderr, flush=True)
    return rows


def table(rows, run: bool) -> str:
    heads = {"import": "import s", "coopgen": "import coopgen s",
             "first": "first call s" if run else "cute.compile s",
             "total": "total s"}
    head = [f"{state}: {heads[c]}" for state in STATES for c in COLUMNS] + ["clang cold/warm"]
    lines = ["| kernel | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
    for r in rows:
        cells = [f"{r[f'{state} {c}']:.2f}" for state in STATES for c in COLUMNS]
        cells.append(f"{r['cold clang']:.0f}/{r['warm clang']:.0f}")
        lines.append(f"| {r['kernel']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def environment() -> dict:
    import platform

    import cutlass
    info = {"date": time.strftime("%Y-%m-%d"), "python": platform.python_version(),
            "nvidia-cutlass-dsl": cutlass.__version__, "cpus": os.cpu_count()}
    try:
        info["gpu"] = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                                      "--format=csv,noheader"], capture_output=True,
                                     encoding="utf-8", errors="replace").stdout.strip()
    except OSError:
        pass
    return info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kernels", nargs="*", help=f"of {', '.join(KERNELS)} (all by default)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-launch", action="store_true",
                    help="compile only (no GPU: set CUTE_DSL_ARCH, e.g. sm_90a)")
    ap.add_argument("--json", help="write the rows and the environment here")
    ap.add_argument("--one", help=argparse.SUPPRESS)  # a measuring child process
    args = ap.parse_args(argv)
    run = not args.no_launch
    if args.one:
        print(json.dumps(one(args.one, run)))
        return 0
    unknown = [k for k in args.kernels if k not in KERNELS]
    if unknown:
        ap.error(f"unknown kernels {unknown}: the kernels are {', '.join(KERNELS)}")
    rows = measure(args.kernels or KERNELS, args.repeats, run)
    env = environment()
    print(json.dumps(env))
    print(table(rows, run))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"environment": env, "first_launch": rows}, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
