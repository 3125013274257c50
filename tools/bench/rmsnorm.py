"""RMSNorm forward (``examples/rms_norm.py``) against PyTorch eager, ``torch.compile``, a
Triton kernel and QuACK (where ``quack-kernels`` is installed), at LLM shapes, with the GPU's
copy bandwidth for scale.

    python tools/bench/bench.py rmsnorm       # the 72 shapes below; a GPU, PyTorch and Triton
    python tools/bench/rmsnorm.py --sweep --json sweep.json   # the wide sweep (``main``)

For float16 and bfloat16 and every rows x hidden of ``ROWS`` x ``HIDDENS`` (decode batches of 1
to 256 rows up to 32,768-row prefills), one run times:

- ``coopgen``: ``examples/torch_rms_norm.rms_norm(x, w, eps, out=y)``: the example's kernel,
  its block size and variant chosen by ``coopgen.autotune`` on the shape's first call (before
  the timing), launched from PyTorch tensors by ``coopgen.torch`` on PyTorch's current stream;
- ``torch``: ``torch.nn.functional.rms_norm(x, (hidden,), w, eps)``, eager;
- ``compile``: ``torch.compile`` of that same function (default mode), compiled once per dtype
  and hidden with the row count dynamic (``maybe_mark_dynamic``; hidden stays static, so
  Inductor's reduction is the one it builds for that width; a single row is its own
  specialization);
- ``triton``: ``triton_rms_norm`` below, written as Triton's tutorials write their row kernels:
  one program per row, BLOCK = the next power of two of hidden, float32 accumulation, and the
  layer-norm tutorial's warp count;
- ``quack``: ``quack.rmsnorm(x, w, eps=eps)`` (QuACK's CuTe DSL kernel), where installed;
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

What a caller sees, beside it: ``host µs``, the host's time to enqueue one call (from the same
batches); ``end to end µs``, the wall time per call of ``E2E_CALLS`` calls issued back to back
and waited for (host and GPU overlap: the larger of the two shows, which for a few rows is the
host's); ``graph µs``, the GPU time per call of ``PER_BATCH`` calls captured in one
``torch.cuda.graph`` and replayed (no host cost per call). A few rows are launch-bound: a few µs
of GPU time against tens of µs of host time, so the end-to-end and graph columns are the
figures that count there.

``sweep`` (``COOPGEN_RMSNORM_SWEEP=2048,32768``: at those row counts): coopgen again with each
of the autotuner's candidates (``torch_rms_norm.CONFIGS``), to show how its choice compares.

``main`` (``--sweep``): rows 1 to 32,768 and hidden sizes 1,024 to 16,384, widths that are not
powers of two or sums of them among them (``SWEEP_HIDDENS``), every peer, with the autotuner's
cache in a fresh folder (every shape is tuned during the run: no shape was seen before it);
``--dtypes``, ``--hiddens`` and ``--rows`` run a slice, and ``--json`` merges each shape into
the file as it finishes, so slices run one after another add up to the whole sweep.
"""
from __future__ import annotations

import functools
import json
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "examples"))

import rms_norm as example  # noqa: E402

#: dtype, hidden -> the torch.compile'd function of that width (rows dynamic)
_compiled: dict = {}

ROWS = (1, 32, 256, 2048, 8192, 32768)
HIDDENS = (2048, 3072, 4096, 5120, 7168, 8192)
DTYPES = example.DTYPES
EPS = 1e-6
PEERS = ("coopgen", "torch", "compile", "triton", "quack")  # the bars; "copy" is the line
LABELS = {"coopgen": "coopgen", "torch": "PyTorch eager", "compile": "torch.compile",
          "triton": "Triton", "quack": "QuACK", "copy": "copy_"}
TARGET = 0.98  # coopgen's GB/s over the fastest peer's, on every shape
ROUNDINGS = {"coopgen": 1, "torch": 2, "compile": 2, "triton": 1, "quack": 2}
#: the wide sweep (``main``): decode batches to prefills, and LLM widths, powers of two or not
SWEEP_ALL_ROWS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 32768)
SWEEP_HIDDENS = (1024, 1536, 2048, 2560, 3072, 3584, 4096, 5000, 5120, 6144, 7168, 8192,
                 11008, 12288, 13824, 14336, 16384)
#: the row counts whose shapes also time the other block sizes and layouts ...
SWEEP_ROWS = tuple(int(n) for n in os.environ.get("COOPGEN_RMSNORM_SWEEP", "").split(",") if n)
SWEEP_DTYPE = "float16"  # ... in this dtype (the other moves the same bytes the same way)
BATCHES, PER_BATCH, WARMUP, ROUNDS = 15, 10, 3, 2
E2E_CALLS, E2E_REPEATS = 50, 5
L2_MULTIPLE = 4  # the copies of x a batch cycles through hold this many L2s


def cases() -> list[tuple[str, int, int]]:
    """(dtype, rows, hidden) of every measured row, in table order."""
    return [(dtype, rows, hidden) for dtype in DTYPES for hidden in HIDDENS for rows in ROWS]


def bytes_moved(rows: int, hidden: int, itemsize: int = 2) -> int:
    """x read, w read and y written."""
    return (2 * rows * hidden + hidden) * itemsize


def l2_bytes() -> int:
    import torch
    return torch.cuda.get_device_properties(0).L2_cache_size


