"""Lock entries as data: `coopgen lock-add`'s pieces, per-release overrides, the pages that list
every entry (docs nav, release matrix) and the diff kernel authors read."""
import dataclasses

import pytest

from coopgen.generator import cli, headers, lock_add
from coopgen.generator.emit import bound_keys
from coopgen.generator.emit_docs import NAV_BEGIN, NAV_END, emit_nav, emit_release_matrix
from coopgen.generator.model import Overload, Param
from coopgen.generator.report import coverage, diff, format_coverage, format_diff, positional_change
from coopgen.generator.roles import OverridesError, load_overrides

ENTRIES = headers.load_lock()
INDEX = ["13.3.5.0.6", "13.3.4.3.1", "13.3.4.2.1", "13.3.3.4.1", "13.3.3.3.1", "13.2.86",
         "13.2.75", "13.2.27", "13.1.115", "13.1.78", "13.0.85", "13.0.50"]


def test_wheel_candidates_for_a_cccl_release():
    assert lock_add.wheel_candidates("3.4.3", INDEX)[0] == "13.3.4.3.1"
    assert lock_add.wheel_candidates("3.1.4", INDEX) == ["13.1.115", "13.1.78"]
    assert lock_add.is_cccl_version("3.2.0") and not lock_add.is_cccl_version("13.2.86")


def test_add_to_lock_keeps_default_first_then_newest_first(tmp_path):
    """Removing an entry and adding it back gives the same bytes: the order depends only on
    which releases the lock holds."""
    lock = tmp_path / "cub_headers.lock"
    original = headers.lock_path().read_text(encoding="utf-8")
    lock.write_text(original, encoding="utf-8")
    middle = ENTRIES[len(ENTRIES) // 2]
    head, blocks = lock_add._split_lock(original)
    lock.write_text(head + "\n".join(b for b in blocks if f'cccl = "{middle.cccl}"' not in b), encoding="utf-8")
    assert lock_add.add_to_lock(lock, middle, default=False) == "added"
    assert lock.read_text(encoding="utf-8") == original
    assert lock_add.add_to_lock(lock, middle, default=False) == "unchanged"
    other = dataclasses.replace(middle, wheel_sha256="0" * 64)
    with pytest.raises(headers.HeaderError, match=f"entry CCCL {middle.cccl} is already there"):
        lock_add.add_to_lock(lock, other, default=False)
    lock_add.add_to_lock(lock, middle, default=True)
    assert [e.cccl for e in headers.load_lock(lock)][0] == middle.cccl


def test_nearest_entry():
    entry = next(e for e in ENTRIES if e.cccl == "3.3.4")
    assert lock_add.nearest_entry(entry, ENTRIES).cccl == "3.4.3"


def _overrides(tmp_path, text):
    path = tmp_path / "overrides.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("body, message", [
    ('cccl = ">=3.1"\nexclude = ["WarpReduce::Sum(T)"]', "reason is required"),
    ('reason = "x"\nexclude = ["WarpReduce::Sum(T)"]', "cccl is required"),
    ('cccl = "3.1 to 3.2"\nreason = "x"\nexclude = []', "is not a version range"),
    ('cccl = ">=3.1"\nreason = "x"', "it does nothing"),
    ('cccl = ">=3.1"\nreason = "x"\nexclude = ["WarpReduce.Sum"]', 'not "Class::Signature"'),
    ('cccl = ">=3.1"\nreason = "x"\nroles = { "A.b.c" = "sideways" }', "is not one of"),
    ('cccl = ">=3.1"\nreason = "x"\nnvrtc = ["-x"]', "unknown key 'nvrtc'"),
])
def test_release_override_schema(tmp_path, body, message):
    with pytest.raises(OverridesError, match=message):
        load_overrides(_overrides(tmp_path, "[[release]]\n" + body + "\n"))


def test_release_override_ranges(tmp_path):
    o = load_overrides(_overrides(tmp_path, '[[release]]\ncccl = ">=3.1.4,<3.3"\nreason = "r"\n'
                                            'nvrtc_options = ["-x"]\n'))
    assert [o.nvrtc_options(v) for v in ("3.0.1", "3.1.4", "3.2.0", "3.3.4")] == [
        (), ("-x",), ("-x",), ()]


def test_every_public_overload_is_bound_or_excluded_with_a_reason():
    for entry in ENTRIES:
        model = cli.load_model(entry)
        report = coverage(model, cli.bound_overloads(entry))
        for name, row in report["classes"].items():
            assert row["missing"] == [], (entry.cccl, name)
            assert all(x["reason"] for x in row["excluded_overloads"])


def test_the_warp_reduce_defect_is_excluded_where_cub_has_it():
    """CCCL 3.1.4 and 3.2.0: one WarpReduce overload does not compile under NVRTC."""
    for entry in ENTRIES:
        model = cli.load_model(entry)
        excluded = [o.signature for o in model.cls("WarpReduce").methods
                    if o.excluded.startswith("excluded in this release")]
        assert bool(excluded) == (entry.cccl in ("3.1.4", "3.2.0")), entry.cccl


