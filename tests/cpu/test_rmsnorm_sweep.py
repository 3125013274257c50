"""The RMSNorm wide sweep's plan without a GPU: the autotuner's candidates for every width of the
sweep and for odd ones (each covers the row, none repeats another's kernel, each links for
sm_90), the kernels' per-variant cache files, the shapes split over GPUs, the pool's compile
tasks, and the parts merged into one file and one table. Skipped where PyTorch is absent."""
import json
import re
import sys
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest

torch = pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
sys.path.insert(0, str(ROOT / "tools" / "bench"))
import rms_norm  # noqa: E402
import rmsnorm  # noqa: E402
import torch_rms_norm as trn  # noqa: E402

FIXTURE = ROOT / "tests" / "cpu" / "fixtures" / "bench_rmsnorm.json"
ODD = (7, 32, 1000, 4000, 5000, 11008, 13824, 12290)


def _plans(hidden):
    out = {}
    for config in trn.CONFIGS:
        try:
            out[config] = trn.kernel_plan("bfloat16", hidden, config)
        except ValueError:
            pass
    return out


@pytest.mark.parametrize("hidden", rmsnorm.SWEEP_HIDDENS + ODD)
def test_every_candidate_covers_the_row_and_none_repeats_a_kernel(hidden):
    plans = _plans(hidden)
    assert plans, f"no candidate for rows of {hidden}"
    kernels = [arguments for _, arguments, _, _ in plans.values()]
    assert len(kernels) == len(set(kernels))  # one timing per kernel
    for config, (threads, arguments, view, per_block) in plans.items():
        _, items, words, _, striped, blocked, _, tail, reduce, warp_rows, late, cluster, \
            barrier, pairs = arguments
        assert barrier == config.barrier and (not barrier or words and not late and not cluster)
        assert pairs == config.pairs and (pairs or barrier)  # elements one by one: barriers
        assert late == config.late and (not late or config.variant == "sliced")
        assert cluster == config.cluster and (not cluster or config.variant == "sliced")
        row = hidden // (cluster or 1)  # a block's part of the row (cluster's: whole vectors)
        assert row * (cluster or 1) == hidden and (not cluster or row % rms_norm.VECTOR == 0)
        assert threads % 32 == 0 and 32 <= threads <= rms_norm.MAX_THREADS
        assert items == rms_norm.VECTOR * config.vectors and reduce == config.reduce
        # the threads that hold a row: a block's, or a warp's
        holders = 32 if config.variant == "warp" else threads
        assert holders * items >= row and per_block == max(warp_rows, 1)
        full = holders * items == row
        if config.variant in ("striped", "blocked"):
            assert full and words and not tail  # exactly the block's vectors
        if config.variant in ("sliced", "warp"):
            assert hidden % rms_norm.VECTOR == 0 and words and tail == (not full)
        if config.variant == "elements":
            assert not full and not words and view == "flat"
        if config.variant == "warp":
            assert warp_rows == config.warp_rows and threads == 32 * warp_rows and \
                holders * (items - rms_norm.VECTOR) < hidden  # no lane's vectors all past it
        else:
            assert warp_rows == 0
        assert view == ("flat" if not words else np.uint64 if striped else np.uint32
                        if config.variant == "blocked" else rms_norm.VECTOR_BITS)
    if hidden % rms_norm.VECTOR == 0:  # rows of whole vectors move as 16-byte vectors
        assert any(config.variant == "sliced" for config in plans)
    if hidden % rms_norm.VECTOR == 0 and hidden <= 32 * 8 * rms_norm.VECTOR:
        assert [(c.vectors, c.warp_rows) for c in plans if c.variant == "warp"] == \
            [(-(-hidden // (32 * rms_norm.VECTOR)), r) for r in trn.WARP_ROWS]  # a warp a row


def test_decode_candidates_are_pruned_past_decode_batches(monkeypatch):
    decode = [c for c in trn.CONFIGS if trn.decode_only(c)]
    # CUB's reductions only for a few rows; the warps' sums from shared memory for any rows
    assert {c.reduce for c in decode} == set(rms_norm.REDUCTIONS) - {"warps_shared"} and \
        any(c.vectors < 1 for c in decode)
    assert not {c for c in trn.CONFIGS if c.reduce == "warps_shared"} & set(decode)
    half = trn._config(0.5, "striped")
    assert trn._config(4, "warp", warp_rows=1) in decode and \
        trn._config(4, "warp", warp_rows=4) not in decode
    assert half in decode and trn.kernel_plan("float16", 4096, half)[0] == 1024
    bulk = [c for c in trn.CONFIGS if trn.bulk_only(c)]
    assert bulk and all(c.barrier and c.variant == "sliced" for c in bulk)
    assert not set(bulk) & set(decode)
    few = [c for c in trn.CONFIGS if c not in bulk]
    for rows, kept in ((1, few), (33, few), (64, few),
                       (65, [c for c in trn.CONFIGS if c not in decode]),
                       (32768, [c for c in trn.CONFIGS if c not in decode])):
        x = torch.empty(rows, 4096, device="meta")
        assert trn._run.prune(trn.CONFIGS, x, x[0], 1e-6, None) == kept
        assert [c for c in trn.CONFIGS if trn.for_rows(c, rows)] == kept
    x = torch.empty(4, 4096, device="meta")
    clustered = [c for c in trn.CONFIGS if c.cluster]
    assert clustered and all(c in decode for c in clustered)
    monkeypatch.setattr(trn, "clusters_on", lambda device: False)  # before sm_90
    assert trn._run.prune(trn.CONFIGS, x, x[0], 1e-6, None) == [
        c for c in few if not c.cluster]
    with pytest.raises(ValueError, match="rows of 8192 are no striped rows of 4 elements"):
        trn.kernel_plan("float16", 8192, half)
    with pytest.raises(ValueError, match="rows of 2056 are no rows of 8 16-byte vectors a "
                                         "lane"):
        trn.kernel_plan("float16", 2056, trn._config(8, "warp", warp_rows=4))


def test_a_width_past_one_vector_per_thread_keeps_the_wider_candidates():
    # 11008 = 1376 vectors: one a thread needs 1376 threads; two, three and four fit, and the
    # late-weights candidates of two to eight
    plans = _plans(11008)
    assert sorted({c.vectors for c in plans if not c.cluster}) == [2, 3, 4, 5, 6, 8]
    assert {c.vectors for c in plans if c.late} == {2, 3, 4, 5, 6, 8}
    # a cluster's blocks hold a part each: 5,504 (two), 2,752 (four) or 1,376 (eight) elements,
    # one or two vectors a thread
    assert {(c.cluster, c.vectors) for c in plans if c.cluster} == {
        (n, v) for n in trn.CLUSTERS for v in (1, 2)}
    with pytest.raises(ValueError, match="rows of 5000 are no sliced rows of 2 parts"):
        trn.kernel_plan("bfloat16", 5000, trn._config(1, "sliced", cluster=2))
    with pytest.raises(ValueError, match="rows of 4096 are no sliced rows of 8 parts of at "
                                         "least 1024"):
        trn.kernel_plan("bfloat16", 4096, trn._config(1, "sliced", cluster=8))
    with pytest.raises(ValueError, match="rms_norm: 3 vectors a thread are 64 x 16 for rows "
                                         "of 1024: the kernel of 2"):
        trn.kernel_plan("bfloat16", 1024, trn.CONFIGS[4])


def _link_candidates(dtype, hidden, configs, ptx=False):
    """Link each of ``configs``'s kernels for rows of ``hidden``: {config: (LinkResult, PTX)}."""
    from numba.cuda.typing.typeof import typeof

    import ml_dtypes
    from coopgen import block_shape
    from coopgen.linkcheck import compile_kernel_pieces, link_pieces, link_ptx
    out, seen = {}, set()
    for config in configs:
        try:
            threads, arguments, view, _ = trn.kernel_plan(dtype, hidden, config)
        except ValueError:
            continue
        kernel = rms_norm.make_kernel(*arguments, cache=False)
        if kernel in seen:
            continue
        seen.add(kernel)
        element = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.float16
        arr = typeof(np.empty(1, element if view == "flat" else view))
        sig = (arr, arr, arr, numba.typeof(np.int32(0)), numba.typeof(np.float32(0)))
        with block_shape(threads), warnings.catch_warnings():
            warnings.simplefilter("ignore", numba.NumbaExperimentalFeatureWarning)
            pieces = compile_kernel_pieces(kernel, sig)
            res = link_pieces(pieces, arch=(9, 0),
                              max_registers=kernel.targetoptions.get("max_registers"))
            out[config] = (res, link_ptx(kernel, sig, pieces=pieces) if ptx else None)
    return out


@pytest.mark.parametrize("hidden", (5000, 11008, 13824, 1000, 7))
def test_every_candidate_of_an_odd_width_links(hidden):
    linked = _link_candidates("bfloat16", hidden, trn.CONFIGS)
    for config, (res, _) in linked.items():
        if config.variant != "elements":  # 16-byte vectors in registers
            assert res.local_bytes == 0, (config, res)
    assert linked


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
@pytest.mark.parametrize("hidden", (4096, 8192, 5000))
def test_the_bulk_candidates_load_everything_before_a_barrier(dtype, hidden):
    # a barrier right after the loads: every 16-byte load of x and w comes before it (ptxas
    # moves no load past a barrier), then the reduction's own barrier; 32 registers under the
    # launch bounds, nothing in local memory
    bulk = [c for c in trn.CONFIGS if trn.bulk_only(c)]
    linked = _link_candidates(dtype, hidden, bulk, ptx=True)
    assert linked
    for config, (res, ptx) in linked.items():
        assert res.local_bytes == 0 and res.spill_stores == 0, (config, res.log)
        assert res.registers <= 32, config
        lines = ptx.splitlines()
        loads = [i for i, line in enumerate(lines) if "ld.global" in line]
        barriers = [i for i, line in enumerate(lines) if re.search(r"\bbar(?:rier)?\.sync", line)]
        assert len(barriers) == 2 and max(loads) < barriers[0], config
        assert len(loads) == 2 * config.vectors, config
    with pytest.raises(ValueError, match="a barrier after the loads"):
        rms_norm.make_kernel(dtype, 16, True, threads=256, late_weights=True,
                             loads_barrier=True)


NEW = [c for c in trn.CONFIGS if c.variant == "warp" or trn.decode_only(c)]


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
@pytest.mark.parametrize("hidden", (1024, 1536, 2048, 4096, 16384))
def test_the_warp_and_decode_candidates_link_and_load_before_they_reduce(dtype, hidden):
    """A warp a row: no shared memory and no barrier; every candidate: no local memory, and
    x's and w's 16-byte (or, half a vector a thread, 8-byte) loads all issued before the
    reduction's first shuffle or barrier, so the weights' load overlaps the row's."""
    linked = _link_candidates(dtype, hidden, NEW, ptx=True)
    assert linked
    for config, (res, ptx) in linked.items():
        assert res.local_bytes == 0, (config, res.log)
        lines = ptx.splitlines()
        loads = [i for i, line in enumerate(lines) if "ld.global" in line]
        first_sync = min(i for i, line in enumerate(lines) if "shfl.sync" in line or
                         "bar.sync" in line or "barrier.sync" in line)
        assert loads and max(loads) < first_sync, config
        # a 16-byte load of x and one of w for each vector and no other load of them, or one
        # 8-byte load of each
        wide = r"ld\.global(?:\.nc)?\.(?:u64|v2\.[ub]32)" if config.vectors < 1 else \
            r"ld\.global(?:\.nc)?\.(?:v2\.[ufb]64|v4\.[ub]32)"
        assert len(re.findall(wide, ptx)) == len(loads) == max(2 * config.vectors, 2), config
        if config.variant == "warp":
            assert "bar.sync" not in ptx and "barrier.sync" not in ptx and res.smem == 0
            assert hidden <= 2048
    if hidden <= 2048:
        assert any(c.variant == "warp" for c in linked)


def test_cached_kernels_have_a_cache_file_per_variant(tmp_path, monkeypatch):
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path), raising=False)
    from numba.cuda.core import config as cuda_config
    monkeypatch.setattr(cuda_config, "CACHE_DIR", str(tmp_path), raising=False)
    names = {}
    for hidden in rmsnorm.SWEEP_HIDDENS:
        for _, arguments, _, _ in _plans(hidden).values():
            for dtype in rms_norm.DTYPES:  # bfloat16's too (coopgen's kernel cache keeps them)
                kernel = rms_norm.make_kernel(dtype, *arguments[1:], cache=True)
                assert type(kernel._cache).__name__ == "CUDACache"
                names.setdefault(kernel._cache._impl.filename_base, set()).add(
                    (dtype, *arguments[1:]))
    # numba rewrites a function's one index file on every save: a file per variant lets the
    # pool's processes compile variants at once
    assert all(len(kernels) == 1 for kernels in names.values())
    assert type(rms_norm.make_kernel("float16", 16, True, threads=256,
                                     cache=False)._cache).__name__ == "NullCache"


def test_sets_stop_at_the_calls_a_timing_makes():
    assert rmsnorm.sets_for(1, 1024, 50 << 20) == rmsnorm.BATCHES * rmsnorm.PER_BATCH
    assert rmsnorm.sets_for(4096, 4096, 50 << 20) == 7


def test_the_sweep_splits_whole_widths_over_gpus():
    rows = rmsnorm.SWEEP_ALL_ROWS
    groups = rmsnorm.sweep_groups(rms_norm.DTYPES, rmsnorm.SWEEP_HIDDENS)
    assert len(groups) * len(rows) == 306
    assert rmsnorm.split_groups(groups, rows, 1) == [groups]
    for parts in (2, 4, 8):
        split = rmsnorm.split_groups(groups, rows, parts)
        assert sorted(g for p in split for g in p) == sorted(groups)
        assert all(p == sorted(p, key=groups.index) for p in split)  # the sweep's order
        loads = [sum(rmsnorm.group_cost(h, rows) for _, h in p) for p in split]
        assert max(loads) - min(loads) <= max(rmsnorm.group_cost(h, rows) for _, h in groups)
    assert rmsnorm.split_groups(groups[:3], rows, 8)[5] == []


def test_the_pool_compiles_what_the_timing_meets_first():
    groups = [("bfloat16", 4096), ("float16", 4096), ("bfloat16", 5000)]
    tasks = rmsnorm.precompile_tasks(groups, rmsnorm.SWEEP_ALL_ROWS, quack=True)
    kinds = [t[0] for t in tasks]
    assert kinds == sorted(kinds, key=rmsnorm.PRECOMPILE_ORDER.index)  # the longest first
    for kind in ("compile", "quack", "triton"):
        assert sorted((d, h) for k, d, h, _, _ in tasks if k == kind) == sorted(groups)
    # torch.compile: one row (its own specialization), then the first dynamic count
    assert {t[3] for t in tasks if t[0] == "compile"} == {(1, 4)}
    bulk = {i for i, c in enumerate(trn.CONFIGS) if trn.bulk_only(c)}
    assert {t[3] for t in tasks if t[0] != "compile" and t[4] not in bulk} == {(1,)}
    # bulk candidates at the first row count past DECODE_ROWS, which the timing meets first
    assert {t[3] for t in tasks if t[0] == "coopgen" and t[4] in bulk} == {(256,)}
    assert not [t for t in rmsnorm.precompile_tasks(groups, (16, 1), False)
                if t[0] == "coopgen" and t[4] in bulk]
    coopgen = [t for t in tasks if t[0] == "coopgen"]
    for dtype, hidden in groups:
        assert len([t for t in coopgen if t[1:3] == (dtype, hidden)]) == len(_plans(hidden))
    assert "quack" not in {t[0] for t in rmsnorm.precompile_tasks(groups, (256, 1), False)}
    # decode candidates at the first decode batch, none where the rows are all prefills
    decode = {i for i, c in enumerate(trn.CONFIGS) if trn.decode_only(c)}
    assert {t[3] for t in rmsnorm.precompile_tasks(groups, (256, 16, 1), False)
            if t[0] == "coopgen" and t[4] in decode} == {(16,)}
    assert not [t for t in rmsnorm.precompile_tasks(groups, (256, 4096), False)
                if t[0] == "coopgen" and t[4] in decode]
    assert {t[3] for t in rmsnorm.precompile_tasks(groups, (256, 1), False)
            if t[0] == "compile"} == {(256,)}  # dynamic from its first call


def test_a_pool_task_that_fails_is_reported_not_raised():
    stats = rmsnorm.precompile([("triton", "bfloat16", 1024, (1,), None)], 1)
    assert stats["tasks"] == 1 and stats["peers"]["triton"]["tasks"] == 1
    if not torch.cuda.is_available():
        assert len(stats["peers"]["triton"]["failed"]) == 1
    assert rmsnorm.precompile_lines(stats)[0].startswith("precompile: 1 tasks on 1 processes")


def test_parts_merge_into_one_file_and_one_table(tmp_path, capsys):
    fixture = json.loads(FIXTURE.read_text(encoding="utf-8"))
    rows, env = fixture["rmsnorm"], fixture["environment"]
    out = str(tmp_path / "sweep.json")
    rmsnorm.merge(out, rows[:2], env)
    merged = rmsnorm.merge(out, rows[1:], dict(env, gpu="2 x fixture GPU"))
    saved = json.loads(Path(out).read_text(encoding="utf-8"))
    assert len(merged) == len(rows) == saved["summary"]["shapes"]
    assert saved["environment"]["gpu"] == "2 x fixture GPU"
    parts = []
    for i, part in enumerate((rows[:1], rows[1:])):
        parts.append(tmp_path / f"part{i}.json")
        rmsnorm.merge(str(parts[-1]), part, env)
    assert rmsnorm.main(["--table"] + [str(p) for p in parts]) == 0
    table = capsys.readouterr().out
    assert f"over {len(rows)} shapes" in table
    assert table.count("| float16 |") + table.count("| bfloat16 |") == len(rows)


def test_a_timing_process_times_its_widths_into_its_file(tmp_path, monkeypatch):
    import argparse
    fixture = json.loads(FIXTURE.read_text(encoding="utf-8"))
    template, env = fixture["rmsnorm"][0], fixture["environment"]
    timed = []

    def shape_row(dtype, rows, hidden, sweep=False, numba_launch=True):
        assert not numba_launch  # the sweep leaves numba's own launch out
        timed.append((dtype, rows, hidden))
        return dict(template, dtype=dtype, rows=rows, hidden=hidden)

    monkeypatch.setattr(rmsnorm, "shape_row", shape_row)
    monkeypatch.setattr(rmsnorm, "_environment", lambda: env)
    path = tmp_path / "part1.json"
    args = argparse.Namespace(rows="1,4", dtypes="float16,bfloat16", hiddens="1024,8192",
                              keep_cache=True, json=str(path), deadline=None)
    assert rmsnorm.time_part(args, 1, 2) == 0
    groups = rmsnorm.split_groups(rmsnorm.sweep_groups(["float16", "bfloat16"], [1024, 8192]),
                                  [1, 4], 2)[1]
    assert timed == [(d, n, h) for d, h in groups for n in (1, 4)]
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert sorted((r["dtype"], r["rows"], r["hidden"]) for r in saved["rmsnorm"]) == \
        sorted(timed)
    # what the timing loaded from the caches and compiled itself (no kernel here)
    assert saved["environment"]["caches"] == dict.fromkeys(rmsnorm.CACHE_COUNTS, 0)


def test_a_failed_shape_is_reported_and_a_deadline_stops_the_rest(tmp_path, monkeypatch):
    import argparse
    import time
    fixture = json.loads(FIXTURE.read_text(encoding="utf-8"))
    template = fixture["rmsnorm"][0]

    def shape_row(dtype, rows, hidden, sweep=False, numba_launch=True):
        if rows == 4:
            raise AssertionError("rmsnorm coopgen: error 3x the tolerance")
        return dict(template, dtype=dtype, rows=rows, hidden=hidden)

    monkeypatch.setattr(rmsnorm, "shape_row", shape_row)
    monkeypatch.setattr(rmsnorm, "_environment", lambda: dict(fixture["environment"]))
    path = tmp_path / "part0.json"
    args = argparse.Namespace(rows="1,4,16", dtypes="bfloat16", hiddens="1024",
                              keep_cache=True, json=str(path), deadline=None)
    assert rmsnorm.time_part(args, 0, 1) == 1  # the failure counts
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert [r["rows"] for r in saved["rmsnorm"]] == [1, 16]
    assert saved["environment"]["failed"] == [
        "bfloat16:4x1024: AssertionError: rmsnorm coopgen: error 3x the tolerance"]
    late = argparse.Namespace(rows="1,16", dtypes="bfloat16", hiddens="2048", keep_cache=True,
                              json=str(tmp_path / "late.json"), deadline=time.time() + 1)
    assert rmsnorm.time_part(late, 0, 1) == 0
    saved = json.loads((tmp_path / "late.json").read_text(encoding="utf-8"))
    assert saved["rmsnorm"] == []  # nothing started past the deadline, and it says so
    assert saved["environment"]["not_timed"] == ["bfloat16:1x2048", "bfloat16:16x2048"]


def test_the_plan_names_every_width_once(capsys):
    assert rmsnorm.main(["--sweep", "--plan", "--gpus", "2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("306 shapes; the pool: ")
    widths = [w for line in out[1:] for w in line.split("of timing: ")[1].split(", ")]
    assert len(widths) == len(set(widths)) == 34 and len(out) == 3
