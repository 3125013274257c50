"""Benchmark: coopgen kernels against the same kernels written in CUDA C++ with CUB (nvcc).

    python tools/bench.py              # compile-time table (fresh processes) + run-time table
    python tools/bench.py compile      # only first-launch times, cold and warm cache
    python tools/bench.py runtime      # only kernel times

The three kernels use 256 threads x 16 int32 items per thread:
  sum   striped BlockLoad + BlockReduce::Sum
  scan  warp-transpose load, BlockScan::ExclusiveSum, warp-transpose store
  sort  warp-transpose load, BlockRadixSort::Sort, warp-transpose store
Run-time timing follows METHOD.md: CUDA events around batches of back-to-back launches on a
1 GiB input (so each launch runs long enough to keep the GPU busy), warm-up first, median of
batches, results checked against numpy.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

THREADS, ITEMS = 256, 16
TILE = THREADS * ITEMS
KERNELS = ("sum", "scan", "sort")


def make_kernels(cache: bool = False):
    import numpy as np
    from numba import cuda
    from coopgen import block, local

    @cuda.jit(cache=cache)
    def k_sum(d_in, d_out):
        items = local.array(ITEMS, np.int32)
        block.load(d_in[cuda.blockIdx.x * TILE:], items, algorithm="striped")
        total = block.sum(items)
        if cuda.threadIdx.x == 0:
            d_out[cuda.blockIdx.x] = total

    @cuda.jit(cache=cache)
    def k_scan(d_in, d_out):
        items = local.array(ITEMS, np.int32)
        base = cuda.blockIdx.x * TILE
        block.load(d_in[base:], items, algorithm="warp_transpose")
        block.exclusive_sum(items, items)
        block.store(d_out[base:], items, algorithm="warp_transpose")

    @cuda.jit(cache=cache)
    def k_sort(d_in, d_out):
        items = local.array(ITEMS, np.int32)
        base = cuda.blockIdx.x * TILE
        block.load(d_in[base:], items, algorithm="warp_transpose")
        block.radix_sort_keys(items)
        block.store(d_out[base:], items, algorithm="warp_transpose")

    return {"sum": k_sum, "scan": k_scan, "sort": k_sort}


REFERENCE_CU = r"""
#include <cub/block/block_load.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_store.cuh>
#include <cub/block/block_radix_sort.cuh>
constexpr int T = 256, N = 16, TILE = T * N;

extern "C" __global__ void __launch_bounds__(T) ref_sum(const int* in, int* out) {
  using Load = cub::BlockLoad<int, T, N, cub::BLOCK_LOAD_STRIPED>;
  using Reduce = cub::BlockReduce<int, T>;
  __shared__ typename Reduce::TempStorage ts;
  int items[N];
  Load().Load(in + blockIdx.x * TILE, items);
  int total = Reduce(ts).Sum(items);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}

extern "C" __global__ void __launch_bounds__(T) ref_scan(const int* in, int* out) {
  using Load = cub::BlockLoad<int, T, N, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Scan = cub::BlockScan<int, T>;
  using Store = cub::BlockStore<int, T, N, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  __shared__ union { typename Load::TempStorage l; typename Scan::TempStorage s;
                     typename Store::TempStorage st; } ts;
  int items[N];
  Load(ts.l).Load(in + blockIdx.x * TILE, items);
  __syncthreads();
  Scan(ts.s).ExclusiveSum(items, items);
  __syncthreads();
  Store(ts.st).Store(out + blockIdx.x * TILE, items);
}

