"""The CUB API model: facts checked by hand in the CCCL 3.0.1 / 3.5.0 headers."""
import json
import os
import subprocess
import sys

import pytest

from coopgen.generator import cli
from coopgen.generator.headers import find_entry, load_lock, locate
from coopgen.generator.model import from_json, snake_case, to_json
from coopgen.generator.report import coverage, diff
from coopgen.generator.roles import load_overrides

USER_FACING = {
    "BlockAdjacentDifference", "BlockDiscontinuity", "BlockExchange", "BlockHistogram",
    "BlockLoad", "BlockMergeSort", "BlockRadixRank", "BlockRadixRankMatch",
    "BlockRadixRankMatchEarlyCounts", "BlockRadixSort", "BlockReduce", "BlockRunLengthDecode",
    "BlockScan", "BlockShuffle", "BlockStore", "WarpExchange", "WarpLoad", "WarpMergeSort",
    "WarpReduce", "WarpScan", "WarpStore"}


@pytest.fixture(scope="module")
def m301(fresh_models):
    return fresh_models("3.0.1")[0]


def test_parse_is_clean_and_complete(fresh_models, m301):
    model, warnings = fresh_models("3.0.1")
    assert model.diagnostics == ()
    assert warnings == []
    # 20 block/warp headers, then the thread headers and util_ptx.cuh (for their functions)
    assert len([h for h in model.headers if h.startswith(("cub/block/", "cub/warp/"))]) == 20
    assert len(model.headers) == 28
    assert {c.name for c in model.classes if c.user_facing} == USER_FACING
    assert all(not c.qualname.startswith("cub::CUB_") for c in model.classes)


def test_block_reduce_template_params(m301):
    tps = m301.cls("BlockReduce").template_params
    assert [(t.name, t.cpp_type, t.default, t.keyword) for t in tps] == [
        ("T", "", None, "t"),
        ("BLOCK_DIM_X", "int", None, "block_dim_x"),
        ("ALGORITHM", "BlockReduceAlgorithm", "BLOCK_REDUCE_WARP_REDUCTIONS", "algorithm"),
        ("BLOCK_DIM_Y", "int", "1", "block_dim_y"),
        ("BLOCK_DIM_Z", "int", "1", "block_dim_z"),
    ]
    assert m301.cls("BlockReduce").temp_storage.form == "struct"


def test_radix_sort_bit_defaults(m301):
    sorts = [m for m in m301.cls("BlockRadixSort").methods if m.name == "Sort"]
    assert len(sorts) == 6
    plain = sorts[0]
    assert plain.signature == "Sort(KeyT (&)[ITEMS_PER_THREAD], int, int)"
    assert [(p.name, p.default, p.role) for p in plain.params] == [
        ("keys", None, "inout_array"), ("begin_bit", "0", "count"),
        ("end_bit", "sizeof(KeyT) * 8", "count")]
    decomposer = sorts[1]
    assert [p.role for p in decomposer.params] == ["inout_array", "operator", "count", "count"]
    assert [p.default for p in decomposer.params] == [None, None, None, None]


def test_merge_sort_inherits_sort_methods(m301):
    cls = m301.cls("BlockMergeSort")
    assert cls.bases == ("BlockMergeSortStrategy",)
    names = [(m.name, m.inherited_from) for m in cls.methods if not m.excluded]
    assert names == [("Sort", "BlockMergeSortStrategy")] * 4 + [
        ("StableSort", "BlockMergeSortStrategy")] * 4
    assert [m.name for m in cls.methods if m.excluded] == ["get_linear_tid"]
    assert cls.temp_storage.form == "inherited"


def test_temp_storage_forms(m301):
    assert m301.cls("BlockLoad").temp_storage.form == "alias"
    assert m301.cls("BlockLoad").temp_storage.spelling == "Uninitialized<_TempStorage>"
    assert m301.cls("WarpExchange").temp_storage.form == "internal"
    assert m301.cls("BlockScan").temp_storage.form == "struct"


def test_block_load_algorithm_values(m301):
    e = m301.enum("BlockLoadAlgorithm")
    assert [(v.name, v.value) for v in e.values] == [
        ("BLOCK_LOAD_DIRECT", 0), ("BLOCK_LOAD_STRIPED", 1), ("BLOCK_LOAD_VECTORIZE", 2),
        ("BLOCK_LOAD_TRANSPOSE", 3), ("BLOCK_LOAD_WARP_TRANSPOSE", 4),
        ("BLOCK_LOAD_WARP_TRANSPOSE_TIMESLICED", 5)]
    assert e.qualname == "cub::BlockLoadAlgorithm"


