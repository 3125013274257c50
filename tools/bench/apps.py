"""Benchmarks of the two application kernels in ``examples/`` against their baselines.

- ``single_pass_scan``: a device-wide exclusive sum of 2^28 int32 in one coopgen kernel, against
  ``cub::DeviceScan::ExclusiveSum`` built by nvcc and against CuPy's ``cumsum``.
- ``mamba``: the selective-scan forward pass at Mamba-130m shapes (D = 1536, N = 16, L = 2048,
  batch 2, 4 and 8, z gating and softplus on) against the same kernel written in CUDA C++ with
  CUB (``APPS_CU`` below, built by nvcc) and against a plain PyTorch loop over the recurrence.

Every output is checked before timing: the scan against numpy, exactly; the Mamba kernels
against each other and, on 32 channels, against the float64 numpy reference (rtol 1e-3).
Timing is bench.py's: CUDA events, warm-up, median batch, interleaved rounds, fastest median.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples"))

SCAN_N = 1 << 28
MAMBA_SHAPE = dict(dim=1536, n_states=16, length=2048)
MAMBA_BATCHES = (2, 4, 8)
TORCH_RUNS = 5  # the PyTorch loop takes ~0.1 s a call: a median of a few calls

#: The C++ baselines. cub::DeviceScan::ExclusiveSum through two host entry points (temp size,
#: then the scan); the Mamba kernel is the coopgen example's structure written with CUB.
APPS_CU = r"""
#include <cub/device/device_scan.cuh>
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cub/block/block_scan.cuh>

extern "C" int scan_temp_bytes(int n, size_t* bytes) {
  return (int)cub::DeviceScan::ExclusiveSum(nullptr, *bytes, (const int*)nullptr, (int*)nullptr, n);
}
extern "C" int scan_exclusive_sum(const int* in, int* out, int n, void* temp, size_t bytes) {
  return (int)cub::DeviceScan::ExclusiveSum(temp, bytes, in, out, n);
}

constexpr int MT = 128, MI = 16, CHUNK = MT * MI, MAX_STATES = 64;
constexpr float LOG2E = 1.4426950408889634f;

struct SsmCombine {  // (a1, b1) o (a2, b2) = (a1 a2, a2 b1 + b2)
  __device__ float2 operator()(const float2& x, const float2& y) const {
    return make_float2(x.x * y.x, y.x * x.y + y.y);
  }
};
struct CarryState {  // prefix callback: the state before the chunk, then advance it
  float2 state;
  __device__ float2 operator()(float2 chunk_aggregate) {
    float2 before = state;
    state = SsmCombine()(state, chunk_aggregate);
    return before;
  }
};

template <bool HAS_Z, bool SOFTPLUS>
__global__ void __launch_bounds__(MT) selective_scan_fwd(
    const float* u, const float* delta, const float* A, const float* B, const float* C,
    const float* D, const float* z, const float* delta_bias, float* out, float* last_state,
    int dim, int n_states, int length) {
  using Load = cub::BlockLoad<float, MT, MI, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Store = cub::BlockStore<float, MT, MI, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  using Scan = cub::BlockScan<float2, MT, cub::BLOCK_SCAN_WARP_SCANS>;
  __shared__ union { typename Load::TempStorage load; typename Store::TempStorage store;
                     typename Scan::TempStorage scan; } ts;
  __shared__ float2 running[MAX_STATES];
  const int d = blockIdx.x, b = blockIdx.y, t = threadIdx.x;
  const size_t row = ((size_t)b * dim + d) * length;
  float u_vals[MI], dt_vals[MI], z_vals[MI], b_vals[MI], c_vals[MI], y_vals[MI];
  float2 records[MI];
  const float bias = delta_bias[d], skip = D[d];
  for (int start = 0; start < length; start += CHUNK) {
    const int valid = min(CHUNK, length - start);
    Load(ts.load).Load(u + row + start, u_vals, valid, 0.f);
    __syncthreads();
    Load(ts.load).Load(delta + row + start, dt_vals, valid, 0.f);
    for (int i = 0; i < MI; ++i) {
      float dt = dt_vals[i] + bias;
      dt_vals[i] = SOFTPLUS ? (dt > 20.f ? dt : log1pf(expf(dt))) : dt;
      y_vals[i] = skip * u_vals[i];
    }
    for (int n = 0; n < n_states; ++n) {
      const float a_n = A[d * n_states + n] * LOG2E;
      const size_t brow = ((size_t)b * n_states + n) * length + start;
      __syncthreads();
      Load(ts.load).Load(B + brow, b_vals, valid, 0.f);
      __syncthreads();
      Load(ts.load).Load(C + brow, c_vals, valid, 0.f);
      for (int i = 0; i < MI; ++i) {
        if (t * MI + i < valid) {
          records[i] = make_float2(exp2f(dt_vals[i] * a_n), dt_vals[i] * u_vals[i] * b_vals[i]);
        } else {
          records[i] = make_float2(1.f, 0.f);
        }
      }
      CarryState prefix{start == 0 ? make_float2(1.f, 0.f) : running[n]};
      __syncthreads();
      Scan(ts.scan).InclusiveScan(records, records, SsmCombine(), prefix);
      for (int i = 0; i < MI; ++i) y_vals[i] += records[i].y * c_vals[i];
      if (t == 0) running[n] = prefix.state;
    }
    if (HAS_Z) {
      __syncthreads();
      Load(ts.load).Load(z + row + start, z_vals, valid, 0.f);
      for (int i = 0; i < MI; ++i) y_vals[i] *= z_vals[i] / (1.f + expf(-z_vals[i]));
    }
    __syncthreads();
    Store(ts.store).Store(out + row + start, y_vals, valid);
    __syncthreads();
  }
  if (t < n_states) last_state[((size_t)b * dim + d) * n_states + t] = running[t].y;
}

