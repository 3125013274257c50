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
