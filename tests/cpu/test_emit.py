"""Emitter on the fixture model (no CUB): specs carry what the runtime needs."""
from pathlib import Path

import pytest

pytest.importorskip("clang.cindex")

from coopgen.generator.emit import bindable, effective_return, emit_class  # noqa: E402
from coopgen.generator.headers import find_entry  # noqa: E402
from coopgen.generator.parse import parse  # noqa: E402
from coopgen.generator.roles import Overrides, apply_overrides  # noqa: E402

FIXTURE = Path(__file__).parent / "fixtures" / "include"


@pytest.fixture(scope="module")
def fixture_class():
    raw = parse(FIXTURE, cccl="fixture", headers_digest="none")
    return apply_overrides(raw, Overrides())[0].cls("BlockFixture")


def test_emitted_spec_is_importable_data(fixture_class):
    text = emit_class(find_entry("3.0.1"), fixture_class)
    ns = {}
    exec(compile(text, "block_fixture.py", "exec"), ns)
    spec = ns["SPEC"]
    assert spec.name == "BlockFixture" and spec.cpp == "cub::BlockFixture"
    assert [m.name for m in spec.methods] == ["Sum", "Load", "Sort"]  # hidden one left out
    s = spec.methods[0]
    assert [(p.name, p.role, p.base, p.extent) for p in s.params] == [
        ("input", "input_array", "T", "ITEMS_PER_THREAD"),
        ("output", "output_array", "T", "ITEMS_PER_THREAD"),
        ("aggregate", "output_scalar", "T", None),
        ("valid_items", "count", "int", None)]
    assert s.tparams == ("ITEMS_PER_THREAD",)
    assert [c.signature for c in spec.constructors] == ["BlockFixture()",
                                                        "BlockFixture(TempStorage &)"]


def test_bindable_follows_roles_and_operator_kinds(fixture_class):
    assert all(bindable(m, fixture_class) for m in fixture_class.methods if not m.hidden)


@pytest.mark.parametrize("spelled, want", [
    ("void", "void"), ("T", "T"), ("", "void"),
    ("::cuda::std::enable_if_t<!::cuda::std::is_convertible_v<DecomposerT, int>>", "void"),
    ("::cuda::std::enable_if_t<cond<A, B>, T>", "T")])
def test_effective_return(spelled, want):
    assert effective_return(spelled) == want