extern "C" __global__ void __launch_bounds__(T) ref_sort(const int* in, int* out) {
  using Load = cub::BlockLoad<int, T, N, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Sort = cub::BlockRadixSort<int, T, N>;
  using Store = cub::BlockStore<int, T, N, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  __shared__ union { typename Load::TempStorage l; typename Sort::TempStorage s;
                     typename Store::TempStorage st; } ts;
  int items[N];
  Load(ts.l).Load(in + blockIdx.x * TILE, items);
  __syncthreads();
  Sort(ts.s).Sort(items);
  __syncthreads();
  Store(ts.st).Store(out + blockIdx.x * TILE, items);
}
"""


def expected(name, host_in, tiles):
    import numpy as np
    t = host_in.reshape(tiles, TILE)
    if name == "sum":
        return t.sum(axis=1, dtype=np.int32)
    if name == "scan":
        return (np.cumsum(t, axis=1, dtype=np.int32) - t).ravel()
    return np.sort(t, axis=1).ravel()


# --- compile time: one fresh process per measurement ------------------------------------------

def compile_one(name: str) -> dict:
    """First launch of one kernel in this (fresh) process: compile + launch + sync."""
    import numpy as np
    from numba import cuda
    from coopgen import nvrtc

    t_import = time.perf_counter()
    kernels = make_kernels(cache=os.environ.get("COOPGEN_BENCH_KERNEL_CACHE") == "1")
    d_in = cuda.to_device(np.random.default_rng().integers(-1000, 1000, TILE * 64, np.int32))
    d_out = cuda.device_array(TILE * 64, np.int32)
    cuda.synchronize()
    t0 = time.perf_counter()
    kernels[name][64, THREADS](d_in, d_out)
    cuda.synchronize()
    first = time.perf_counter() - t0
    t1 = time.perf_counter()
    kernels[name][64, THREADS](d_in, d_out)
    cuda.synchronize()
    return {"kernel": name, "first_launch_s": first, "second_launch_s": time.perf_counter() - t1,
            "nvrtc_compiles": nvrtc.compile_count(), "cache_hits": nvrtc.cache_hit_count(),
            "import_to_launch_s": t0 - t_import}


def compile_table() -> list[dict]:
    rows = []
    for name in KERNELS:
        with tempfile.TemporaryDirectory() as cache:
            # cold: nothing cached; warm: coopgen's LTO-IR cache (numba still compiles the
            # kernel); kernel-cached: @cuda.jit(cache=True), second process loads the kernel.
            env = dict(os.environ, COOPGEN_CACHE_DIR=cache,
                       NUMBA_CACHE_DIR=os.path.join(cache, "numba"))
            for state in ("cold", "warm", "kernel-cache 1st", "kernel-cache 2nd"):
                run_env = dict(env, COOPGEN_BENCH_KERNEL_CACHE="1" if "kernel" in state else "0")
                out = subprocess.run([sys.executable, __file__, "compile-one", name],
                                     env=run_env, capture_output=True, text=True)
                if out.returncode:
                    raise RuntimeError(out.stderr[-3000:])
                row = json.loads(out.stdout.strip().splitlines()[-1])
                row["cache"] = state
                rows.append(row)
    print(f"\n{'kernel':6} {'cache':16} {'first launch s':>14} {'NVRTC compiles':>14} "
          f"{'cache hits':>10}")
    for r in rows:
        print(f"{r['kernel']:6} {r['cache']:16} {r['first_launch_s']:14.3f} "
              f"{r['nvrtc_compiles']:14d} {r['cache_hits']:10d}")
    return rows


# --- run time ----------------------------------------------------------------------------------

def _reference_module():
    import cupy
    from coopgen import registry
    inc = str(registry.include_dir())
    d = tempfile.mkdtemp(prefix="coopgen-bench-")  # cupy loads the cubin lazily: keep it
    src, cubin = os.path.join(d, "ref.cu"), os.path.join(d, "ref.cubin")
    with open(src, "w") as f:
        f.write(REFERENCE_CU)
    subprocess.run(["nvcc", "-O3", "-arch=sm_90", "-cubin", f"-I{inc}", "-o", cubin, src],
                   check=True)
    # The same C++ through NVRTC (PTX, JIT-compiled by the driver): separates what NVRTC's
    # code generation costs from what coopgen's calling path costs.
    from coopgen import nvrtc
    ptx = os.path.join(d, "ref_nvrtc.ptx")
    with open(ptx, "w") as f:
        f.write(nvrtc.compile_ptx(REFERENCE_CU))
    return cupy.RawModule(path=cubin), cupy.RawModule(path=ptx)


def _time(launch, batches=15, per_batch=10) -> float:
    from numba import cuda
    for _ in range(3):
        launch()
    cuda.synchronize()
    times = []
    for _ in range(batches):
        start, stop = cuda.event(), cuda.event()
        start.record()
        for _ in range(per_batch):
            launch()
        stop.record()
        stop.synchronize()
        times.append(cuda.event_elapsed_time(start, stop) / per_batch)
    times.sort()
    return times[len(times) // 2], times[0], times[-1]


def runtime_table(tiles: int = 1 << 16) -> list[dict]:
    import cupy
    import numpy as np
    from numba import cuda

    kernels = make_kernels()
    ref, ref_nvrtc = _reference_module()
    n = tiles * TILE
    rows = []
    for name in KERNELS:
        host = np.random.default_rng().integers(-(1 << 20), 1 << 20, n, dtype=np.int32)
        d_in = cupy.asarray(host)
        out_len = tiles if name == "sum" else n
        d_out_py = cupy.full(out_len, -7, dtype=np.int32)
        d_out_ref = cupy.full(out_len, -7, dtype=np.int32)
        k = kernels[name]
        f = ref.get_function(f"ref_{name}")
        g = ref_nvrtc.get_function(f"ref_{name}")
        d_out_rtc = cupy.full(out_len, -7, dtype=np.int32)
        rtc = lambda: g((tiles,), (THREADS,), (d_in, d_out_rtc))  # noqa: E731
        # numba device-array views: numba's per-launch cost with cupy arrays is large enough
        # to starve the GPU between launches, which would time the host instead.
        nb_in, nb_out = cuda.as_cuda_array(d_in), cuda.as_cuda_array(d_out_py)
        py = lambda: k[tiles, THREADS](nb_in, nb_out)  # noqa: E731
        cx = lambda: f((tiles,), (THREADS,), (d_in, d_out_ref))  # noqa: E731
        py()
        cx()
        rtc()
        cuda.synchronize()
        want = expected(name, host, tiles)
        ok_py = bool(np.array_equal(cupy.asnumpy(d_out_py), want))
        ok_cx = bool(np.array_equal(cupy.asnumpy(d_out_ref), want))
        ok_rtc = bool(np.array_equal(cupy.asnumpy(d_out_rtc), want))
        t_rtc = min(_time(rtc)[0], _time(rtc)[0])
        # Interleave the two, twice, so drift affects both equally.
        tp1, tc1, tp2, tc2 = _time(py), _time(cx), _time(py), _time(cx)
        t_py, t_cx = min(tp1[0], tp2[0]), min(tc1[0], tc2[0])
        regs = next(iter(k.get_regs_per_thread().values()))
        ref_regs = f.num_regs
        rows.append({"kernel": name, "coopgen_ms": t_py, "nvcc_cub_ms": t_cx,
                     "nvrtc_cub_ms": t_rtc, "speed_vs_nvcc": t_cx / t_py,
                     "speed_vs_nvrtc_cpp": t_rtc / t_py, "correct": ok_py and ok_cx and ok_rtc,
                     "nvrtc_regs": g.num_regs,
                     "coopgen_regs": regs, "nvcc_regs": ref_regs,
                     "coopgen_spread": [tp1[1], tp1[2]],
                     "nvcc_spread": [tc1[1], tc1[2]]})
    print(f"\n{'kernel':6} {'coopgen ms':>10} {'nvcc+CUB':>9} {'NVRTC C++':>9} "
          f"{'vs nvcc':>8} {'vs NVRTC':>8} {'correct':>7} {'regs coopgen/nvcc/nvrtc':>24}")
    for r in rows:
        print(f"{r['kernel']:6} {r['coopgen_ms']:10.4f} {r['nvcc_cub_ms']:9.4f} "
              f"{r['nvrtc_cub_ms']:9.4f} {r['speed_vs_nvcc']:8.4f} {r['speed_vs_nvrtc_cpp']:8.4f} "
              f"{str(r['correct']):>7} {r['coopgen_regs']:>8}/{r['nvcc_regs']}/{r['nvrtc_regs']}")
    return rows


def main(argv):
    what = argv[1] if len(argv) > 1 else "all"
    if what == "compile-one":
        print(json.dumps(compile_one(argv[2])))
        return
    results = {}
    if what in ("all", "compile"):
        results["compile"] = compile_table()
    if what in ("all", "runtime"):
        results["runtime"] = runtime_table()
    out = os.environ.get("OUT")
    if out:
        with open(os.path.join(out, "bench.json"), "w") as f:
            json.dump(results, f, indent=1, default=str)


if __name__ == "__main__":
    main(sys.argv)