extern "C" int mamba_fwd(const float* u, const float* delta, const float* A, const float* B,
                         const float* C, const float* D, const float* z, const float* delta_bias,
                         float* out, float* last_state, int batch, int dim, int n_states,
                         int length) {
  dim3 grid(dim, batch);
  if (z) selective_scan_fwd<true, true><<<grid, MT>>>(u, delta, A, B, C, D, z, delta_bias, out,
                                                      last_state, dim, n_states, length);
  else selective_scan_fwd<false, true><<<grid, MT>>>(u, delta, A, B, C, D, z, delta_bias, out,
                                                     last_state, dim, n_states, length);
  return (int)cudaGetLastError();
}
"""


def build_apps_library(arch: str = "sm_90") -> ctypes.CDLL:
    """nvcc -O3 the C++ baselines into a shared library (ptxas' resource report beside it)."""
    from coopgen.model import registry
    d = tempfile.mkdtemp(prefix="coopgen-apps-")
    src, lib = os.path.join(d, "apps.cu"), os.path.join(d, "libapps.so")
    with open(src, "w", encoding="utf-8") as f:
        f.write(APPS_CU)
    cmd = ["nvcc", "-O3", f"-arch={arch}", "-Xptxas=-v", "-shared", "-Xcompiler", "-fPIC",
           f"-I{registry.include_dir()}", "-o", lib, src]
    res = subprocess.run(cmd, capture_output=True, encoding="utf-8", errors="replace")
    if res.returncode:
        raise RuntimeError(res.stderr[-4000:])
    with open(lib + ".log", "w", encoding="utf-8") as f:
        f.write(res.stderr)
    so = ctypes.CDLL(lib)
    so.scan_temp_bytes.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_size_t)]
    so.scan_exclusive_sum.argtypes = [ctypes.c_void_p] * 2 + [ctypes.c_int, ctypes.c_void_p,
                                                              ctypes.c_size_t]
    so.mamba_fwd.argtypes = [ctypes.c_void_p] * 10 + [ctypes.c_int] * 4
    so.log = res.stderr
    return so


def _ptr(a) -> int:
    return 0 if a is None else a.__cuda_array_interface__["data"][0]


def _ok(code: int, what: str) -> None:
    if code:
        raise RuntimeError(f"{what}: CUDA error {code}")


def _rounds(timer, launches: dict) -> dict:
    """Fastest median per launch over interleaved rounds."""
    from bench import ROUNDS
    samples = {name: [] for name in launches}
    for _ in range(ROUNDS):
        for name, launch in launches.items():
            samples[name].append(timer(launch))
    return {name: (min(ts), ts) for name, ts in samples.items()}


