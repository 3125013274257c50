"""Parser rules on a tiny fixture header: every model field the parser fills, no CUB needed."""
from pathlib import Path

import pytest

pytest.importorskip("clang.cindex")

from coopgen.generator.parse import parse  # noqa: E402
from coopgen.generator.roles import Overrides, apply_overrides  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "include"


@pytest.fixture(scope="module")
def model():
    raw = parse(FIXTURE, cccl="fixture", headers_digest="none")
    return apply_overrides(raw, Overrides())[0]


def test_no_errors_and_abi_namespace_stripped(model):
    assert model.diagnostics == ()
    assert model.headers == ("cub/block/block_fixture.cuh", "cub/thread/thread_fixture.cuh")
    assert [c.qualname for c in model.classes] == [
        "cub::BlockFixtureBase", "cub::BlockFixture", "cub::detail::BlockFixtureDetail"]


def test_template_params_and_defaults(model):
    tps = model.cls("BlockFixture").template_params
    assert [(t.name, t.kind, t.cpp_type, t.default, t.keyword) for t in tps] == [
        ("T", "type", "", None, "t"),
        ("BLOCK_DIM_X", "value", "int", None, "block_dim_x"),
        ("ALGORITHM", "value", "BlockFixtureAlgorithm", "BLOCK_FIXTURE_SAFE", "algorithm"),
        ("BLOCK_DIM_Y", "value", "int", "1", "block_dim_y"),
    ]


def test_members_public_only_inherited_and_hidden(model):
    cls = model.cls("BlockFixture")
    assert [c.signature for c in cls.constructors] == [
        "BlockFixture()", "BlockFixture(TempStorage &)"]
    names = [(m.name, m.hidden, m.inherited_from) for m in cls.methods]
    assert names == [("Sum", False, None), ("Load", False, None), ("Undocumented", True, None),
                     ("Sort", False, "BlockFixtureBase")]
    assert cls.bases == ("BlockFixtureBase",)
    assert cls.temp_storage.form == "struct"
    assert cls.brief == "A fixture primitive."


def test_params_roles_and_defaults(model):
    s = model.cls("BlockFixture").methods[0]
    assert s.signature == "Sum(const T (&)[ITEMS_PER_THREAD], T (&)[ITEMS_PER_THREAD], T &, int)"
    assert [t.name for t in s.template_params] == ["ITEMS_PER_THREAD"]
    got = [(p.name, p.const, p.ref, p.array_elem, p.array_extent, p.default, p.role)
           for p in s.params]
    assert got == [
        ("input", True, "lvalue", "T", "ITEMS_PER_THREAD", None, "input_array"),
        ("output", False, "lvalue", "T", "ITEMS_PER_THREAD", None, "output_array"),
        ("aggregate", False, "lvalue", None, None, None, "output_scalar"),
        ("valid_items", False, "", None, None, "BLOCK_DIM_X * 2", "count"),
    ]
    assert s.brief == "Sums the items."
    assert "@param[in] input" in s.doc
    load = model.cls("BlockFixture").methods[1]
    assert [p.role for p in load.params] == ["iterator_in", "output_array"]
    sort = model.cls("BlockFixture").methods[3]
    assert [p.role for p in sort.params] == ["inout_array", "operator"]


def test_enum_values(model):
    e = model.enum("BlockFixtureAlgorithm")
    assert [(v.name, v.value, v.brief) for v in e.values] == [
        ("BLOCK_FIXTURE_FAST", 0, "fast"), ("BLOCK_FIXTURE_SAFE", 4, "safe")]


def test_user_facing_rule(model):
    flags = {c.name: c.user_facing for c in model.classes}
    assert flags == {"BlockFixtureBase": False, "BlockFixture": True,
                     "BlockFixtureDetail": False}


def test_free_functions(model):
    """Namespace-scope functions of namespace cub: overloads in declaration order (a forward
    declaration and its definition count once), hidden ones marked, operators and cub::detail
    left out; template parameters, roles (linear_tid is the caller's rank) and the family."""
    assert [(f.qualname, f.scope, f.family) for f in model.functions] == [
        ("cub::LoadFixtureStriped", "block", "block"),
        ("cub::HiddenFixtureHelper", "block", "block"),
        ("cub::ThreadFixtureLoad", "thread", "thread")]
    load = model.function("LoadFixtureStriped")
    assert [o.signature for o in load.overloads] == [
        "LoadFixtureStriped(int, RandomAccessIterator, T (&)[ITEMS_PER_THREAD])",
        "LoadFixtureStriped(int, RandomAccessIterator, T (&)[ITEMS_PER_THREAD], int)"]
    first = load.overloads[0]
    assert first.kind == "function" and not first.hidden
    assert [(p.name, p.role) for p in first.params] == [
        ("linear_tid", "thread_rank"), ("block_src_it", "iterator_in"),
        ("dst_items", "output_array")]
    assert [(t.name, t.kind, t.keyword) for t in first.template_params] == [
        ("BLOCK_THREADS", "value", "block_threads"), ("T", "type", "t"),
        ("ITEMS_PER_THREAD", "value", "items_per_thread"),
        ("RandomAccessIterator", "type", "random_access_iterator")]
    assert load.brief == "Loads a striped tile without a collective."
    assert model.function("HiddenFixtureHelper").overloads[0].hidden
    thread_load = model.function("ThreadFixtureLoad").overloads[0]
    assert thread_load.template_params[0].cpp_type == "FixtureModifier"
    assert [e.name for e in model.enums] == ["BlockFixtureAlgorithm", "FixtureModifier"]