def test_roles_of_scan_and_load(m301):
    ex = [m for m in m301.cls("BlockScan").methods if m.signature ==
          "ExclusiveSum(T (&)[ITEMS_PER_THREAD], T (&)[ITEMS_PER_THREAD], T &)"][0]
    assert [p.role for p in ex.params] == ["input_array", "output_array", "output_scalar"]
    load = m301.cls("BlockLoad").methods[2]
    assert [(p.name, p.role) for p in load.params] == [
        ("block_src_it", "iterator_in"), ("dst_items", "output_array"),
        ("block_items_end", "count"), ("oob_default", "input_scalar")]
    cb = [m for m in m301.cls("BlockScan").methods if "BlockPrefixCallbackOp" in m.signature][0]
    assert cb.params[-1].role == "prefix_callback"


def test_coverage_counts(m301):
    rep = coverage(m301, frozenset())
    assert set(rep["classes"]) == USER_FACING
    block = sum(r["public"] for r in rep["classes"].values() if r["scope"] == "block")
    warp = sum(r["public"] for r in rep["classes"].values() if r["scope"] == "warp")
    assert (block, warp) == (113, 41)
    assert rep["totals"]["hidden"] == 15
    assert rep["totals"]["constructors"] == 38  # WarpExchange() and WarpMergeSort() are deleted
    r = rep["classes"]["BlockReduce"]
    assert (r["public"], r["hidden"], r["bound"], r["constructors"]) == (6, 0, 0, 2)
    assert "Sum(T (&)[ITEMS_PER_THREAD])" in r["missing"]


def test_free_functions_by_family(m301):
    """CCCL 3.0.1's namespace-scope functions, counted by hand in cub/block, cub/thread and
    util_ptx.cuh (cub/warp has none; the thread scans sit in cub::internal)."""
    rep = coverage(m301, frozenset())
    fams = {k: (t["functions"], t["public"], t["excluded"]) for k, t in
            rep["function_families"].items()}
    assert fams == {"block": (11, 17, 2), "thread": (11, 7, 1), "util": (10, 7, 1)}
    shuffle = m301.function("ShuffleUp")
    assert (shuffle.scope, shuffle.family, shuffle.file) == ("warp", "util", "cub/util_ptx.cuh")
    ov = shuffle.overloads[0]
    assert ov.signature == "ShuffleUp(T, int, int, unsigned int)"
    assert [(t.name, t.keyword) for t in ov.template_params] == [
        ("LOGICAL_WARP_THREADS", "logical_warp_threads"), ("T", "t")]
    striped = m301.function("LoadDirectStriped").overloads
    assert [t.keyword for t in striped[0].template_params][0] == "block_threads"
    assert [p.role for p in striped[2].params] == [
        "thread_rank", "iterator_in", "output_array", "count", "input_scalar"]
    assert {"CacheLoadModifier", "CacheStoreModifier"} <= {e.name for e in m301.enums}
    # the macro-made ThreadLoad specializations are hidden, each signature once
    loads = m301.function("ThreadLoad").overloads
    assert sum(not o.hidden for o in loads) == 1
    assert len({o.signature for o in loads}) == len(loads)


def test_every_public_free_function_is_bound_or_excluded():
    for entry in load_lock():
        rep = coverage(cli.load_model(entry), cli.bound_overloads(entry))
        missing = {n: r["missing"] for n, r in rep["functions"].items() if r["missing"]}
        assert missing == {}, entry.cccl


