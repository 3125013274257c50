"""The benchmark's charts, drawn from its JSON results with matplotlib (the ``bench`` extra),
as SVG files that ``docs/performance.md`` shows.

    python tools/bench/bench.py draw [RESULT.json ...] [--img DIR]

Without files it reads ``tools/bench/results/*.json`` and ``results/sweeps/*.json``; without
``--img`` it writes to ``docs/img``. Each chart comes from the newest file (by its run's date)
holding its section:

- ``rmsnorm.svg`` (section ``rmsnorm``): coopgen's GB/s over the fastest peer's (PyTorch
  eager, torch.compile, Triton), a line per hidden size against the row count, one panel per
  dtype;
- ``kernel_vs_nvcc.svg`` (section ``runtime``): per case, nvcc's time over coopgen's
  (1.0: as fast as nvcc -O3 with CUB), with the 0.99 target;
- ``sampling.svg`` (section ``sampling``, tools/bench/sampling.py): per batch x vocab, the
  peers' kernel time over coopgen's (above 1: coopgen faster), FlashInfer and PyTorch;
- ``rmsnorm-sweep.svg`` (the wide sweep, ``tools/bench/rmsnorm.py --sweep``, whose files in
  ``results/sweeps`` hold a ``summary``): coopgen's GB/s over the fastest peer's (eager,
  torch.compile, Triton, QuACK) for every shape, a cell per row count and hidden size, a
  panel per dtype, the sweep's geometric mean and worst shape in the title.

The SVGs are reproducible: no date in their metadata and fixed element ids, so drawing the
same results again changes no byte.
"""
from __future__ import annotations

import glob
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RESULTS_DIR = os.path.join(HERE, "results")
SWEEPS_DIR = os.path.join(RESULTS_DIR, "sweeps")
IMG_DIR = os.path.join(ROOT, "docs", "img")
COLORS = {"coopgen": "#2b6cb0", "torch": "#dd6b20", "compile": "#d69e2e", "triton": "#38a169"}
RUNTIME_TARGET = 0.99


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({"svg.hashsalt": "coopgen", "svg.fonttype": "none",
                         "font.size": 9, "axes.spines.top": False,
                         "axes.spines.right": False})
    return plt


def _save(fig, path: str) -> str:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fig.savefig(path, format="svg", bbox_inches="tight",
                metadata={"Date": None, "Creator": "tools/bench/draw.py (matplotlib)"})
    import matplotlib.pyplot as plt
    plt.close(fig)
    return path


def _caption(env: dict) -> str:
    parts = [env.get("gpu", "GPU ?").split(",")[0], env.get("date", "date ?")]
    parts += [f"{name} {env[key]}" for name, key in (("PyTorch", "torch"),
                                                     ("Triton", "triton"),
                                                     ("QuACK", "quack"),
                                                     ("numba-cuda-mlir", "numba_cuda_mlir"),
                                                     ("CuTe DSL", "cutlass"),
                                                     ("numba-cuda", "numba-cuda"),
                                                     ("CCCL", "cccl")) if key in env]
    return ", ".join(parts)


def draw_rmsnorm(result: dict, path: str) -> str:
    """coopgen's GB/s over the fastest peer's for every shape: one line per hidden size
    against the row count, the 0.98 target dashed; a panel per dtype."""
    # imported here: rmsnorm imports the numba examples, which a CuTe DSL run does not load
    from rmsnorm import DTYPES, TARGET, fastest_peer
    plt = _pyplot()
    rows = result["rmsnorm"]
    dtypes = [d for d in DTYPES if any(r["dtype"] == d for r in rows)]
    hiddens = sorted({r["hidden"] for r in rows})
    fig, axes = plt.subplots(1, len(dtypes), figsize=(5.2 * len(dtypes), 3.6), sharey=True,
                             squeeze=False)
    cmap = plt.get_cmap("viridis")
    for ax, dtype in zip(axes[0], dtypes):
        for k, hidden in enumerate(hiddens):
            mine = sorted((r for r in rows if r["dtype"] == dtype and r["hidden"] == hidden),
                          key=lambda r: r["rows"])
            ratios = [r["peers"]["coopgen"]["GBps"] / r["peers"][fastest_peer(r)]["GBps"]
                      for r in mine]
            ax.plot([r["rows"] for r in mine], ratios, marker="o", markersize=3,
                    color=cmap(k / max(1, len(hiddens) - 1)), label=f"hidden {hidden}",
                    gid=f"ratio-line-{dtype}-{hidden}")
        ax.axhline(TARGET, linestyle="--", color="black", linewidth=1,
                   label=f"{TARGET} target")
        ax.set_xscale("log", base=2)
        ax.set_title(dtype)
        ax.set_xlabel("rows")
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("coopgen GB/s / fastest peer's")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), frameon=False,
               bbox_to_anchor=(0.5, -0.14))
    fig.suptitle(f"RMSNorm forward: {_caption(result['environment'])}", y=1.02)
    return _save(fig, path)