def test_preamble_made_once_per_process_and_removed_with_it(tmp_path):
    """A process precompiles clang's CUDA runtime wrapper once for all its parses and removes
    it when it ends: a worker of ``coopgen generate`` too (a worker ends without atexit)."""
    import os
    import subprocess
    import sys

    script = tmp_path / "parse_twice.py"
    script.write_text(
        "import sys, tempfile\n"
        "from concurrent.futures import ProcessPoolExecutor\n"
        "from pathlib import Path\n"
        "from coopgen.generator import parse\n\n"
        "def parse_twice(root):\n"
        "    for _ in range(2):\n"
        "        parse.parse(Path(root), cccl='fixture', headers_digest='none')\n"
        "    assert parse._preamble.cache_info().misses == 1\n"
        "    return sorted(p.name for p in Path(tempfile.gettempdir()).glob('coopgen-preamble-*'))\n\n"
        "if __name__ == '__main__':\n"
        "    with ProcessPoolExecutor(1) as pool:\n"
        "        print(len(pool.submit(parse_twice, sys.argv[1]).result()))\n"
        "    print(len(parse_twice(sys.argv[1])))\n", encoding="utf-8")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = subprocess.run([sys.executable, str(script), str(FIXTURE)], check=True, text=True,
                         capture_output=True, env=dict(os.environ, TMPDIR=str(tmp))).stdout
    assert out.split() == ["1", "1"]  # the worker's, then (the worker's removed) the process's
    assert not list(tmp.glob("coopgen-preamble-*"))


def test_preamble_never_shadows_a_release_header(tmp_path):
    """The shared preamble holds headers outside the release (libstdc++'s, NVTX); one that
    reads a header the release ships too (a toolkit's cuda_fp16.h reads <nv/target>) would
    hide the release's copy from the parse, so that release gets the wrapper-only preamble."""
    from coopgen.generator import parse as P

    root = tmp_path / "release"
    (root / "nv").mkdir(parents=True)
    (root / "nv" / "target").write_text("", encoding="utf-8")
    assert P._shadowed(("/opt/cuda/include/nv/target",), root)
    assert not P._shadowed(("/usr/include/c++/12/iterator", "/opt/cuda/include/cuda_fp16.h"), root)
    made = P._preamble(tuple(a for a in P.clang_args(FIXTURE) if a != f"-isystem{FIXTURE}"))
    assert made is not None and not P._shadowed(made[1], FIXTURE)
    assert any(name.endswith("/iterator") for name in made[1])  # the shared headers are in it
    assert not any("/cuda_fp16.h" in name for name in made[1])


def test_parses_on_threads_give_the_same_model():
    """``coopgen generate`` parses on one thread per core (libclang holds no GIL meanwhile) and
    walks each translation unit on its own thread: the model is the one a plain parse gives."""
    from concurrent.futures import ThreadPoolExecutor

    from coopgen.generator.parse import model_of, translation_unit

    with ThreadPoolExecutor(3) as pool:
        units = list(pool.map(translation_unit, [FIXTURE] * 3))
    alone = parse(FIXTURE, cccl="fixture", headers_digest="none")
    assert [model_of(u, cccl="fixture", headers_digest="none") for u in units] == [alone] * 3


def test_direct_reads_agree_with_cindex():
    """The walk reads its hot cursor properties straight from libclang (parse._Reads): for
    every cursor under the fixture's namespace cub they give what cindex's properties give."""
    from coopgen.generator import parse as P

    ci = P._clang()
    read = P._Reads(ci)
    unit = P.translation_unit(FIXTURE)
    A, K = ci.AccessSpecifier, ci.CursorKind
    seen = []

    def check(cursor):
        children = read.children(cursor)
        assert children == list(cursor.get_children())
        for ch in children:
            seen.append(ch.kind)
            assert ch._kind_id == ch.kind.value
            assert read.spelling(ch) == ch.spelling
            assert read.is_definition(ch) == ch.is_definition()
            loc = ch.location
            assert read.file_name(ch) == (loc.file.name if loc.file else "")
            assert read.place(read.lib.clang_getCursorLocation(ch))[1] == loc.line
            assert read.public(ch) == (ch.access_specifier == A.PUBLIC)
            assert read.comments(ch) == (ch.raw_comment or "", ch.brief_comment or "")
            assert read.type(ch).spelling == ch.type.spelling
            if ch.kind in (K.CXX_METHOD, K.CONSTRUCTOR):
                assert read.deleted(ch) == ch.is_deleted_method()
                assert read.type(ch, result=True).spelling == ch.result_type.spelling
            check(ch)

    check(next(c for c in unit.tu.cursor.get_children() if c.spelling == "cub"))
    wanted = {K.CLASS_TEMPLATE, K.CXX_METHOD, K.PARM_DECL, K.TEMPLATE_NON_TYPE_PARAMETER}
    assert wanted <= set(seen)


def test_defaults_read_from_the_source_text():
    """A default is the source text after a declaration's ``=``, as its tokens spell it; a
    declaration with no ``=`` in its text has none."""
    from coopgen.generator import parse as P

    ci = P._clang()
    read = P._Reads(ci)
    unit = P.translation_unit(FIXTURE)
    K = ci.CursorKind
    defaults = {}

    def collect(cursor):
        for ch in read.children(cursor):
            if ch.kind in (K.PARM_DECL, K.TEMPLATE_NON_TYPE_PARAMETER,
                           K.TEMPLATE_TYPE_PARAMETER):
                defaults[ch.spelling] = read.default_after_eq(ch)
            collect(ch)

    collect(unit.tu.cursor)
    assert defaults["valid_items"] == "BLOCK_DIM_X * 2"
    assert defaults["ALGORITHM"] == "BLOCK_FIXTURE_SAFE"
    assert defaults["BLOCK_DIM_Y"] == "1"
    assert defaults["input"] is None