def test_coverage_json_command(capsys):
    assert cli.main(["coverage", "--cccl", "3.0.1", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["cccl"] == "3.0.1"
    row = data["classes"]["BlockReduce"]
    assert {"user_facing", "public", "hidden", "bound", "constructors", "constructors_bound",
            "missing"} <= set(row)


def test_diff_301_to_350(fresh_models):
    d = diff(fresh_models("3.0.1")[0], fresh_models("3.5.0")[0])
    assert "cub::WarpReduceBatched" in d["classes_added"]
    assert d["classes_removed"] == []
    added = d["overloads_added"]
    assert any(a.startswith("WarpScan::InclusiveScanPartial(") for a in added)
    assert any(a.startswith("WarpReduce::Max(") for a in added)
    assert d["enum_values_added"] == [
        "cub::BlockReduceAlgorithm::BLOCK_REDUCE_WARP_REDUCTIONS_NONDETERMINISTIC"]
    # Renames (ITEMS_PER_THREAD -> ItemsPerThread) keep the keyword and are not new overloads.
    assert "BlockReduce<BLOCK_DIM_X -> BlockDimX> (keyword block_dim_x)" in d[
        "template_params_renamed"]
    assert not any(a.startswith("BlockReduce::") for a in added)
    # free functions: CCCL 3.5.0's bfloat16 UpperBound; ThreadsPerBlock keeps block_threads=
    assert "UpperBound::UpperBound(InputIteratorT, OffsetT, __nv_bfloat16)" in added
    assert not any(a.startswith("LoadDirectStriped::") for a in added)


def test_keywords_stable_across_renames():
    assert snake_case("BLOCK_DIM_X") == snake_case("BlockDimX") == "block_dim_x"
    assert snake_case("ITEMS_PER_THREAD") == snake_case("ItemsPerThread") == "items_per_thread"
    assert snake_case("LOGICAL_WARP_THREADS") == snake_case("LogicalWarpThreads")


@pytest.mark.parametrize("cccl", [e.cccl for e in load_lock()])
def test_no_drift(fresh_models, cccl):
    """The committed model equals a fresh generation, byte for byte."""
    model, _ = fresh_models(cccl)
    committed = cli.model_path(find_entry(cccl)).read_text(encoding="utf-8")
    assert to_json(model) == committed
    assert from_json(committed) == model


def test_deterministic_across_hash_seeds(tmp_path):
    code = ("import hashlib,sys;from coopgen.generator.pipeline import build_model;"
            "from coopgen.generator.headers import find_entry, load_lock;"
            "from coopgen.generator.model import to_json;"
            "print(hashlib.sha256(to_json(build_model(find_entry('3.0.1'))[0]).encode()).hexdigest())")
    outs = set()
    for seed in ("0", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed, COOPGEN_DISABLE_CACHE="1")
        outs.add(subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                                encoding="utf-8", errors="replace", check=True).stdout)
    assert len(outs) == 1


def test_parse_kept_in_cache(fresh_models, tmp_path, monkeypatch):
    """coopgen generate keeps each libclang parse in the cache, under a key of all it depends
    on; a later build takes it from there (no parse) and gives the same model."""
    from coopgen.generator import parse, pipeline
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("COOPGEN_DISABLE_CACHE", raising=False)
    entry = find_entry("3.0.1")
    assert pipeline.build_model(entry) == fresh_models("3.0.1")
    [kept] = (tmp_path / "models").iterdir()
    assert kept.name.startswith("3.0.1-")

    def no_parse(*args, **kwargs):
        raise AssertionError("parsed again despite the kept parse")
    monkeypatch.setattr(parse, "translation_unit", no_parse)
    assert pipeline.build_model(entry) == fresh_models("3.0.1")
    root, detail = locate(entry).include_root, frozenset(load_overrides().unstable)
    assert kept.name == f"3.0.1-{parse.parse_key(root, entry.headers_digest, detail)}.json"
    # other headers, or other classes asked for, are another parse
    assert parse.parse_key(root, "sha256:other", detail) != kept.stem.split("-", 1)[1]
    assert parse.parse_key(root, entry.headers_digest, frozenset()) != kept.stem.split("-", 1)[1]


def test_generated_files_deterministic_and_headed(tmp_path):
    """Two generations under different hash seeds write identical bytes; every generated
    module says it is generated, from which lock entry, and by which command."""
    code = ("import hashlib,sys,pathlib;from coopgen.generator.pipeline import build_model;"
            "from coopgen.generator.headers import find_entry, load_lock;"
            "from coopgen.generator.write import write_outputs;"
            "e=find_entry('3.0.1');out=pathlib.Path(sys.argv[1]);"
            "write_outputs(e, build_model(e)[0], out);"
            "print(hashlib.sha256(b''.join(p.read_bytes() for p in sorted(out.rglob('*'))"
            " if p.is_file())).hexdigest())")
    digests = set()
    for seed in ("1", "999"):
        env = dict(os.environ, PYTHONHASHSEED=seed, COOPGEN_DISABLE_CACHE="1")
        digests.add(subprocess.run([sys.executable, "-c", code, str(tmp_path / seed)], env=env,
                                   capture_output=True, encoding="utf-8", errors="replace", check=True).stdout)
    assert len(digests) == 1
    for py in (tmp_path / "1" / "cccl_3_0_1").glob("*.py"):
        first = py.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith("# Generated by coopgen.generator") and "CCCL 3.0.1" in first
        assert "`coopgen generate`" in first and "Do not edit" in first


def test_range_roles_and_documented_extent(fresh_models):
    """CCCL 3.5.0's fixed-size ranges: const InputT& is read; OutputT& documented as an output
    range is written; WarpReduceBatched's "range holding ``Batches`` items" ties the range's
    length to the Batches template parameter."""
    m350 = fresh_models("3.5.0")[0]
    batched = {m.signature: m for m in m350.cls("WarpReduceBatched").methods}
    sts = batched["SumToStriped(const InputT &, OutputT &)"]
    assert [(p.role, p.array_extent) for p in sts.params] == [
        ("range_input", "Batches"), ("range_output", None)]
    wr = [m for m in m350.cls("WarpReduce").methods if m.signature == "Sum(const InputType &)"]
    assert [p.role for p in wr[0].params] == ["range_input"]
    from coopgen.generator.emit import bindable
    cls = m350.cls("WarpReduceBatched")
    assert all(bindable(m, cls) for m in cls.methods)


def test_generate_forks_its_writer_only_without_threads():
    """``coopgen generate`` forks its writer process before starting its parse threads; called
    from a process that runs threads already (a fork would copy a lock another thread holds),
    it writes in place instead, with the same results."""
    import threading

    from coopgen.generator.cli import _InPlace, _writer

    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        writer = _writer()
        assert isinstance(writer, _InPlace)
        with writer as w:
            assert w.submit(sorted, [3, 1, 2]).result() == [1, 2, 3]
    finally:
        stop.set()
        other.join()


def test_write_entry_takes_the_files_made_ahead_only_for_the_same_model(tmp_path, monkeypatch):
    """The writer makes each entry's files ahead from its committed model; a write takes them
    only where its model is that one, and makes its own from any other."""
    from dataclasses import replace

    from coopgen.generator.emit import module_name

    entry = find_entry("3.0.1")
    committed = cli.load_model(entry)
    monkeypatch.setattr(cli, "_AHEAD", {})
    monkeypatch.setattr(cli, "generated_dir", lambda: tmp_path / "gen")
    monkeypatch.setattr(cli, "docs_api_dir", lambda: tmp_path / "docs")
    cli._make_ahead((entry,))
    assert cli._AHEAD[entry][0] == committed
    expected = cli.entry_texts(entry, committed)
    assert cli._AHEAD[entry][1] == expected
    count, _, page, bound = cli.write_entry(entry, from_json(to_json(committed)))
    assert entry not in cli._AHEAD  # taken once
    assert count == len(expected.package) + len(expected.pages) and bound == expected.bound
    assert page is None  # not the default entry
    assert (tmp_path / "gen" / entry.tag / "cub_api.json").read_text() == to_json(committed)
    # another model (a class's brief changed) is written from itself, not from what was made
    # ahead
    first = next(c for c in committed.classes if c.user_facing)
    changed = replace(committed, classes=tuple(
        replace(c, brief="A brief no release has.") if c is first else c
        for c in committed.classes))
    cli._make_ahead((entry,))
    cli.write_entry(entry, changed)
    assert (tmp_path / "gen" / entry.tag / "cub_api.json").read_text() == to_json(changed)
    page = tmp_path / "docs" / entry.cccl / f"{module_name(first)}.md"
    assert "A brief no release has." in page.read_text()
    # an entry with no committed model is left to its write
    monkeypatch.setattr(cli, "model_path", lambda e: tmp_path / "absent.json")
    cli._make_ahead((entry,))
    assert entry not in cli._AHEAD


def test_generate_lowers_the_priority_of_its_parse_threads_only():
    """The parse threads (and libclang's, which take their caller's) and the writer run below
    the walks and the preamble: ``_lower_priority`` raises the calling thread's nice value by
    10, and leaves the other threads' as they were."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    here = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    with ThreadPoolExecutor(1, initializer=cli._lower_priority) as pool:
        there = pool.submit(lambda: os.getpriority(os.PRIO_PROCESS,
                                                   threading.get_native_id())).result()
    assert there == min(19, here + 10)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == here
