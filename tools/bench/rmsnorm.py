"""RMSNorm forward (``examples/rms_norm.py``) against PyTorch eager, ``torch.compile`` and a
Triton kernel, at LLM shapes, with the GPU's copy bandwidth for scale.

    python tools/bench/bench.py rmsnorm       # needs a GPU, PyTorch and Triton

For float16 and bfloat16 and each of ``SHAPES`` (rows x hidden), one run times:

- ``coopgen``: ``rms_norm(x, w, eps, out=y)`` on PyTorch tensors, which the example sees through
  DLPack (no copy; DLPack names bfloat16, which ``__cuda_array_interface__`` cannot);
- ``torch``: ``torch.nn.functional.rms_norm(x, (hidden,), w, eps)``, eager;
- ``compile``: ``torch.compile`` of that same function (default mode, static shapes);
- ``triton``: ``triton_rms_norm`` below, written as Triton's tutorials write their row kernels:
  one program per row, BLOCK = the next power of two of hidden, float32 accumulation, and the
  layer-norm tutorial's warp count;
- ``copy``: ``y.copy_(x)``, the same bytes read and written: the copy bandwidth.

Every output is checked against a float64 reference on the GPU before timing, within the
worst-case bound of float32 accumulation (``rms_norm.tolerance``; two roundings to the row's
type for PyTorch, whose composite ``rms_norm`` rounds x * rstd before the product with w).

Timing: each batch of ``PER_BATCH`` calls is enqueued while the GPU sleeps in a spin kernel
launched just before it, so the GPU runs the calls back to back and the host's cost per call
(numba's launch, PyTorch's dispatch, torch.compile's guards, Triton's launcher) is not timed;
a batch whose enqueueing outlasted the spin is dropped and the spin doubled. The calls of a
batch cycle through enough copies of x and y (``sets``) that no call finds its input in L2.
CUDA events around each batch, 25 batches, the median; peers interleaved, three rounds, each
peer keeps its fastest median. GB/s counts x read, w read and y written (copy: x and y).
The host's own time per call is reported beside it.

``sweep``: coopgen again with the other block sizes that keep 16-byte vectors, to show how the
example's choice (``rms_norm.plan``) compares.
"""
from __future__ import annotations

import functools
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import rms_norm as example  # noqa: E402

SHAPES = ((4096, 4096), (4096, 8192), (16384, 4096), (16384, 8192))
DTYPES = example.DTYPES
EPS = 1e-6
PEERS = ("coopgen", "torch", "compile", "triton")  # the bars; "copy" is the line
LABELS = {"coopgen": "coopgen", "torch": "PyTorch eager", "compile": "torch.compile",
          "triton": "Triton", "copy": "copy_"}
ROUNDINGS = {"coopgen": 1, "torch": 2, "compile": 2, "triton": 1}
SWEEP_THREADS = (128, 256, 512, 1024)
MAX_ITEMS = 64  # per thread: more would spill
BATCHES, PER_BATCH, WARMUP, ROUNDS = 25, 10, 3, 3
L2_MULTIPLE = 4  # the copies of x a batch cycles through hold this many L2s


def cases() -> list[tuple[str, int, int]]:
    """(dtype, rows, hidden) of every measured row, in table order."""
    return [(dtype, rows, hidden) for dtype in DTYPES for rows, hidden in SHAPES]


def bytes_moved(rows: int, hidden: int, itemsize: int = 2) -> int:
    """x read, w read and y written."""
    return (2 * rows * hidden + hidden) * itemsize