def sets_for(rows: int, hidden: int, l2_bytes: int) -> int:
    """How many copies of x (and of each y) a batch cycles through: enough to hold
    ``L2_MULTIPLE`` L2s, but no more than the calls of one ``time_queued`` (``BATCHES *
    PER_BATCH``; the most sets any timing here reaches, so copies past them were never read:
    a 1 x 1024 row would otherwise make 100,000 of them)."""
    return max(1, min(BATCHES * PER_BATCH, -(-L2_MULTIPLE * l2_bytes // (rows * hidden * 2))))


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


def _registers(dtype: str, hidden: int, config) -> int:
    """Registers per thread of the example's kernel under ``config`` as launched (its last
    specialisation)."""
    import torch_rms_norm
    regs = torch_rms_norm.launcher_for(dtype, hidden, config)[0].kernel.get_regs_per_thread()
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


def _compiled_for(dtype: str, hidden: int):
    """torch.compile of the eager function for rows of one width, the row count dynamic."""
    import torch
    if (dtype, hidden) not in _compiled:
        import torch._inductor.config as inductor
        # each process times the configs of Inductor's kernels itself, as a cold compile does
        # (the wide sweep's caches are filled by other processes sharing the GPU)
        inductor.autotune_local_cache = False
        torch._dynamo.reset()  # a fresh compile for every dtype and width
        _compiled.clear()
        _compiled[dtype, hidden] = torch.compile(_eager, dynamic=None)
    return _compiled[dtype, hidden]


def _eager(x, w):
    import torch.nn.functional as F
    return F.rms_norm(x, (x.shape[-1],), w, EPS)


def end_to_end_us(call, sets: int) -> float:
    """Wall µs per call of E2E_CALLS calls issued back to back and waited for; median."""
    import torch
    times = []
    for _ in range(E2E_REPEATS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(E2E_CALLS):
            call(i % sets)
        torch.cuda.synchronize()
        times.append(1e6 * (time.perf_counter() - t0) / E2E_CALLS)
    return statistics.median(times)


def _enqueue_us(call, sets: int) -> float:
    """Host µs per call to enqueue E2E_CALLS calls (the GPU may run behind)."""
    import torch
    call(0)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(E2E_CALLS):
        call(i % sets)
    elapsed = time.perf_counter() - t0
    torch.cuda.synchronize()
    return 1e6 * elapsed / E2E_CALLS


def graph_us(call, sets: int) -> float:
    """GPU µs per call of PER_BATCH calls captured in one CUDA graph and replayed; median."""
    import torch
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        for i in range(PER_BATCH):
            call(i % sets)
    torch.cuda.current_stream().wait_stream(stream)
    graph.replay()
    times = []
    for _ in range(E2E_REPEATS):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        stop.record()
        stop.synchronize()
        times.append(1e3 * start.elapsed_time(stop) / PER_BATCH)
    del graph
    return statistics.median(times)


def quack_installed() -> bool:
    import importlib.util
    return importlib.util.find_spec("quack") is not None


def quack_rms_norm(x, w, eps):
    import quack
    return quack.rmsnorm(x, w, eps=eps)


def _calls(dtype: str, hidden: int, xs, w, ys, sets: int) -> dict:
    import torch_rms_norm

    compiled = _compiled_for(dtype, hidden)
    import torch
    for x in xs:
        torch._dynamo.maybe_mark_dynamic(x, 0)
    calls = {
        "coopgen": lambda i: torch_rms_norm.rms_norm(xs[i], w, EPS, out=ys["coopgen"][i]),
        "torch": _kept(lambda i: _eager(xs[i], w), sets),
        "compile": _kept(lambda i: compiled(xs[i], w), sets),
        "triton": lambda i: triton_rms_norm(xs[i], w, EPS, ys["triton"][i]),
        "copy": lambda i: ys["copy"][i].copy_(xs[i]),
    }
    if quack_installed():
        calls["quack"] = _kept(lambda i: quack_rms_norm(xs[i], w, EPS), sets)
    return calls


def config_shape(dtype: str, hidden: int, config) -> dict:
    """What the example's kernel is under ``config``: threads, items, its variant, registers."""
    import torch_rms_norm
    threads, arguments, _, per_block = torch_rms_norm.kernel_plan(dtype, hidden, config)
    return {"threads": threads, "items": arguments[1], "rows_per_block": per_block,
            "config": repr(config), "variant": config.variant, "reduce": config.reduce,
            "convert_once": config.convert_once,
            "striped": config.variant == "striped", "blocked": config.variant == "blocked",
            "elements": config.variant == "elements",
            "regs": _registers(dtype, hidden, config)}


def shape_row(dtype: str, rows: int, hidden: int, sweep: bool = False,
              numba_launch: bool = True) -> dict:
    """One shape's figures. ``numba_launch``: also the host time of the example's own numba
    launch (``numba_launch_host_us``; numba-cuda compiles a kernel that uses a block's shape
    once per grid, so the wide sweep leaves it out)."""
    import torch
    started = time.perf_counter()

    tdtype = getattr(torch, dtype)
    gen = torch.Generator(device="cuda").manual_seed(2026 + rows + hidden)
    sets = sets_for(rows, hidden, l2_bytes())
    xs = [torch.randn(rows, hidden, device="cuda", generator=gen).to(tdtype)
          for _ in range(sets)]
    w = (torch.rand(hidden, device="cuda", generator=gen) + 0.5).to(tdtype)
    ys = {name: [torch.full_like(xs[0], float("nan")) for _ in range(sets)]  # poisoned
          for name in ("coopgen", "triton", "copy")}
    calls = _calls(dtype, hidden, xs, w, ys, sets)
    x64, w64 = xs[0].double(), w.double()
    want = x64 * torch.rsqrt((x64 * x64).mean(-1, keepdim=True) + EPS) * w64
    errors = {}
    for name in (p for p in PEERS if p in calls):
        for _ in range(2):  # coopgen: tuned (first call of its key) and compiled, then raw
            got = calls[name](0)
            torch.cuda.synchronize()
            errors[name] = _checked(name, got, want, dtype, rows, hidden, ROUNDINGS[name])
    calls["copy"](0)
    if not torch.equal(ys["copy"][0], xs[0]):
        raise AssertionError(f"rmsnorm copy_ {dtype} {rows}x{hidden}: y differs from x")
    timed = _rounds(calls, sets)
    import torch_rms_norm
    tuned = config_shape(dtype, hidden, torch_rms_norm._run.config_for(xs[0], w, EPS, None))
    row = {"dtype": dtype, "rows": rows, "hidden": hidden, "bytes": bytes_moved(rows, hidden),
           "copy_bytes": 4 * rows * hidden, "sets": sets, "threads": tuned["threads"],
           "items": tuned["items"], "config": tuned["config"], "max_error": errors,
           "peers": {}}
    for name, r in timed.items():
        moved = row["copy_bytes"] if name == "copy" else row["bytes"]
        row["peers"][name] = dict(r, GBps=moved / r["ms"] / 1e6,
                                  e2e_us=end_to_end_us(calls[name], sets),
                                  graph_us=graph_us(calls[name], sets))
    row["regs"] = tuned["regs"]
    # what the autotuner timed for the shape's key (in this process: none where its cache had
    # the key), µs per call, fastest first: which candidates came close
    key = torch_rms_norm._key(xs[0], w, EPS, None)
    row["tuner_us"] = {repr(c): round(t * 1e6, 3) for c, t in sorted(
        torch_rms_norm._run.timings.get(key, {}).items(), key=lambda ct: ct[1])}
    if numba_launch:
        row["numba_launch_host_us"] = _enqueue_us(
            lambda i: example.rms_norm(xs[i], w, EPS, out=ys["coopgen"][i]), sets)
    row["sweep"] = _sweep(dtype, rows, hidden, xs, w, ys, want, sets) if sweep else []
    calls.clear()  # frees the copies of x and y before the next shape's
    xs.clear()
    ys.clear()
    del x64, w64, want, got
    torch.cuda.empty_cache()
    row["seconds"] = time.perf_counter() - started
    return row


def _sweep(dtype, rows, hidden, xs, w, ys, want, sets) -> list[dict]:
    """coopgen under each of the autotuner's other candidates."""
    import torch
    import torch_rms_norm
    out = []
    tuned = torch_rms_norm._run.config_for(xs[0], w, EPS, None)
    for config in torch_rms_norm.CONFIGS:
        if config == tuned:
            continue
        try:
            torch_rms_norm.kernel_plan(dtype, hidden, config)
        except ValueError:  # not a candidate for this width
            continue
        if not torch_rms_norm.for_rows(config, rows):  # nor for this many rows
            continue

        def call(i, config=config):
            return torch_rms_norm.rms_norm(xs[i], w, EPS, out=ys["coopgen"][i], config=config)
        for _ in range(2):
            got = call(0)
            torch.cuda.synchronize()
            _checked(f"coopgen {config!r}", got, want, dtype, rows, hidden, 1)
        r = _rounds({"c": call}, sets)["c"]
        out.append(dict(r, **config_shape(dtype, hidden, config),
                        GBps=bytes_moved(rows, hidden) / r["ms"] / 1e6))
    return out


def rmsnorm_rows(selected=None, sweep_rows=SWEEP_ROWS) -> list[dict]:
    """Every case (or those whose 'dtype:rowsxhidden' is in ``selected``), printed as it
    finishes; the rows counts in ``sweep_rows`` also time the other block sizes."""
    rows = []
    for dtype, n_rows, hidden in cases():
        if selected and f"{dtype}:{n_rows}x{hidden}" not in selected:
            continue
        rows.append(shape_row(dtype, n_rows, hidden,
                              n_rows in sweep_rows and dtype == SWEEP_DTYPE))
        print(table_lines(rows[-1:])[-1], flush=True)
        if os.environ.get("COOPGEN_BENCH_OUT"):  # what a run cut short still has
            with open(os.path.join(os.environ["COOPGEN_BENCH_OUT"], "rmsnorm.partial.json"),
                      "w") as f:
                json.dump(rows, f)
    return rows


# --- tables ---------------------------------------------------------------------------------

def peers_of(rows) -> list[str]:
    """The peers these rows timed (QuACK only where it was installed)."""
    return [p for p in PEERS if all(p in r["peers"] for r in rows)]


def fastest_peer(row: dict) -> str:
    """The fastest of the other peers (not coopgen, not the copy)."""
    return max((p for p in peers_of([row]) if p != "coopgen"),
               key=lambda p: row["peers"][p]["GBps"])


def _best_other(row: dict, key: str) -> str:
    """The peer (not coopgen, not the copy) with the fewest µs by ``key``."""
    return min((p for p in peers_of([row]) if p != "coopgen"),
               key=lambda p: row["peers"][p][key])


def table_lines(rows) -> list[str]:
    short = {"torch": "eager", "compile": "compile", "triton": "Triton", "quack": "QuACK"}
    peers = peers_of(rows)
    head = ["| rows x hidden | dtype | copy GB/s |"
            + "".join(f" {LABELS[p]} GB/s (x copy) |" for p in peers)
            + " coopgen / fastest peer | host µs per call: coopgen / "
            + " / ".join(short[p] for p in peers[1:]) + " |"
            " end to end µs: coopgen / fastest peer | CUDA graph µs per call: coopgen / "
            + " / ".join(short[p] for p in peers[1:]) + " |",
            "|---|---|---|" + "---|" * len(peers) + "---|---|---|---|"]
    body = []
    for r in rows:
        peers = r["peers"]
        copy = peers["copy"]["GBps"]
        names = peers_of(rows)
        cells = "".join(f" {peers[p]['GBps']:.0f} ({peers[p]['GBps'] / copy:.2f}) |"
                        for p in names)
        best = fastest_peer(r)
        ratio = peers["coopgen"]["GBps"] / peers[best]["GBps"]
        host, graph = (" / ".join(f"{peers[p][key]:.1f}" for p in names)
                       for key in ("host_us", "graph_us"))
        other = _best_other(r, "e2e_us")
        body.append(f"| {r['rows']} x {r['hidden']} | {r['dtype']} | {copy:.0f} |{cells} "
                    f"**{ratio:.3f}** ({LABELS[best]}) | {host} | "
                    f"{peers['coopgen']['e2e_us']:.1f} / {peers[other]['e2e_us']:.1f} "
                    f"({short[other]}) | {graph} |")
    return head + body


def sweep_lines(rows) -> list[str]:
    lines = ["| rows x hidden | dtype | threads x items | registers | GB/s | x copy | "
             "host µs per call |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        copy = r["peers"]["copy"]["GBps"]
        own = dict(r["peers"]["coopgen"], threads=r["threads"], items=r["items"],
                   regs=r.get("regs"))
        for s in sorted([own] + r["sweep"], key=lambda s: (s["threads"], s.get("convert_once",
                                                                               False),
                                                           s.get("striped", False))):
            mark = " (tuned)" if s is own else " (convert once)" if s.get("convert_once") \
                else f" ({s['variant']})" if s.get("variant", "sliced") != "sliced" \
                else " (striped)" if s.get("striped") else " (blocked)" if s.get("blocked") \
                else " (elements)" if s.get("elements") else ""
            if s.get("reduce", "warps") != "warps":
                mark += f" ({s['reduce']})"
            lines.append(f"| {r['rows']} x {r['hidden']} | {r['dtype']} | {s['threads']} x "
                         f"{s['items']}{mark} | {s.get('regs')} | {s['GBps']:.0f} | "
                         f"{s['GBps'] / copy:.3f} | {s['host_us']:.1f} |")
    return lines


def run_line(env: dict) -> str:
    """The run's date, GPU and versions, as a sentence for RESULTS.md."""
    names = (("python", "Python"), ("torch", "PyTorch"), ("triton", "Triton"),
             ("quack", "QuACK"), ("numba-cuda", "numba-cuda"), ("nvrtc", "NVRTC"),
             ("cccl", "CCCL"))
    versions = ", ".join(f"{label} {env[key]}" for key, label in names if key in env)
    return f"Run of {env.get('date', '?')} on {env.get('gpu', '?')}: {versions}."


def print_rmsnorm(rows, env=None) -> str:
    text = (run_line(env) + "\n\n" if env else "") + "\n".join(table_lines(rows)) + \
        "\n\n" + "\n".join(sweep_lines(rows))
    print(text)
    return text


# --- the wide sweep ---------------------------------------------------------------------------

def summary(rows) -> dict:
    """coopgen over the fastest peer across ``rows``: geometric mean, worst shape, how many reach
    0.95 and ``TARGET``; each peer's median host µs per call and CUDA-graph µs."""
    ratios = {f"{r['dtype']}:{r['rows']}x{r['hidden']}":
              r["peers"]["coopgen"]["GBps"] / r["peers"][fastest_peer(r)]["GBps"] for r in rows}
    worst = min(ratios, key=ratios.get)
    return {"shapes": len(ratios),
            "geomean": math.exp(statistics.fmean(math.log(q) for q in ratios.values())),
            "worst": [worst, ratios[worst]],
            "at_least_0.95": sum(q >= 0.95 for q in ratios.values()),
            f"at_least_{TARGET}": sum(q >= TARGET for q in ratios.values()),
            "host_us_median": {p: statistics.median(r["peers"][p]["host_us"] for r in rows)
                               for p in peers_of(rows)},
            "graph_us_median": {p: statistics.median(r["peers"][p]["graph_us"] for r in rows)
                                for p in peers_of(rows)}}


def summary_lines(s: dict) -> list[str]:
    return [f"coopgen / fastest peer over {s['shapes']} shapes: geometric mean "
            f"{s['geomean']:.3f}, worst {s['worst'][1]:.3f} ({s['worst'][0]}), "
            f"{s['at_least_0.95']} at >= 0.95, {s[f'at_least_{TARGET}']} at >= {TARGET}",
            "median host µs per call: " + ", ".join(f"{LABELS[p]} {v:.1f}" for p, v in
                                                    s["host_us_median"].items()),
            "median CUDA-graph µs per call: " + ", ".join(f"{LABELS[p]} {v:.1f}" for p, v in
                                                         s["graph_us_median"].items())]


def _shape_key(row: dict) -> tuple:
    return row["dtype"], row["rows"], row["hidden"]


def merge(path: str, rows, env: dict) -> list[dict]:
    """The file's shapes with ``rows`` added (each replacing the same shape's); written back
    with ``env`` and the summary of every shape the file then holds."""
    try:
        with open(path, encoding="utf-8") as f:
            saved = json.load(f)
    except (OSError, ValueError):
        saved = {}
    new = {_shape_key(r): r for r in rows}
    merged = [r for r in saved.get("rmsnorm", []) if _shape_key(r) not in new] + list(new.values())
    merged.sort(key=lambda r: (DTYPES.index(r["dtype"]), r["hidden"], r["rows"]))
    tmp = f"{path}.tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"environment": env, "rmsnorm": merged,
                   "summary": summary(merged) if merged else {}}, f, indent=1)
    os.replace(tmp, path)  # a run cut short leaves the last whole file
    return merged


def _environment() -> dict:
    import platform

    import torch
    env = {"date": time.strftime("%Y-%m-%d"), "gpu": torch.cuda.get_device_name(),
           "python": platform.python_version(), "torch": torch.__version__}
    for name in ("triton", "quack"):
        try:
            env[name] = __import__(name).__version__
        except (ImportError, AttributeError):
            pass
    from importlib import metadata
    try:
        env["numba-cuda"] = metadata.version("numba-cuda")
    except metadata.PackageNotFoundError:
        pass
    return env


# --- the wide sweep on a GPU host: compile caches filled by a pool, then the timing ----------
#
# Compiles dominate a cold sweep: every candidate of coopgen's autotuner (numba's typing,
# lowering and link), Triton's kernel per width, torch.compile per dtype and width, QuACK's
# CuTe DSL kernel per width. The sweep first runs each of them once in a pool of processes on
# the host's cores, filling each one's on-disk cache (numba's ``cache=True`` entries of the
# example's kernels, Triton's, Inductor's FX graph and AOT caches, QuACK's compiled objects),
# then times the shapes on 1 to N GPUs, one process each, which load what the pool compiled.
# Nothing is timed in the pool; coopgen's autotuner times its candidates in the timing
# processes, from an empty autotune cache, so no shape was tuned before the run.

#: environment variable -> its folder under the sweep's cache folder
COMPILE_CACHES = {"NUMBA_CACHE_DIR": "numba", "TRITON_CACHE_DIR": "triton",
                  "TORCHINDUCTOR_CACHE_DIR": "inductor", "QUACK_CACHE_DIR": "quack"}
PRECOMPILE_ORDER = ("compile", "quack", "coopgen", "triton")  # the longest compiles first


def sweep_groups(dtypes, hiddens) -> list[tuple[str, int]]:
    """(dtype, hidden) of the sweep: a timing process takes whole groups (torch.compile
    compiles once per group; each coopgen key is its own anyway)."""
    return [(d, h) for d in dtypes for h in hiddens]


def group_cost(hidden: int, rows) -> float:
    """A guess of a group's seconds of timing: a part per group (torch.compile traces it again
    and every peer loads its kernels), a part per shape, and the bytes the big shapes move."""
    return 3.0 + sum(0.5 + 3.0 * n * hidden / (32768 * 16384) for n in rows)


def split_groups(groups, rows, parts: int) -> list[list]:
    """The groups of each of ``parts`` timing processes: the costliest group first to the
    least loaded process; each process keeps the sweep's order."""
    loads, out = [0.0] * parts, [[] for _ in range(parts)]
    for g in sorted(groups, key=lambda g: -group_cost(g[1], rows)):
        i = loads.index(min(loads))
        out[i].append(g)
        loads[i] += group_cost(g[1], rows)
    order = {g: k for k, g in enumerate(groups)}
    return [sorted(p, key=order.get) for p in out]


def precompile_tasks(groups, rows, quack: bool) -> list[tuple]:
    """The pool's tasks, (peer, dtype, hidden, row counts, index in ``CONFIGS``), each
    compiling what a timing process meets first for that width: coopgen's candidates, Triton
    and QuACK at the first row count (numba-cuda keys the cache entry of a kernel that uses its
    block's shape on its first launch's grid), torch.compile at the first and at the first
    dynamic one (more than one row; Inductor sizes its kernels by it); coopgen's decode and
    bulk candidates at the first row count the autotuner times them for
    (``torch_rms_norm.for_rows``), and not at all where the rows have none. Candidates that
    make the same kernel (variant and block) compile once."""
    import torch_rms_norm
    first = rows[0]
    later = [n for n in rows if n > 1]
    compile_rows = (first, later[0]) if first <= 1 and later else (first,)
    tasks, seen = [], set()
    for dtype, hidden in groups:
        tasks.append(("compile", dtype, hidden, compile_rows, None))
        if quack:
            tasks.append(("quack", dtype, hidden, (first,), None))
        tasks.append(("triton", dtype, hidden, (first,), None))
        for index, config in enumerate(torch_rms_norm.CONFIGS):
            try:
                arguments = torch_rms_norm.kernel_plan(dtype, hidden, config)[1]
            except ValueError:  # no candidate for this width
                continue
            # the first row count the autotuner times it for (``for_rows``), if any
            at = tuple([n for n in rows if torch_rms_norm.for_rows(config, n)][:1])
            if arguments not in seen and at:
                seen.add(arguments)
                tasks.append(("coopgen", dtype, hidden, at, index))
    return sorted(tasks, key=lambda t: PRECOMPILE_ORDER.index(t[0]))


def _pool_process() -> None:
    os.environ["TORCHINDUCTOR_COMPILE_THREADS"] = "1"  # Inductor compiles in the process


def precompile_one(task) -> tuple[str, float, str | None]:
    """Run one task on small tensors of its width on the GPU: (peer, seconds, error)."""
    import torch
    kind, dtype, hidden, rows, index = task
    started, error = time.perf_counter(), None
    try:
        tdtype = getattr(torch, dtype)
        w = torch.ones(hidden, device="cuda", dtype=tdtype)
        for n in rows:
            x = torch.randn(n, hidden, device="cuda").to(tdtype)
            if kind == "coopgen":
                import torch_rms_norm
                torch_rms_norm.rms_norm(x, w, EPS, out=torch.empty_like(x),
                                        config=torch_rms_norm.CONFIGS[index])
            elif kind == "triton":
                triton_rms_norm(x, w, EPS, torch.empty_like(x))
            elif kind == "quack":
                quack_rms_norm(x, w, EPS)
            else:
                torch._dynamo.maybe_mark_dynamic(x, 0)
                _compiled_for(dtype, hidden)(x, w)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 (the timing compiles it again, and says why)
        error = f"{type(e).__name__}: {e}"
    return kind, time.perf_counter() - started, error


def precompile(tasks, jobs: int) -> dict:
    """Run ``tasks`` in a pool of ``jobs`` processes; per peer: tasks, process seconds,
    failures; and the wall seconds."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool
    started = time.perf_counter()
    peers: dict = {}
    try:
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_pool_process) as pool:
            for task, (kind, seconds, error) in zip(tasks, pool.map(precompile_one, tasks)):
                p = peers.setdefault(kind, {"tasks": 0, "seconds": 0.0, "failed": []})
                p["tasks"] += 1
                p["seconds"] += seconds
                if error:
                    p["failed"].append(f"{task[1]} {task[2]} {task[4]}: {error[:300]}")
    except BrokenProcessPool as e:  # a process died: the timing compiles what is missing
        peers["pool"] = {"tasks": 0, "seconds": 0.0, "failed": [f"{type(e).__name__}: {e}"]}
    return {"jobs": jobs, "tasks": len(tasks), "wall_s": time.perf_counter() - started,
            "peers": peers}


def precompile_lines(stats: dict) -> list[str]:
    peers = stats["peers"]
    lines = [f"precompile: {stats['tasks']} tasks on {stats['jobs']} processes in "
             f"{stats['wall_s']:.1f} s (process seconds: " + ", ".join(
                 f"{LABELS.get(k, k)} {p['tasks']} in {p['seconds']:.0f} s"
                 for k, p in peers.items()) + ")"]
    for kind, p in peers.items():
        lines += [f"  {LABELS.get(kind, kind)} failed: {f}" for f in p["failed"][:5]]
        if len(p["failed"]) > 5:
            lines.append(f"  ... and {len(p['failed']) - 5} more")
    return lines


def _devices(count: int) -> list[str]:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    devices = visible.split(",") if visible else [str(i) for i in range(count)]
    if len(devices) < count:
        raise SystemExit(f"rmsnorm: --gpus {count}, but CUDA_VISIBLE_DEVICES names "
                         f"{len(devices)}")
    return devices[:count]


def _gpu_count(value: str) -> int:
    if value == "all":
        import torch
        return torch.cuda.device_count()
    return int(value)


def shape_cost(rows: int, hidden: int) -> float:
    """A guess of one shape's seconds of timing (``group_cost``'s part per shape)."""
    return 0.5 + 3.0 * rows * hidden / (32768 * 16384)


CACHE_COUNTS = ("coopgen_loaded", "coopgen_compiled", "aot_hit", "fx_hit", "fx_miss")


def cache_text(c: dict) -> str:
    return (f"coopgen kernels loaded {c['coopgen_loaded']}, compiled {c['coopgen_compiled']}; "
            f"torch.compile graphs from the AOT cache {c['aot_hit']}, from the FX graph cache "
            f"{c['fx_hit']}, compiled {c['fx_miss']}")


def cache_counts(dtype: str, hidden: int) -> dict:
    """How many of coopgen's candidate kernels for the width this process loaded from numba's
    cache or compiled, and its AOT autograd cache hits and Inductor FX graph cache hits and
    misses (a miss: a graph compiled) so far: what shows that the pool filled the caches the
    timing reads."""
    import torch_rms_norm
    from torch._dynamo.utils import counters
    out = {"coopgen_loaded": 0, "coopgen_compiled": 0,
           "aot_hit": counters["aot_autograd"]["autograd_cache_hit"],
           "fx_hit": counters["inductor"]["fxgraph_cache_hit"],
           "fx_miss": counters["inductor"]["fxgraph_cache_miss"]}
    for config in torch_rms_norm.CONFIGS:
        try:
            arguments = torch_rms_norm.kernel_plan(dtype, hidden, config)[1]
        except ValueError:
            continue
        stats = getattr(example.make_kernel(*arguments), "stats", None)  # numba-cuda's
        if stats is not None:
            out["coopgen_loaded"] += sum(stats.cache_hits.values())
            out["coopgen_compiled"] += sum(stats.cache_misses.values())
    return out


def time_part(args, part: int, parts: int) -> int:
    """The timing process ``part`` of ``parts``: its groups' shapes, each merged into
    ``--json`` as it finishes. A shape that fails is reported and the next one timed; past
    ``--deadline`` (seconds since the epoch, less a shape's guessed time) no shape starts."""
    import traceback
    rows_list = [int(n) for n in args.rows.split(",")]
    groups = split_groups(sweep_groups(args.dtypes.split(","),
                                       [int(h) for h in args.hiddens.split(",")]),
                          rows_list, parts)[part]
    if not args.keep_cache and not os.environ.get("COOPGEN_AUTOTUNE_CACHE"):
        import tempfile
        os.environ["COOPGEN_AUTOTUNE_CACHE"] = tempfile.mkdtemp(prefix="coopgen-autotune-")
    deadline = args.deadline or math.inf
    env, rows, failed, skipped = _environment(), [], [], []
    caches = dict.fromkeys(CACHE_COUNTS, 0)
    env.update(failed=failed, not_timed=skipped, caches=caches)
    tag = f"[GPU {part}/{parts} {env['gpu']}]" if parts > 1 else f"[{env['gpu']}]"
    print(f"{tag} {len(groups)} widths: " + ", ".join(f"{d} {h}" for d, h in groups),
          flush=True)
    for dtype, hidden in groups:
        started = time.perf_counter()
        before = cache_counts(dtype, hidden)
        for i, n in enumerate(rows_list):
            name = f"{dtype}:{n}x{hidden}"
            if time.time() + 2 * shape_cost(n, hidden) + (3.0 if i == 0 else 0.0) > deadline:
                skipped.append(name)
                continue
            try:
                row = shape_row(dtype, n, hidden, numba_launch=False)
            except Exception as e:  # noqa: BLE001 (reported; the other shapes still count)
                failed.append(f"{name}: {type(e).__name__}: {e}"[:500])
                print(f"{tag} FAILED {failed[-1]}", flush=True)
                traceback.print_exc()
                continue
            rows = merge(args.json, [row], env) if args.json else rows + [row]
            print(table_lines([row])[-1], flush=True)
        counts = {k: v - before[k] for k, v in cache_counts(dtype, hidden).items()}
        for k, v in counts.items():
            caches[k] += v
        print(f"{tag} {dtype} {hidden}: {len(rows_list)} shapes in "
              f"{time.perf_counter() - started:.1f} s; {cache_text(counts)}", flush=True)
    if skipped:
        print(f"{tag} past the deadline: {len(skipped)} shapes not timed", flush=True)
    if args.json:  # the part's last word: its failures and the shapes it did not time
        merge(args.json, [], env)
    if not args.json and rows:
        print("\n".join(summary_lines(summary(rows))))
    return 1 if failed else 0


def plan_lines(args) -> list[str]:
    """What ``run_sweep`` would do: the pool's tasks per peer, each GPU's widths and guessed
    seconds of timing."""
    rows = [int(n) for n in args.rows.split(",")]
    groups = sweep_groups(args.dtypes.split(","), [int(h) for h in args.hiddens.split(",")])
    tasks = precompile_tasks(groups, rows, quack_installed())
    kinds = {k: sum(t[0] == k for t in tasks) for k in PRECOMPILE_ORDER}
    lines = [f"{len(groups) * len(rows)} shapes; the pool: {len(tasks)} compile tasks ("
             + ", ".join(f"{LABELS[k]} {n}" for k, n in kinds.items() if n) + ")"]
    for i, part in enumerate(split_groups(groups, rows, _gpu_count(args.gpus))):
        lines.append(f"GPU {i}: {len(part)} widths, about "
                     f"{sum(group_cost(h, rows) for _, h in part):.0f} s of timing: "
                     + ", ".join(f"{d} {h}" for d, h in part))
    return lines


def run_sweep(args) -> int:
    """Fill the compile caches (``--jobs`` processes), time the shapes on ``--gpus`` GPUs, merge
    the parts into ``--json`` and print the table, the summary and each phase's seconds."""
    import shutil
    import subprocess
    import tempfile
    started = time.perf_counter()
    deadline = time.time() + args.budget - 15 if args.budget else None  # 15 s: the merge
    gpus = _gpu_count(args.gpus)
    devices = _devices(gpus)
    root = os.path.abspath(args.cache_dir)
    for var, sub in COMPILE_CACHES.items():
        os.environ[var] = os.path.join(root, sub)
        os.makedirs(os.environ[var], exist_ok=True)
    os.environ["COOPGEN_RMSNORM_CACHE"] = "1"  # the example's kernels: numba's cache=True
    rows = [int(n) for n in args.rows.split(",")]
    groups = sweep_groups(args.dtypes.split(","), [int(h) for h in args.hiddens.split(",")])
    phases: dict = {}
    print(f"rmsnorm sweep: {len(groups) * len(rows)} shapes ({len(groups)} of dtype and width, "
          f"{len(rows)} row counts) on {gpus} GPU(s); QuACK "
          f"{'installed' if quack_installed() else 'not installed'}; caches in {root}",
          flush=True)
    if args.jobs:
        stats = precompile(precompile_tasks(groups, rows, quack_installed()), args.jobs)
        phases["precompile_s"] = round(stats["wall_s"], 1)
        phases["precompile"] = stats
        print("\n".join(precompile_lines(stats)), flush=True)
    out = os.path.abspath(args.json) if args.json else os.path.join(root, "sweep.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    # beside the output: what a run cut short timed is there (``--table`` reads the parts)
    parts_dir = tempfile.mkdtemp(prefix="rmsnorm-parts-", dir=os.path.dirname(out))
    t0 = time.perf_counter()
    procs = []
    for i, device in enumerate(devices):
        part_json = os.path.join(parts_dir, f"part{i}.json")
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=device)
        if not args.keep_cache:  # every shape is tuned during the run
            env["COOPGEN_AUTOTUNE_CACHE"] = tempfile.mkdtemp(prefix=f"autotune-{i}-", dir=root)
        command = [sys.executable, os.path.abspath(__file__), "--sweep", "--part",
                   f"{i}/{gpus}", "--dtypes", args.dtypes, "--hiddens", args.hiddens,
                   "--rows", args.rows, "--json", part_json] + \
            (["--keep-cache"] if args.keep_cache else []) + \
            (["--deadline", str(deadline)] if deadline else [])
        procs.append((subprocess.Popen(command, env=env), part_json))
    ended: dict = {}
    while len(ended) < len(procs):  # each process's seconds as it ends
        for i, (proc, _) in enumerate(procs):
            if i not in ended and proc.poll() is not None:
                ended[i] = (proc.returncode, round(time.perf_counter() - t0, 1))
        time.sleep(0.2)
    failed = sum(rc != 0 for rc, _ in ended.values())
    seconds, parts = [ended[i][1] for i in range(len(procs))], []
    for _, part_json in procs:
        try:
            with open(part_json, encoding="utf-8") as f:
                parts.append(json.load(f))
        except (OSError, ValueError):  # a part that timed no shape
            pass
    phases["timing_s"] = round(time.perf_counter() - t0, 1)
    phases["timing_per_gpu_s"] = seconds
    if not any(p["rmsnorm"] for p in parts):
        print("rmsnorm sweep: no shape was timed", file=sys.stderr)
        return 1
    env = dict(parts[0]["environment"])
    for key in ("failed", "not_timed"):
        env[key] = [name for p in parts for name in p["environment"].get(key, [])]
    env["caches"] = {k: sum(p["environment"].get("caches", {}).get(k, 0) for p in parts)
                     for k in CACHE_COUNTS}
    names = [p["environment"]["gpu"] for p in parts]
    env["gpus"] = names
    if len(names) > 1:
        env["gpu"] = f"{len(names)} x {names[0]}" if len(set(names)) == 1 else " + ".join(names)
    env["phases"] = phases
    phases["total_s"] = round(time.perf_counter() - started, 1)
    merged = merge(out, [r for p in parts for r in p["rmsnorm"]], env)
    if failed == 0:
        shutil.rmtree(parts_dir, ignore_errors=True)
    print("\n" + run_line(env) + "\n")
    print("\n".join(table_lines(merged) + [""] + summary_lines(summary(merged))))
    timed = sum(len(p["rmsnorm"]) for p in parts)
    print(f"timed {timed} of {len(groups) * len(rows)} shapes"
          + (f"; not timed before the budget's end: {len(env['not_timed'])}"
             if env["not_timed"] else "")
          + (f"; failed: {'; '.join(env['failed'])}" if env["failed"] else ""))
    print("caches read by the timing: " + cache_text(env["caches"]))
    print(f"phases: precompile {phases.get('precompile_s', 0):.1f} s, timing "
          f"{phases['timing_s']:.1f} s (per GPU: "
          + ", ".join(f"{s:.1f}" for s in seconds) + f"), total {phases['total_s']:.1f} s; "
          f"written to {out}" + (f"; {failed} timing process(es) failed, their parts kept in "
                                 f"{parts_dir}" if failed else ""))
    return 1 if failed else 0


def main(argv=None) -> int:
    import argparse
    import tempfile
    parser = argparse.ArgumentParser(description="RMSNorm: coopgen against PyTorch eager, "
                                     "torch.compile, Triton and QuACK (where installed)")
    parser.add_argument("--sweep", action="store_true",
                        help="rows 1..32768 x hidden 1024..16384 (SWEEP_ALL_ROWS, SWEEP_HIDDENS)")
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--hiddens", default=",".join(map(str, SWEEP_HIDDENS)))
    parser.add_argument("--rows", default=",".join(map(str, SWEEP_ALL_ROWS)))
    parser.add_argument("--json", help="merge each shape's figures into this file")
    parser.add_argument("--table", nargs="+", metavar="JSON",
                        help="print the table and summary of these files' shapes, time nothing")
    parser.add_argument("--keep-cache", action="store_true",
                        help="use the autotuner's usual cache (default: a fresh one)")
    parser.add_argument("--gpus", default="1",
                        help="time on this many GPUs, a process each ('all': every visible one)")
    parser.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 32),
                        help="processes filling the compile caches first (0: none)")
    parser.add_argument("--cache-dir", default=os.path.join(tempfile.gettempdir(),
                                                             "coopgen-rmsnorm-sweep"),
                        help="the compile caches' folder (kept: a later slice reuses it)")
    parser.add_argument("--budget", type=float, default=0,
                        help="seconds for the whole sweep: past them no shape starts, and the "
                             "table shows what was timed (0: no limit)")
    parser.add_argument("--plan", action="store_true",
                        help="print the pool's compile tasks and each GPU's widths, run nothing")
    parser.add_argument("--part", help=argparse.SUPPRESS)  # "i/n": one timing process
    parser.add_argument("--deadline", type=float, help=argparse.SUPPRESS)  # epoch seconds
    args = parser.parse_args(argv)
    if args.table:
        shapes: dict = {}
        for path in args.table:
            with open(path, encoding="utf-8") as f:
                shapes.update((_shape_key(r), r) for r in json.load(f)["rmsnorm"])
        rows = sorted(shapes.values(),
                      key=lambda r: (DTYPES.index(r["dtype"]), r["hidden"], r["rows"]))
        print("\n".join(table_lines(rows) + [""] + summary_lines(summary(rows))))
        return 0
    if not args.sweep:
        parser.error("--sweep or --table")
    if args.part:
        part, parts = map(int, args.part.split("/"))
        return time_part(args, part, parts)
    if args.plan:
        print("\n".join(plan_lines(args)))
        return 0
    return run_sweep(args)


if __name__ == "__main__":
    # run as the module "rmsnorm" (this folder is sys.path[0]): the pool's processes and the
    # timing processes then name its functions alike (Triton's and Inductor's cache keys)
    import rmsnorm
    sys.exit(rmsnorm.main())