def _time_few(launch, runs=TORCH_RUNS) -> float:
    """Median of ``runs`` event-timed calls, after one warm-up: for calls of ~0.1 s."""
    from numba import cuda
    launch()
    cuda.synchronize()
    times = []
    for _ in range(runs):
        start, stop = cuda.event(), cuda.event()
        start.record()
        launch()
        stop.record()
        stop.synchronize()
        times.append(cuda.event_elapsed_time(start, stop))
    return sorted(times)[len(times) // 2]


# --- single-pass scan -----------------------------------------------------------------------

def scan_rows(so) -> list[dict]:
    import cupy
    from bench import _time
    from numba import cuda

    import single_pass_scan as sps

    n = SCAN_N
    host = np.random.default_rng().integers(-1000, 1000, n, dtype=np.int32)
    want = np.cumsum(host, dtype=np.int32) - host
    d_in = cuda.to_device(host)
    outs = {name: cuda.device_array(n, np.int32) for name in ("coopgen", "cub", "cupy")}
    scan = sps.ExclusiveScan(np.int32)
    size = ctypes.c_size_t()
    _ok(so.scan_temp_bytes(n, ctypes.byref(size)), "DeviceScan temp size")
    temp = cuda.device_array(max(size.value, 1), np.uint8)
    cx_in, cx_out = cupy.asarray(d_in), cupy.asarray(outs["cupy"])
    launches = {
        "coopgen": lambda: scan(d_in, outs["coopgen"]),
        "cub": lambda: _ok(so.scan_exclusive_sum(_ptr(d_in), _ptr(outs["cub"]), n, _ptr(temp),
                                                 size.value), "DeviceScan"),
        "cupy": lambda: cupy.cumsum(cx_in, out=cx_out),  # inclusive: the same bytes moved
    }
    for name, launch in launches.items():
        outs[name][:] = -1  # poisoned: every element must be written
        launch()
    cuda.synchronize()
    got = {name: d.copy_to_host() for name, d in outs.items()}
    for name in ("coopgen", "cub"):
        if not np.array_equal(got[name], want):
            bad = np.flatnonzero(got[name] != want)[:5]
            raise AssertionError(f"scan: {name} differs from numpy at {bad}")
    if not np.array_equal(got["cupy"], want + host):
        raise AssertionError("scan: cupy.cumsum differs from numpy")
    timed = _rounds(_time, launches)
    moved = 2 * n * 4
    row = {"case": "single_pass_scan", "n": n, "dtype": "int32", "tiles": -(-n // sps.TILE)}
    for name, (t, samples) in timed.items():
        row[f"{name}_ms"], row[f"{name}_GBps"] = t, moved / t / 1e6
        row[f"{name}_rounds_ms"] = samples
    row["ratio_vs_cub"] = row["cub_ms"] / row["coopgen_ms"]
    row["ratio_vs_cupy"] = row["cupy_ms"] / row["coopgen_ms"]
    row["coopgen_regs"] = next(iter(scan.kernel.get_regs_per_thread().values()))
    return [row]


def print_scan(rows) -> str:
    lines = ["| case | n | coopgen ms | cub::DeviceScan ms | cupy.cumsum ms | coopgen GB/s | "
             "CUB GB/s | ratio (CUB/coopgen) | ratio (CuPy/coopgen) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| exclusive sum, one launch | 2^{r['n'].bit_length() - 1} {r['dtype']} | "
                     f"{r['coopgen_ms']:.4f} | {r['cub_ms']:.4f} | {r['cupy_ms']:.4f} | "
                     f"{r['coopgen_GBps']:.0f} | {r['cub_GBps']:.0f} | "
                     f"**{r['ratio_vs_cub']:.3f}** | {r['ratio_vs_cupy']:.3f} |")
    text = "\n".join(lines)
    print(text)
    return text


# --- Mamba selective scan -------------------------------------------------------------------

def torch_selective_scan(u, delta, A, B, C, D, z, delta_bias):
    """The recurrence in plain PyTorch (softplus on, z gating), one time step per iteration."""
    import torch
    import torch.nn.functional as F
    dt = F.softplus(delta + delta_bias[:, None])  # (b, d, L)
    decay = torch.exp(dt[..., None] * A[:, None, :])  # (b, d, L, N)
    drive = (dt * u)[..., None] * B.transpose(1, 2)[:, None]  # (b, d, L, N)
    h = torch.zeros_like(decay[:, :, 0])
    ys = []
    for step in range(u.shape[2]):
        h = decay[:, :, step] * h + drive[:, :, step]
        ys.append((h * C[:, None, :, step]).sum(-1))
    y = torch.stack(ys, dim=-1) + D[:, None] * u
    return y * F.silu(z), h


def mamba_rows(so) -> list[dict]:
    import torch
    from bench import _time
    from numba import cuda

    import mamba_selective_scan as msc

    rows = []
    for batch in MAMBA_BATCHES:
        rng = np.random.default_rng()
        host = msc.random_inputs(rng, batch, **MAMBA_SHAPE)
        dev = {k: cuda.to_device(v) for k, v in host.items()}
        tens = {k: torch.as_tensor(v, device="cuda") for k, v in host.items()}
        dim, n_states, length = (MAMBA_SHAPE[k] for k in ("dim", "n_states", "length"))
        out_cx = cuda.device_array((batch, dim, length), np.float32)
        last_cx = cuda.device_array((batch, dim, n_states), np.float32)
        out_py = cuda.device_array((batch, dim, length), np.float32)
        last_py = cuda.device_array((batch, dim, n_states), np.float32)
        args = [_ptr(dev[k]) for k in ("u", "delta", "A", "B", "C", "D", "z", "delta_bias")]
        results = {}

        def coopgen():
            results["coopgen"] = msc.selective_scan_fwd(**dev, delta_softplus=True, out=out_py,
                                                        last_state=last_py)

        def native():
            _ok(so.mamba_fwd(*args, _ptr(out_cx), _ptr(last_cx), batch, dim, n_states, length),
                "mamba_fwd")

        def pytorch():
            results["torch"] = torch_selective_scan(**tens)

        out_cx[:] = np.nan  # poisoned: every element must be written
        out_py[:] = np.nan
        for launch in (coopgen, native, pytorch):
            launch()
        cuda.synchronize()
        # (new names: the closures above launch into out_py/last_py and out_cx/last_cx)
        y_py, last_py_h = (a.copy_to_host() for a in results["coopgen"])
        y_cx, last_cx_h = out_cx.copy_to_host(), last_cx.copy_to_host()
        y_pt, last_pt = (t.cpu().numpy() for t in results["torch"])
        # Against the float64 reference on 32 channels (the full reference takes minutes)
        sub = {k: (v[:, :32] if k in ("u", "delta", "z") else v[:32] if k in ("A", "D",
               "delta_bias") else v) for k, v in host.items()}
        want_y, want_last = msc.reference(**sub, delta_softplus=True)
        for name, y, last in (("coopgen", y_py, last_py_h), ("nvcc+CUB", y_cx, last_cx_h),
                              ("torch", y_pt, last_pt)):
            np.testing.assert_allclose(y[:, :32], want_y, rtol=1e-3,
                                       atol=1e-3 * np.abs(want_y).max(), err_msg=name)
            np.testing.assert_allclose(last[:, :32], want_last, rtol=1e-3,
                                       atol=1e-3 * np.abs(want_last).max(), err_msg=name)
        # ... and coopgen against the C++ twin everywhere
        np.testing.assert_allclose(y_py, y_cx, rtol=1e-4, atol=1e-4 * np.abs(y_cx).max())
        timed = _rounds(_time, {"coopgen": coopgen, "native": native})
        t_torch = _time_few(pytorch)
        rows.append({
            "case": "mamba_selective_scan", "batch": batch, **MAMBA_SHAPE,
            "coopgen_ms": timed["coopgen"][0], "native_ms": timed["native"][0],
            "torch_ms": t_torch, "ratio": timed["native"][0] / timed["coopgen"][0],
            "speedup_vs_torch": t_torch / timed["coopgen"][0],
            "max_abs_diff_vs_native": float(np.abs(y_py - y_cx).max()),
            "coopgen_rounds_ms": timed["coopgen"][1], "native_rounds_ms": timed["native"][1],
            "coopgen_regs": next(iter(msc._kernels[(True, True)].get_regs_per_thread()
                                      .values())),
        })
        del dev, tens, results
    return rows


def print_mamba(rows) -> str:
    lines = ["| case | B, D, N, L | coopgen ms | nvcc+CUB ms | PyTorch loop ms | "
             "ratio (native/coopgen) | speed-up over PyTorch |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| selective scan fwd (z, softplus) | {r['batch']}, {r['dim']}, "
                     f"{r['n_states']}, {r['length']} | {r['coopgen_ms']:.4f} | "
                     f"{r['native_ms']:.4f} | {r['torch_ms']:.1f} | **{r['ratio']:.3f}** | "
                     f"{r['speedup_vs_torch']:.0f}x |")
    text = "\n".join(lines)
    print(text)
    return text


def app_results() -> tuple[dict, list[str]]:
    """Both application benchmarks: raw rows and their markdown tables."""
    so = build_apps_library()
    scan = scan_rows(so)
    mamba = mamba_rows(so)
    return ({"apps_scan": scan, "apps_mamba": mamba, "apps_ptxas": so.log},
            [print_scan(scan), print_mamba(mamba)])