def sweep_threads(hidden: int) -> list[int]:
    """Block sizes whose threads each hold whole 16-byte vectors (at most MAX_ITEMS items)
    and cover a row exactly, other than the example's own choice."""
    chosen, _ = example.plan(hidden)
    return [t for t in SWEEP_THREADS if t != chosen and hidden % (t * example.VECTOR) == 0
            and hidden // t <= MAX_ITEMS]


def l2_bytes() -> int:
    import torch
    return torch.cuda.get_device_properties(0).L2_cache_size


def sets_for(rows: int, hidden: int, l2_bytes: int) -> int:
    """How many copies of x (and of each y) a batch cycles through."""
    return max(1, -(-L2_MULTIPLE * l2_bytes // (rows * hidden * 2)))


# --- the Triton peer ------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _triton_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def rms_norm_row(X, W, Y, stride, n_cols, eps, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        cols = tl.arange(0, BLOCK)
        mask = cols < n_cols
        x = tl.load(X + row * stride + cols, mask=mask, other=0.0).to(tl.float32)
        rstd = 1 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
        w = tl.load(W + cols, mask=mask).to(tl.float32)
        tl.store(Y + row * stride + cols, (x * rstd * w).to(Y.dtype.element_ty), mask=mask)

    return rms_norm_row


def triton_rms_norm(x, w, eps, out):
    import triton
    rows, hidden = x.shape
    block = triton.next_power_of_2(hidden)
    num_warps = min(max(block // 256, 1), 8)  # the layer-norm tutorial's choice
    _triton_kernel()[(rows,)](x, w, out, x.stride(0), hidden, eps, BLOCK=block,
                              num_warps=num_warps)
    return out


# --- timing ---------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _spin_kernel():
    from numba import cuda

    @cuda.jit
    def spin(microseconds):
        for _ in range(microseconds):
            cuda.nanosleep(1000)

    return spin


def time_queued(call, sets: int) -> dict:
    """GPU ms per call (median batch) and the host's µs per call; ``call(i)`` uses set i."""
    from numba import cuda
    spin = _spin_kernel()[1, 1]
    for i in range(WARMUP):
        call(i % sets)
    cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(PER_BATCH):
        call(i % sets)
    spin_us = int(4e6 * (time.perf_counter() - t0)) + 200
    cuda.synchronize()
    times, hosts, dropped = [], [], 0
    while len(times) < BATCHES:
        begin, start, stop = cuda.event(), cuda.event(), cuda.event()
        begin.record()
        spin(spin_us)
        start.record()
        t0 = time.perf_counter()
        for i in range(PER_BATCH):
            call((len(times) * PER_BATCH + i) % sets)
        host_ms = 1e3 * (time.perf_counter() - t0)
        stop.record()
        stop.synchronize()
        if host_ms > 0.9 * cuda.event_elapsed_time(begin, start):  # the GPU may have waited
            spin_us, dropped = 2 * spin_us, dropped + 1
            if dropped > 20:
                raise RuntimeError("the host cannot keep ahead of the GPU")
            continue
        times.append(cuda.event_elapsed_time(start, stop) / PER_BATCH)
        hosts.append(1e3 * host_ms / PER_BATCH)
    return {"ms": statistics.median(times), "host_us": statistics.median(hosts),
            "dropped": dropped}


def _rounds(calls: dict, sets: int) -> dict:
    """Interleaved rounds; each peer keeps its fastest median."""
    samples = {name: [] for name in calls}
    for _ in range(ROUNDS):
        for name, call in calls.items():
            samples[name].append(time_queued(call, sets))
    return {name: dict(min(s, key=lambda r: r["ms"]), rounds_ms=[r["ms"] for r in s])
            for name, s in samples.items()}


# --- one shape ------------------------------------------------------------------------------

def _kept(make, sets: int):
    """``make(i)``, keeping each set's latest result alive: PyTorch's allocator then hands
    every call an output other than the last one's, as the peers that write ``ys[i]`` have."""
    slots = [None] * sets

    def call(i):
        slots[i] = make(i)
        return slots[i]

    return call


def _registers(dtype: str, items: int, full: bool = True) -> int:
    """Registers per thread of the example's kernel as launched (its last specialisation)."""
    regs = example.make_kernel(dtype, items, full).get_regs_per_thread()
    return list(regs.values())[-1] if isinstance(regs, dict) else regs


def _worst(got, want, dtype: str, hidden: int, roundings: int) -> float:
    rel, tiny = example.tolerance(dtype, hidden, roundings)
    return float(((got.double() - want).abs() / (rel * want.abs() + tiny)).max())


def _checked(name: str, got, want, dtype: str, rows: int, hidden: int, roundings: int):
    worst = _worst(got, want, dtype, hidden, roundings)
    if not worst <= 1.0:  # NaN fails too
        raise AssertionError(f"rmsnorm {name} {dtype} {rows}x{hidden}: error {worst:.3g}x "
                             f"the tolerance against the float64 reference")
    return worst


def shape_row(dtype: str, rows: int, hidden: int, sweep: bool = True) -> dict:
    import torch
    import torch.nn.functional as F

    tdtype = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(2026 + rows + hidden)
    sets = sets_for(rows, hidden, l2_bytes())
    xs = [torch.randn(rows, hidden, device="cuda", generator=gen).to(tdtype)
          for _ in range(sets)]
    w = (torch.rand(hidden, device="cuda", generator=gen) + 0.5).to(tdtype)
    ys = {name: [torch.full_like(xs[0], float("nan")) for _ in range(sets)]  # poisoned
          for name in ("coopgen", "triton", "copy")}

    def eager(x, w):
        return F.rms_norm(x, (x.shape[-1],), w, EPS)

    torch._dynamo.reset()  # a fresh static-shape compile for every shape and dtype
    compiled = torch.compile(eager, dynamic=False)
    calls = {
        "coopgen": lambda i: example.rms_norm(xs[i], w, EPS, out=ys["coopgen"][i]),
        "torch": _kept(lambda i: eager(xs[i], w), sets),
        "compile": _kept(lambda i: compiled(xs[i], w), sets),
        "triton": lambda i: triton_rms_norm(xs[i], w, EPS, ys["triton"][i]),
        "copy": lambda i: ys["copy"][i].copy_(xs[i]),
    }
    x64, w64 = xs[0].double(), w.double()
    want = x64 * torch.rsqrt((x64 * x64).mean(-1, keepdim=True) + EPS) * w64
    errors = {}
    for name in PEERS:
        got = calls[name](0)
        torch.cuda.synchronize()
        errors[name] = _checked(name, got, want, dtype, rows, hidden, ROUNDINGS[name])
    calls["copy"](0)
    if not torch.equal(ys["copy"][0], xs[0]):
        raise AssertionError(f"rmsnorm copy_ {dtype} {rows}x{hidden}: y differs from x")
    timed = _rounds(calls, sets)
    threads, items = example.plan(hidden)
    row = {"dtype": dtype, "rows": rows, "hidden": hidden, "bytes": bytes_moved(rows, hidden),
           "copy_bytes": 4 * rows * hidden, "sets": sets, "threads": threads, "items": items,
           "max_error": errors, "peers": {}}
    for name, r in timed.items():
        moved = row["copy_bytes"] if name == "copy" else row["bytes"]
        row["peers"][name] = dict(r, GBps=moved / r["ms"] / 1e6)
    row["regs"] = _registers(dtype, items, threads * items == hidden)
    row["sweep"] = []
    for t in sweep_threads(hidden) if sweep else ():
        got = example.rms_norm(xs[0], w, EPS, out=ys["coopgen"][0], threads=t)
        torch.cuda.synchronize()
        _checked(f"coopgen threads={t}", got, want, dtype, rows, hidden, 1)
        r = _rounds({t: lambda i, t=t: example.rms_norm(xs[i], w, EPS, out=ys["coopgen"][i],
                                                        threads=t)}, sets)[t]
        items_t = example.plan(hidden, t)[1]
        row["sweep"].append(dict(r, threads=t, items=items_t, regs=_registers(dtype, items_t),
                                 GBps=row["bytes"] / r["ms"] / 1e6))
    calls.clear()  # frees the copies of x and y before the next shape's
    xs.clear()
    ys.clear()
    del x64, w64, want, got
    torch.cuda.empty_cache()
    return row


def rmsnorm_rows(selected=None, sweep: bool = True) -> list[dict]:
    """Every case (or those whose 'dtype:rowsxhidden' is in ``selected``), printed as it
    finishes."""
    rows = []
    for dtype, n_rows, hidden in cases():
        if selected and f"{dtype}:{n_rows}x{hidden}" not in selected:
            continue
        rows.append(shape_row(dtype, n_rows, hidden, sweep))
        print(table_lines(rows[-1:])[-1], flush=True)
    return rows


# --- tables ---------------------------------------------------------------------------------

def fastest_peer(row: dict) -> str:
    """The fastest of the other peers (not coopgen, not the copy)."""
    return max((p for p in PEERS if p != "coopgen"), key=lambda p: row["peers"][p]["GBps"])


def table_lines(rows) -> list[str]:
    head = ["| rows x hidden | dtype | copy GB/s |"
            + "".join(f" {LABELS[p]} GB/s (x copy) |" for p in PEERS)
            + " coopgen / fastest peer |",
            "|---|---|---|" + "---|" * len(PEERS) + "---|"]
    body = []
    for r in rows:
        copy = r["peers"]["copy"]["GBps"]
        cells = "".join(f" {r['peers'][p]['GBps']:.0f} ({r['peers'][p]['GBps'] / copy:.2f}) |"
                        for p in PEERS)
        best = fastest_peer(r)
        ratio = r["peers"]["coopgen"]["GBps"] / r["peers"][best]["GBps"]
        body.append(f"| {r['rows']} x {r['hidden']} | {r['dtype']} | {copy:.0f} |{cells} "
                    f"**{ratio:.3f}** ({LABELS[best]}) |")
    return head + body


def sweep_lines(rows) -> list[str]:
    lines = ["| rows x hidden | dtype | threads x items | registers | GB/s | x copy | "
             "host µs per call |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        copy = r["peers"]["copy"]["GBps"]
        own = dict(r["peers"]["coopgen"], threads=r["threads"], items=r["items"],
                   regs=r.get("regs"))
        for s in sorted([own] + r["sweep"], key=lambda s: s["threads"]):
            mark = " (plan)" if s is own else ""
            lines.append(f"| {r['rows']} x {r['hidden']} | {r['dtype']} | {s['threads']} x "
                         f"{s['items']}{mark} | {s.get('regs')} | {s['GBps']:.0f} | "
                         f"{s['GBps'] / copy:.3f} | {s['host_us']:.1f} |")
    return lines


def run_line(env: dict) -> str:
    """The run's date, GPU and versions, as a sentence for RESULTS.md."""
    names = (("python", "Python"), ("torch", "PyTorch"), ("triton", "Triton"),
             ("numba-cuda", "numba-cuda"), ("nvrtc", "NVRTC"), ("cccl", "CCCL"))
    versions = ", ".join(f"{label} {env[key]}" for key, label in names if key in env)
    return f"Run of {env.get('date', '?')} on {env.get('gpu', '?')}: {versions}."


def print_rmsnorm(rows, env=None) -> str:
    text = (run_line(env) + "\n\n" if env else "") + "\n".join(table_lines(rows)) + \
        "\n\n" + "\n".join(sweep_lines(rows))
    print(text)
    return text
