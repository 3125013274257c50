"""The RMSNorm benchmark's case list, tables and charts without a GPU: the charts are drawn
from a fixture of made-up figures (tests/cpu/fixtures/bench_rmsnorm.json) and from the
committed kernel-vs-nvcc results."""
import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "cpu" / "fixtures" / "bench_rmsnorm.json"
RUNTIME = ROOT / "tools" / "bench" / "results" / "runtime.json"
sys.path.insert(0, str(ROOT / "tools" / "bench"))
import rmsnorm  # noqa: E402


def test_cases_cover_dtypes_and_llm_shapes():
    cases = rmsnorm.cases()
    assert len(cases) == len(set(cases)) == 2 * 6 * 6
    assert {c[0] for c in cases} == {"float16", "bfloat16"}
    assert {h for _, _, h in cases} == {2048, 3072, 4096, 5120, 7168, 8192}
    rows = {r for _, r, _ in cases}
    assert min(rows) == 1 and max(rows) == 32768 and 256 in rows  # decode batches to prefill


def test_bytes_sets_and_sweep():
    assert rmsnorm.bytes_moved(16384, 8192) == 2 * (2 * 16384 * 8192 + 8192)
    # 4 L2s of 50 MB over 32 MB copies of x: 7 copies; one 256 MB x is already past them
    assert rmsnorm.sets_for(4096, 4096, 50 << 20) == 7
    assert rmsnorm.sets_for(16384, 8192, 50 << 20) == 1
    assert min(rmsnorm.SWEEP_ALL_ROWS) == 1 and max(rmsnorm.SWEEP_ALL_ROWS) == 32768
    hiddens = rmsnorm.SWEEP_HIDDENS
    assert min(hiddens) == 1024 and max(hiddens) == 16384
    # widths that are neither powers of two nor sums of two of them (LLaMA's 11008, 13824...)
    assert [h for h in hiddens if bin(h).count("1") > 2] == [3584, 5000, 7168, 11008, 13824, 14336]


def _fixture():
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_table_ratios():
    rows = _fixture()["rmsnorm"]
    lines = rmsnorm.table_lines(rows)
    assert len(lines) == 2 + len(rows)
    # float16 4096 x 4096: coopgen 2900 GB/s, Triton 2950, copy 3000
    assert "| 4096 x 4096 | float16 | 3000 | 2900 (0.97) | 1900 (0.63) | 2100 (0.70) | " \
           "2950 (0.98) | **0.983** (Triton) | 8.0 / 12.0 / 25.0 / 18.0 | 30.0 / 50.0 (Triton) " \
           "| 25.0 / 40.0 / 35.0 / 28.0 |" in lines  # CUDA graph µs of every peer
    # bfloat16 16384 x 8192: coopgen 3120 against Triton's 3080
    assert "**1.013** (Triton) |" in lines[-1]
    assert lines[3].endswith("| 25.0 / 40.0 / 35.0 / 20.0 |")  # Triton's graph: 20 µs
    env = _fixture()["environment"]
    assert rmsnorm.run_line(env) == "Run of 2000-01-01 on fixture GPU, 0.0: PyTorch 0.0, " \
                                    "Triton 0.0."
    assert rmsnorm.print_rmsnorm(rows, env).startswith(rmsnorm.run_line(env) + "\n\n| rows")
    sweep = rmsnorm.sweep_lines(rows)
    assert "| 4096 x 4096 | float16 | 256 x 16 (tuned) | 30 | 2900 | 0.967 | 8.0 |" in sweep
    assert len(sweep) == 2 + 2 * len(rows)


def _texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def _ratio_labels(svg: str) -> list[str]:
    return re.findall(r'<g id="ratio-[^"]*">\s*<text[^>]*>([^<]*)</text>', svg)