def draw_runtime(result: dict, path: str) -> str:
    """nvcc's time over coopgen's per case: bars from 1.0, the 0.99 target dashed."""
    plt = _pyplot()
    rows = result["runtime"]
    fig, ax = plt.subplots(figsize=(6.4, 0.32 * len(rows) + 1.2))
    ys = list(range(len(rows)))[::-1]
    ratios = [r["ratio"] for r in rows]
    ax.barh(ys, [q - 1.0 for q in ratios], left=1.0, height=0.6, color=COLORS["coopgen"])
    for y, q, r in zip(ys, ratios, rows):
        ax.text(max(q, 1.0) + 0.001, y, f"{q:.3f}", va="center", gid=f"ratio-{r['case']}")
    ax.axvline(1.0, color="black", linewidth=1)
    ax.axvline(RUNTIME_TARGET, color="black", linewidth=1, linestyle="--",
               label=f"target {RUNTIME_TARGET}")
    ax.set_yticks(ys, [r["case"] for r in rows])
    span = max(0.02, max(abs(q - 1.0) for q in ratios) + 0.008)
    ax.set_xlim(1.0 - span, 1.0 + span)
    ax.set_xlabel("nvcc -O3 + CUB time / coopgen time (above 1: coopgen faster)")
    ax.legend(loc="lower right", frameon=False)
    ax.set_title(f"Kernel time against nvcc: {_caption(result['environment'])}")
    return _save(fig, path)


def draw_sampling(result: dict, path: str) -> str:
    """Per shape, FlashInfer's and PyTorch's kernel time over coopgen's, a panel each."""
    plt = _pyplot()
    rows = result["sampling"]
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    labels = [f"{r['batch']}x{r['vocab'] // 1000}k" for r in rows]
    for ax, peer, color in ((axes[0], "flashinfer", COLORS["triton"]),
                            (axes[1], "torch", COLORS["torch"])):
        ratios = [r[f"{peer}_ms"] / r["coopgen_ms"] for r in rows]
        ax.bar(range(len(rows)), ratios, 0.7, color=color)
        ax.axhline(1.0, color="black", linewidth=1)
        ax.set_xticks(range(len(rows)), labels, rotation=60, ha="right")
        ax.set_xlabel("batch x vocab")
        ax.set_ylabel(f"{peer} time / coopgen time")
        ax.grid(axis="y", alpha=0.3)
        if peer == "flashinfer":
            ax.set_ylim(min(0.8, min(ratios) - 0.05), max(1.3, max(ratios) + 0.05))
            ax.set_title("vs FlashInfer's TopKTopPSamplingFromProb")
        else:
            ax.set_title("vs PyTorch (sort, cumsum, mask, multinomial)")
    env = result["environment"]
    fig.suptitle(f"Top-k ({env.get('top_k')}) / top-p ({env.get('top_p')}) sampling, float32: "
                 f"{_caption(env)}", y=1.02)
    return _save(fig, path)


