"""The differential suite's pieces that need neither a GPU nor NVRTC: draws are deterministic,
cover what the specs bind, never draw a refused combination, emit valid Python; and the numpy
references' building blocks agree with numpy on random data."""
import ast
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: tools/

from tools.fuzz import families, kernels, runner, space  # noqa: E402

DRAW = space.draw(600, seed=4242)


def test_a_seed_draws_the_same_configurations():
    assert [c.to_json() for c in space.draw(60, seed=7)] == [c.to_json() for c in space.draw(60, seed=7)]
    assert [c.to_json() for c in space.draw(60, seed=7)] != [c.to_json() for c in space.draw(60, seed=8)]


def test_every_overload_with_a_reference_is_drawn_and_the_rest_say_why():
    drawable = {f"{c.name}::{m.signature}" for c, m, fam, _ in space.overloads() if fam}
    assert {c.label() for c in DRAW} == drawable
    for cls, m, fam, reason in space.overloads():
        assert fam or reason, f"{cls.name}::{m.signature} is neither drawn nor explained"


def test_no_drawn_configuration_is_one_coopgen_refuses():
    assert not [c.label() for c in DRAW if space.refused_by_limits(c)]


def test_half_precision_and_complex_items_are_drawn():
    drawn = {c.dtype for c in DRAW}
    assert set(families.ML) <= drawn
    assert "bfloat16" in families.ML  # ml_dtypes is in the [dev] extra


def test_a_draw_limited_to_dtypes_draws_only_them_and_each_of_them():
    configs = space.draw(150, seed=18, dtypes=families.ML)
    assert {c.dtype for c in configs} == set(families.ML)
    families_drawn = {(c.cls, c.method.name) for c in configs}
    for fam in (("BlockReduce", "Sum"), ("BlockScan", "ExclusiveScan"), ("BlockLoad", "Load"),
                ("BlockMergeSort", "Sort"), ("BlockRadixSort", "Sort")):
        assert fam in families_drawn
    # what the runtime refuses is never drawn: radix sorts of complex keys, min/max of them
    assert not [c for c in configs if c.cls == "BlockRadixSort" and c.dtype.startswith("complex")]
    assert not [c for c in configs if c.dtype.startswith("complex") and
                (c.op in ("min", "max", "py_max", "<", ">") or c.method.name in ("Max", "Min"))]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "complex64", "complex128"])
def test_sum_tolerance_is_the_worst_case_of_any_order(dtype):
    """A sequential sum in the type passes; the same sum off by more than the bound does not."""
    rng = np.random.default_rng(1)
    cfg = next(c for c in space.draw(40, seed=3, only="BlockReduce::Sum(T (&)", dtypes=(dtype,)))
    n = cfg.group_threads * cfg.ipt
    x = runner.random_values(dtype, (n,), rng)
    acc = x[0]
    for v in x[1:]:
        acc = (acc + v).astype(x.dtype) if dtype == "bfloat16" else x.dtype.type(acc + v)
    want = x.astype(families.wide(dtype)).sum()
    mag = families.l1(x).sum()
    got = np.array([acc], x.dtype)
    assert not runner.sum_mismatch(cfg, got, np.array([want]), np.array([mag]), x.dtype).any()
    far = np.array([want + 2 * (n * families.unit_roundoff(dtype) * mag + 1)], x.dtype)
    assert runner.sum_mismatch(cfg, far, np.array([want]), np.array([mag]), x.dtype).all()


def test_a_configuration_survives_its_one_line_form():
    for c in DRAW[:50]:
        assert space.Config.from_json(c.to_json()) == c


def test_batched_kernel_sources_are_python():
    for batch in runner.batches_of(DRAW, 8):
        ast.parse(kernels.kernel_source(batch))


def test_references_accept_every_draw():
    """Each reference runs on its configuration's inputs (outputs = untouched slots)."""
    for c in DRAW:
        ins = runner.make_inputs(c, kernels.groups_of(c, space.TILES))
        outs = {s.param: ins[s.param].copy() for s in kernels.slots(c)}
        assert runner.check_config(c, ins, outs).status != "error", c.to_json()


@pytest.mark.parametrize("dtype", ["int8", "int64", "uint16", "uint64", "float32", "float64"])
def test_radix_bit_order_is_numpy_order(dtype):
    rng = np.random.default_rng()
    x = runner.random_values(dtype, (4000,), rng, ("0.0", "-0.0", "inf", "-inf", "max", "lowest"))
    y = x[np.argsort(families.ordered_bits(x), kind="stable")]
    assert (y[1:] >= y[:-1]).all()
    if x.dtype.kind == "f":  # -0.0 and +0.0 are one key, as in CUB
        z = np.array([0.0, -0.0], x.dtype)
        assert families.ordered_bits(z)[0] == families.ordered_bits(z)[1]


@pytest.mark.parametrize("arrangement", ["blocked", "striped", "warp_striped"])
def test_arrange_and_scatter_are_inverse(arrangement):
    rng = np.random.default_rng()
    tile = rng.integers(0, 1 << 30, (3, 64 * 5))
    held = families.arrange(tile, arrangement, 64, 5)
    assert (families.scatter(held, arrangement, 64 * 5) == tile).all()