def test_draw_charts(tmp_path):
    pytest.importorskip("matplotlib")
    import draw

    written = draw.draw([str(FIXTURE), str(RUNTIME)], str(tmp_path))
    assert sorted(Path(p).name for p in written) == ["kernel_vs_nvcc.svg", "rmsnorm.svg"]
    svg = (tmp_path / "rmsnorm.svg").read_text(encoding="utf-8")
    texts = _texts(svg)
    assert {"float16", "bfloat16", "hidden 4096", "hidden 8192", "0.98 target"} <= set(texts)
    assert any(t.startswith("RMSNorm forward: fixture GPU, 2000-01-01") for t in texts)
    # one line per dtype and hidden size
    assert sorted(re.findall(r'<g id="ratio-line-([a-z0-9-]+)"', svg)) == [
        "bfloat16-4096", "bfloat16-8192", "float16-4096", "float16-8192"]
    ratios = [r["ratio"] for r in json.loads(RUNTIME.read_text(encoding="utf-8"))["runtime"]]
    labels = _ratio_labels((tmp_path / "kernel_vs_nvcc.svg").read_text(encoding="utf-8"))
    assert labels == [f"{q:.3f}" for q in ratios]
    again = draw.draw([str(FIXTURE)], str(tmp_path / "again"))
    assert Path(again[0]).read_bytes() == (tmp_path / "rmsnorm.svg").read_bytes()


def test_newest_run_wins():
    import draw
    old = {"environment": {"date": "2026-01-01"}, "runtime": [1]}
    new = {"environment": {"date": "2026-02-01"}, "runtime": [2]}
    later_same_day = {"environment": {"date": "2026-02-01"}, "runtime": [3]}
    assert draw.newest_with([old, new, {"environment": {}}], "runtime") is new
    assert draw.newest_with([old, new, later_same_day], "runtime") is later_same_day
    assert draw.newest_with([old], "rmsnorm") is None


def test_committed_charts_show_the_committed_results():
    # docs/img holds what `bench.py draw` made of tools/bench/results (the bytes depend on
    # matplotlib's version, so the figures and the run are compared)
    import draw
    everything = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(RUNTIME.parent.glob("*.json"))]
    for compiler in ("", "numba_cuda_mlir"):  # each compiler's runs have their own charts
        runs = [r for r in everything if draw.compiler_of(r) == compiler]
        runtime = draw.newest_with(runs, "runtime")
        name = f"kernel_vs_nvcc-{compiler}.svg" if compiler else "kernel_vs_nvcc.svg"
        svg = (ROOT / "docs" / "img" / name).read_text(encoding="utf-8")
        assert _ratio_labels(svg) == [f"{r['ratio']:.3f}" for r in runtime["runtime"]]
        assert any(runtime["environment"]["date"] in t for t in _texts(svg))
    results = [r for r in everything if not draw.compiler_of(r)]
    bench = draw.newest_with(results, "rmsnorm")
    if bench is not None:
        texts = _texts((ROOT / "docs" / "img" / "rmsnorm.svg").read_text(encoding="utf-8"))
        assert any(t.startswith("RMSNorm forward:") and bench["environment"]["date"] in t
                   for t in texts)


def test_summary_and_the_table_command(capsys):
    rows = _fixture()["rmsnorm"]
    s = rmsnorm.summary(rows)
    ratios = [r["peers"]["coopgen"]["GBps"] / r["peers"][rmsnorm.fastest_peer(r)]["GBps"]
              for r in rows]
    assert s["shapes"] == len(rows) and s["worst"][1] == min(ratios)
    assert min(ratios) <= s["geomean"] <= max(ratios)
    assert s["host_us_median"]["coopgen"] == 8.0
    assert rmsnorm.summary_lines(s)[0].startswith(f"coopgen / fastest peer over {len(rows)} "
                                                  f"shapes: geometric mean {s['geomean']:.3f}")
    assert rmsnorm.main(["--table", str(FIXTURE)]) == 0
    out = capsys.readouterr().out
    assert "| 4096 x 4096 | float16 |" in out and "median host µs per call: coopgen 8.0" in out


