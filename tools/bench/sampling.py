"""Bench of examples/sampling.py: top-k/top-p sampling from float32 probabilities, batch 1, 16,
64, 256 x vocab 32000, 128256, 151936, 256000, against FlashInfer's kernel and a PyTorch
reference (sort, cumsum, mask, torch.multinomial), in one process, on one GPU. With ``--cute``,
examples/cute_sampling.py (the same algorithm written in CuTe DSL, CUB through coopgen) runs
beside them: same shapes, same stream, same timing and checks.

FlashInfer's kernel (``TopKTopPSamplingFromProb`` of its ``sampling.cuh``, the one
``flashinfer.sampling.top_k_top_p_sampling_from_probs`` launches) is built at run time with
nvcc from the headers of a ``flashinfer-python`` wheel into a small shared library called
through ctypes; nothing of FlashInfer is part of coopgen. Its headers include curand's, which
come from PyTorch's ``nvidia-curand`` or from ``--curand``.

    python tools/bench/sampling.py --flashinfer FLASHINFER_INCLUDE [--curand CURAND_INCLUDE]
        [--cute] [--batches 1,16] [--vocabs 32000,128256] [--json out.json]

Kernel times come from CUDA events around ``REPS`` launches queued behind a GPU sleep, so the
host's launch cost (numba's dispatch, ctypes) is not in them (median of ``RUNS`` runs); each
launch draws with a new offset, so the times average over the rounds the rejection takes. Host
time per call is wall-clock time per launch, apart. top_k=50, top_p=0.9; probabilities from
softmax(N(0, 1) * 3) logits.
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

BATCHES = (1, 16, 64, 256)
VOCABS = (32000, 128256, 151936, 256000)
TOP_K, TOP_P = 50, 0.9
REPS, RUNS = 50, 5

HARNESS = r"""
#include <flashinfer/sampling.cuh>
extern "C" int fi_top_k_top_p(float* probs, int* top_k, float* top_p, int* out, bool* valid,
                              int batch, int vocab, unsigned long long seed,
                              unsigned long long offset, void* stream) {
  return (int)flashinfer::sampling::TopKTopPSamplingFromProb<float, int>(
      probs, top_k, top_p, out, valid, nullptr, (uint32_t)batch, 0, 0.f, (uint32_t)vocab,
      /*deterministic=*/true, nullptr, seed, nullptr, offset, (cudaStream_t)stream);
}
"""


def curand_include(given: str | None) -> str | None:
    if given:
        return given
    for root in sys.path:
        for hit in glob.glob(os.path.join(root, "nvidia", "**", "curand_kernel.h"), recursive=True):
            return os.path.dirname(hit)
    return None


def build_flashinfer(include: str, curand: str | None, arch: str, work: str | None = None):
    """FlashInfer's sampling kernel as a ctypes function, compiled with nvcc for ``arch`` (into
    ``work``; an earlier build there is used as it is)."""
    work = Path(work or tempfile.mkdtemp(prefix="fi-sampling-"))
    if (work / "libfi.so").is_file():
        return _load(work / "libfi.so")
    (work / "harness.cu").write_text(HARNESS, encoding="utf-8")
    cmd = ["nvcc", "-O3", "-std=c++17", f"-arch={arch}", "--shared", "-Xcompiler", "-fPIC",
           "--expt-relaxed-constexpr", "-I", include, str(work / "harness.cu"), "-o",
           str(work / "libfi.so")]
    if curand:
        cmd[1:1] = ["-I", curand]
    res = subprocess.run(cmd, capture_output=True, encoding="utf-8", errors="replace")
    if res.returncode:
        raise RuntimeError(f"nvcc failed:\n{res.stderr[-4000:]}")
    return _load(work / "libfi.so")


def _load(path: Path):
    fn = ctypes.CDLL(str(path)).fi_top_k_top_p
    fn.argtypes = [ctypes.c_void_p] * 5 + [ctypes.c_int, ctypes.c_int, ctypes.c_ulonglong,
                                           ctypes.c_ulonglong, ctypes.c_void_p]
    fn.restype = ctypes.c_int
    return fn


def torch_reference(probs, k: int, p: float, generator):
    """Sort, cumulative sum, mask outside top-k and top-p, renormalize, multinomial."""
    import torch

    sorted_p, order = torch.sort(probs, dim=-1, descending=True)
    csum = torch.cumsum(sorted_p, dim=-1)
    keep = (csum - sorted_p) < p
    keep[:, k:] = False
    sorted_p = torch.where(keep, sorted_p, torch.zeros_like(sorted_p))
    pick = torch.multinomial(sorted_p, 1, generator=generator)
    return order.gather(1, pick).squeeze(1)


def time_ms(fn) -> tuple[float, float]:
    """(kernel ms per call, host µs per call) of ``fn``."""
    import time

    import torch

    fn()
    torch.cuda.synchronize()
    runs, host = [], []
    for _ in range(RUNS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(20_000_000)  # the launches queue up behind it
        start.record()
        t0 = time.perf_counter()
        for _ in range(REPS):
            fn()
        host.append((time.perf_counter() - t0) / REPS * 1e6)
        end.record()
        end.synchronize()
        runs.append(start.elapsed_time(end) / REPS)
    return float(np.median(runs)), float(np.median(host))


def header(cute: bool) -> str:
    return (f"{'batch':>5} {'vocab':>7} {'coopgen ms':>10} "
            + (f"{'cute ms':>9} " if cute else "")
            + f"{'flashinfer ms':>13} {'torch ms':>9} {'vs FI':>6} "
            + (f"{'cute vs FI':>10} " if cute else "")
            + f"{'vs torch':>8} {'host us: coopgen':>16} " + (f"{'cute':>5} " if cute else "")
            + f"{'FI':>5} {'torch':>6}")


def line(row: dict, cute: bool) -> str:
    """A row of the table: times in ms, FlashInfer's time over each kernel's (above 1: the
    kernel is faster), host µs a call."""
    nan = float("nan")
    fi_ms = row["flashinfer_ms"]

    def vs_fi(name):
        return fi_ms / row[f"{name}_ms"] if fi_ms else nan
    return (f"{row['batch']:>5} {row['vocab']:>7} {row['coopgen_ms']:>10.4f} "
            + (f"{row['cute_ms']:>9.4f} " if cute else "")
            + f"{fi_ms if fi_ms is not None else nan:>13.4f} {row['torch_ms']:>9.4f} "
            + f"{vs_fi('coopgen'):>6.2f} " + (f"{vs_fi('cute'):>10.2f} " if cute else "")
            + f"{row['torch_ms'] / row['coopgen_ms']:>8.2f} {row['coopgen_host_us']:>16.1f} "
            + (f"{row['cute_host_us']:>5.1f} " if cute else "")
            + f"{row['flashinfer_host_us'] or nan:>5.1f} {row['torch_host_us']:>6.1f}")


def registry_cccl() -> str:
    from coopgen.model import registry

    return registry.package().CCCL


def main(argv=None) -> int:
    import torch
    from numba import cuda

    import sampling

    ap = argparse.ArgumentParser()
    ap.add_argument("--flashinfer", help="FlashInfer's include folder (flashinfer/data/include)")
    ap.add_argument("--curand", help="curand's include folder")
    ap.add_argument("--build-dir", help="where the harness is built (an earlier build is reused)")
    ap.add_argument("--cute", action="store_true",
                    help="also time examples/cute_sampling.py (needs nvidia-cutlass-dsl)")
    ap.add_argument("--batches", default=",".join(map(str, BATCHES)),
                    help="the batch sizes, comma-separated (a part of the table per run)")
    ap.add_argument("--vocabs", default=",".join(map(str, VOCABS)),
                    help="the vocabulary sizes, comma-separated")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    major, minor = torch.cuda.get_device_capability()
    fi = None
    if args.flashinfer:
        try:
            fi = build_flashinfer(args.flashinfer, curand_include(args.curand),
                                  f"sm_{major}{minor}", args.build_dir)
        except RuntimeError as e:
            print(f"FlashInfer: not built: {e}")
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(0)
    stream = cuda.external_stream(torch.cuda.current_stream().cuda_stream)
    kernel = sampling.make_kernel(sampling.THREADS)
    if args.cute:
        import cute_sampling
        cute_sampling.compiled_sampler(cute_sampling.THREADS)  # compiled before any timing
    contenders = ("coopgen", *(("cute",) if args.cute else ()), "flashinfer", "torch")
    warm = torch.randn(1 << 26, device=dev)
    for _ in range(200):  # clocks up before the first shape
        warm.mul_(1.0)
    rows = []
    print(header(args.cute))
    for batch in (int(b) for b in args.batches.split(",")):
        for vocab in (int(v) for v in args.vocabs.split(",")):
            logits = torch.randn(batch, vocab, device=dev) * 3
            probs = torch.softmax(logits, -1).contiguous()
            ks = torch.full((batch,), TOP_K, dtype=torch.int32, device=dev)
            ps = torch.full((batch,), TOP_P, dtype=torch.float32, device=dev)
            out = torch.empty(batch, dtype=torch.int32, device=dev)
            valid = torch.ones(batch, dtype=torch.bool, device=dev)  # FlashInfer's "no token"
            flat, k_d, p_d, o_d = (cuda.as_cuda_array(t) for t in (probs.view(-1), ks, ps, out))

            calls = [0]  # each call a new offset: the timing averages over the rounds drawn

            def ours():
                calls[0] += 1
                kernel[batch, sampling.THREADS, stream](flat, np.int32(vocab), k_d, p_d,
                                                        np.uint64(1), np.uint64(calls[0]), o_d)

            def flashinfer():
                calls[0] += 1
                rc = fi(probs.data_ptr(), ks.data_ptr(), ps.data_ptr(), out.data_ptr(),
                        valid.data_ptr(), batch, vocab, 1, calls[0],
                        torch.cuda.current_stream().cuda_stream)
                assert rc == 0, rc

            cute_fn = None
            if args.cute:
                draw = cute_sampling.bind(probs, ks, ps, out,
                                          stream=torch.cuda.current_stream().cuda_stream)

                def cute_fn():
                    calls[0] += 1
                    draw(1, calls[0])

            row = {"batch": batch, "vocab": vocab}
            fns = {"coopgen": ours, "cute": cute_fn, "flashinfer": flashinfer if fi else None,
                   "torch": lambda: torch_reference(probs, TOP_K, TOP_P, gen)}
            for name in contenders:
                row[f"{name}_ms"], row[f"{name}_host_us"] = \
                    time_ms(fns[name]) if fns[name] else (None, None)
            # every token the kernels drew is admissible (a bench must not time wrong work)
            ours()
            torch.cuda.synchronize()
            head = min(batch, 8)  # rows checked (numpy's reference sorts each row)
            mask = sampling.admissible(probs[:head].cpu().numpy(), TOP_K, min(TOP_P + 2e-5, 1))
            assert mask[np.arange(head), out[:head].cpu().numpy()].all(), "coopgen drew outside"
            if cute_fn:
                out.fill_(-1)
                cute_fn()
                torch.cuda.synchronize()
                drawn = out[:head].cpu().numpy()
                assert (drawn >= 0).all() and mask[np.arange(head), drawn].all(), \
                    "the CuTe DSL kernel drew outside"
            if fi:
                flashinfer()
                torch.cuda.synchronize()
                assert mask[np.arange(head), out[:head].cpu().numpy()].all(), "FlashInfer drew outside"
            rows.append(row)
            print(line(row, args.cute), flush=True)
    import datetime

    import numba_cuda

    env = {"date": datetime.date.today().isoformat(), "gpu": torch.cuda.get_device_name(),
           "numpy": np.__version__, "numba-cuda": numba_cuda.__version__,
           "torch": torch.__version__, "cccl": registry_cccl(), "top_k": TOP_K, "top_p": TOP_P,
           "reps": REPS, "runs": RUNS}
    if args.cute:
        import cutlass
        env["nvidia-cutlass-dsl"] = cutlass.__version__
    info = {"environment": env, "sampling": rows}  # tools/bench/draw.py's sampling.svg
    if args.json:
        Path(args.json).write_text(json.dumps(info, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