def test_unstable_detail_classes_are_counted_apart():
    """cub::detail's block_topk (3.3.4+) and BlockLoadToShared (3.2+) are bound as unstable:
    their own coverage rows and totals, none in the stable ones."""
    for entry in ENTRIES:
        report = coverage(cli.load_model(entry), cli.bound_overloads(entry))
        have = {"BlockLoadToShared"} if entry.cccl >= "3.2" else set()
        have |= {"block_topk"} if entry.cccl >= "3.3.4" else set()
        assert set(report["unstable"]) == have, entry.cccl
        assert not have & set(report["classes"])
        assert report["unstable_totals"]["bound"] == sum(
            r["bound"] for r in report["unstable"].values())
    text = format_coverage(coverage(cli.load_model(ENTRIES[0]), cli.bound_overloads(ENTRIES[0])))
    assert "unstable classes (cub::detail" in text and "block_topk" in text


def test_internal_template_parameters_are_no_keywords():
    for entry in ENTRIES:
        for cls in cli.load_model(entry).classes:
            for t in cls.template_params:
                assert not t.keyword.startswith("_"), (entry.cccl, cls.name, t.name)
                assert t.keyword or t.name.startswith("_") or "detail::" in t.cpp_type


def test_nav_lists_every_entry():
    import pathlib

    text = (pathlib.Path(cli.docs_api_dir()).parent.parent / "mkdocs.yml").read_text(encoding="utf-8")
    assert emit_nav(text, ENTRIES) == text, "run `coopgen generate`"
    for entry in ENTRIES:
        assert f"api/{entry.cccl}/index.md" in text.split(NAV_BEGIN)[1].split(NAV_END)[0]


def test_release_matrix_has_no_drift():
    models = [cli.load_model(e) for e in ENTRIES]
    page = emit_release_matrix(ENTRIES, models, [frozenset(bound_keys(m)) for m in models])
    assert (cli.docs_api_dir() / "releases.md").read_text(encoding="utf-8") == page, "run `coopgen generate`"
    assert "excluded in this release" in page


def _ov(*names, defaults=()):
    params = tuple(Param(n, "int", False, "", False, None, None,
                         "0" if n in defaults else None, "count") for n in names)
    return Overload("M", "method", f"M({', '.join(names)})", params, "void", (), False, False,
                    None, "", "", "", "", 0)


def test_positional_changes():
    assert "inserted before 'b'" in positional_change(_ov("a", "b"), _ov("a", "x", "b"))
    assert "reordered" in positional_change(_ov("a", "b"), _ov("b", "a"))
    assert "removed" in positional_change(_ov("a", "b", "c"), _ov("a", "c"))
    assert "required parameter 'x' appended" in positional_change(_ov("a"), _ov("a", "x"))
    assert positional_change(_ov("a"), _ov("a", "x", defaults=("x",))) is None


def test_diff_marks_visibility_and_positional_breaks():
    d = diff(cli.load_model(headers.find_entry("3.0.1")), cli.load_model(headers.find_entry("3.5.0")))
    assert {c["visibility"] for c in d["changes"]} == {"public", "hidden", "detail", "internal"}
    # cub::detail classes bound as unstable are marked detail, never public
    assert "[detail] class added: cub::detail::block_topk" in format_diff(d)
    assert any("BlockMergeSort<_Unroll>" in c["item"] and c["visibility"] == "internal"
               for c in d["changes"])
    assert any("keeps the keyword block_dim_x=" in k for k in d["keywords_renamed"])
    text = format_diff(d)
    assert "[public] class added: cub::WarpReduceBatched" in text
    assert "Breaks positional callers:" in text


def test_calling_an_excluded_overload_gives_the_reason(tmp_path):
    """A kernel calling CCCL 3.2.0's excluded WarpReduce range overload fails to compile with
    the override's reason (a process of its own: the runtime picks its release at import)."""
    import os
    import subprocess
    import sys

    code = '''
import numpy as np
from numba import cuda
from numba.cuda import types
from coopgen import block_shape, local, warp

def k(x):
    items = local.array(4, np.int32)
    x[0] = warp.WarpReduce.Reduce(items, "max")

with block_shape(32):
    try:
        cuda.compile_all(k, (types.int32[::1],), device=False, abi="numba", cc=(9, 0),
                         output="ltoir")
    except Exception as e:
        print(str(e))
'''
    env = dict(os.environ, COOPGEN_CCCL="3.2.0")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, encoding="utf-8", errors="replace",
                         cwd=tmp_path)
    assert "Reduce(const InputType &, ReductionOp) is not bound: excluded in this release: " \
           "CUB's range overload" in out.stdout, out.stdout + out.stderr