def draw_sweep(result: dict, path: str) -> str:
    """The wide sweep: coopgen's GB/s over the fastest peer's, a cell per row count (up) and
    hidden size (across) with its ratio written in it, blue above 1.0 and red below (the
    colours saturate at 0.9 and 1.1); a panel per dtype."""
    import numpy as np
    from matplotlib.colors import TwoSlopeNorm
    from rmsnorm import DTYPES, fastest_peer
    plt = _pyplot()
    rows = result["sweep"]
    dtypes = [d for d in DTYPES if any(r["dtype"] == d for r in rows)]
    hiddens = sorted({r["hidden"] for r in rows})
    counts = sorted({r["rows"] for r in rows})
    fig, axes = plt.subplots(len(dtypes), 1, squeeze=False,
                             figsize=(0.62 * len(hiddens) + 2.2,
                                      (0.3 * len(counts) + 1.2) * len(dtypes) + 0.6),
                             gridspec_kw={"hspace": 0.45})
    norm = TwoSlopeNorm(vmin=0.9, vcenter=1.0, vmax=1.1)
    for ax, dtype in zip(axes[:, 0], dtypes):
        ratios = np.full((len(counts), len(hiddens)), np.nan)
        for r in rows:
            if r["dtype"] == dtype:
                ratios[counts.index(r["rows"]), hiddens.index(r["hidden"])] = \
                    r["peers"]["coopgen"]["GBps"] / r["peers"][fastest_peer(r)]["GBps"]
        image = ax.imshow(np.clip(ratios, 0.9, 1.1), cmap="RdBu", norm=norm, aspect="auto",
                          origin="lower")
        for (i, j), q in np.ndenumerate(ratios):
            if not np.isnan(q):  # a shape the sweep did not time stays blank
                ax.text(j, i, f"{q:.2f}", ha="center", va="center", fontsize=6.5,
                        color="white" if abs(q - 1.0) > 0.07 else "black",
                        gid=f"cell-{dtype}-{counts[i]}x{hiddens[j]}")
        ax.set_xticks(range(len(hiddens)), [f"{h:,}" for h in hiddens], rotation=45,
                      ha="right")
        ax.set_yticks(range(len(counts)), [f"{c:,}" for c in counts])
        ax.set_ylabel("rows")
        ax.set_title(dtype)
        ax.spines[:].set_visible(False)
    axes[-1][0].set_xlabel("hidden")
    fig.colorbar(image, ax=list(axes[:, 0]), shrink=0.8, label="coopgen GB/s / fastest peer's")
    summary = result.get("summary", {})
    worst = summary.get("worst") or ["?", float("nan")]
    fig.suptitle(f"RMSNorm forward, the wide sweep: {_caption(result['environment'])}\n"
                 f"coopgen / fastest peer (eager, torch.compile, Triton, QuACK): geometric mean "
                 f"{summary.get('geomean', float('nan')):.3f}, worst {worst[1]:.4f} ({worst[0]}), "
                 f"{summary.get('at_least_0.95', '?')} of {summary.get('shapes', '?')} "
                 f"shapes at 0.95 or more", y=1.0)
    return _save(fig, path)


CHARTS = {"rmsnorm": ("rmsnorm.svg", draw_rmsnorm),
          "runtime": ("kernel_vs_nvcc.svg", draw_runtime),
          "sampling": ("sampling.svg", draw_sampling),
          "sweep": ("rmsnorm-sweep.svg", draw_sweep)}


def sections(result: dict) -> dict:
    """A result as the charts read it: a wide sweep's shapes (a file with a ``summary``) under
    ``sweep``, so that they never stand for the 72 shapes of ``rmsnorm.svg``."""
    if "summary" in result and "rmsnorm" in result:
        result = dict(result, sweep=result["rmsnorm"])
        del result["rmsnorm"]
    return result


def newest_with(results: list[dict], section: str) -> dict | None:
    """The latest run (by date; later files win ties) holding ``section``."""
    having = [r for r in results if r.get(section)]
    return max(reversed(having), key=lambda r: r["environment"].get("date", ""), default=None)


def compiler_of(result: dict) -> str:
    """The compiler a run's kernels were written for: "" for numba-cuda, "numba_cuda_mlir" for
    numba-cuda-mlir, "cute" for CuTe DSL (bench.py records their versions only then: as
    numba_cuda_mlir and cutlass)."""
    env = result.get("environment", {})
    return "numba_cuda_mlir" if "numba_cuda_mlir" in env else "cute" if "cutlass" in env else ""


def draw(paths=None, img_dir: str = IMG_DIR) -> list[str]:
    """Every chart whose section one of the JSON files holds, one set per compiler (a
    numba-cuda-mlir chart's name ends in -numba_cuda_mlir, a CuTe DSL one's in -cute); returns
    the files written."""
    paths = paths or sorted(glob.glob(os.path.join(RESULTS_DIR, "*.json"))) + \
        sorted(glob.glob(os.path.join(SWEEPS_DIR, "*.json")))
    results = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            results.append(sections(json.load(f)))
    written = []
    for compiler in sorted({compiler_of(r) for r in results}):
        runs = [r for r in results if compiler_of(r) == compiler]
        for section, (name, drawer) in CHARTS.items():
            result = newest_with(runs, section)
            if result is not None:
                stem, ext = os.path.splitext(name)
                name_here = f"{stem}-{compiler}{ext}" if compiler else name
                written.append(drawer(result, os.path.join(img_dir, name_here)))
    return written


def main(args) -> None:
    img = IMG_DIR
    if "--img" in args:
        i = args.index("--img")
        img, args = args[i + 1], args[:i] + args[i + 2:]
    for path in draw(args or None, img):
        print(f"wrote {path}")