def test_a_quack_column_where_quack_ran():
    rows = json.loads(json.dumps(_fixture()["rmsnorm"]))
    for r in rows:
        r["peers"]["quack"] = dict(r["peers"]["triton"], GBps=r["peers"]["triton"]["GBps"] + 1)
    lines = rmsnorm.table_lines(rows)
    assert " QuACK GB/s (x copy) |" in lines[0] and "coopgen / eager / compile / Triton / " \
        "QuACK |" in lines[0]
    assert all("(QuACK)" in line for line in lines[2:])
    assert rmsnorm.peers_of(_fixture()["rmsnorm"]) == ["coopgen", "torch", "compile", "triton"]


def _sweep_result(ratios: dict) -> dict:
    """A made-up sweep: {(dtype, rows, hidden): coopgen over the fastest peer}."""
    shapes = []
    for (dtype, rows, hidden), q in ratios.items():
        peers = {"coopgen": {"GBps": 100.0 * q}, "torch": {"GBps": 50.0},
                 "compile": {"GBps": 100.0}, "triton": {"GBps": 90.0}, "copy": {"GBps": 120.0}}
        shapes.append({"dtype": dtype, "rows": rows, "hidden": hidden, "peers": peers})
    worst = min(ratios, key=ratios.get)
    return {"environment": {"gpu": "fixture GPU", "date": "2000-01-02"}, "rmsnorm": shapes,
            "summary": {"shapes": len(ratios), "geomean": 1.0, "at_least_0.95": 3,
                        "worst": [f"{worst[0]}:{worst[1]}x{worst[2]}", ratios[worst]]}}


def test_draw_sweep_writes_every_shape_in_its_cell(tmp_path):
    pytest.importorskip("matplotlib")
    import draw

    ratios = {("float16", 1, 1024): 0.9496, ("float16", 64, 5000): 1.123,
              ("bfloat16", 1, 1024): 1.0, ("bfloat16", 64, 5000): 0.987}
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(_sweep_result(ratios)), encoding="utf-8")
    # a sweep file feeds only the sweep's chart, never the 72 shapes' rmsnorm.svg
    written = draw.draw([str(path)], str(tmp_path))
    assert [Path(p).name for p in written] == ["rmsnorm-sweep.svg"]
    svg = (tmp_path / "rmsnorm-sweep.svg").read_text(encoding="utf-8")
    cells = dict(re.findall(r'<g id="cell-([a-z0-9x-]+)">\s*<text[^>]*>([^<]*)</text>', svg))
    assert cells == {f"{d}-{r}x{h}": f"{q:.2f}" for (d, r, h), q in ratios.items()}
    assert "0.95" == cells["float16-1x1024"]  # 0.9496, to two places; the title keeps four
    title = " ".join(t for t in _texts(svg) if "fastest peer" in t or "wide sweep" in t)
    assert "worst 0.9496 (float16:1x1024)" in title and "3 of 4 shapes" in title
    assert "fixture GPU, 2000-01-02" in title
    # with the 72 shapes' results beside it, each chart reads its own file
    both = draw.draw([str(FIXTURE), str(path)], str(tmp_path / "both"))
    assert sorted(Path(p).name for p in both) == ["rmsnorm-sweep.svg", "rmsnorm.svg"]


def test_committed_sweep_chart_shows_the_newest_sweep():
    import draw
    sweeps = sorted((ROOT / "tools" / "bench" / "results" / "sweeps").glob("*.json"))
    newest = draw.newest_with([draw.sections(json.loads(p.read_text(encoding="utf-8")))
                               for p in sweeps], "sweep")
    svg = (ROOT / "docs" / "img" / "rmsnorm-sweep.svg").read_text(encoding="utf-8")
    cells = re.findall(r'<g id="cell-[a-z0-9x-]+">\s*<text[^>]*>([^<]*)</text>', svg)
    assert len(cells) == len(newest["sweep"])
    summary = newest["summary"]
    assert any(f"geometric mean {summary['geomean']:.3f}" in t for t in _texts(svg))
    assert any(newest["environment"]["gpu"] in t for t in _texts(svg))
