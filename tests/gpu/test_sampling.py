"""examples/sampling.py on the GPU: every token lies in its row's top-k ∩ top-p set (ties in,
as FlashInfer documents), the draws follow the renormalized probabilities (chi-square tests,
each with a false-alarm rate of 1e-4), and the edge cases: k=1, k >= vocab, p=1, rows with one
non-zero, vocabularies that are no multiple of the tile; reproducible per (seed, offset)."""
import sys
from pathlib import Path

import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import sampling  # noqa: E402

pytestmark = pytest.mark.gpu

#: float32 sums in the kernel against numpy's float64: a token whose mass above it is this
#: close to p may fall either way.
SLACK = 2e-5
#: The chi-square tests' false-alarm rate, and its normal quantile (Wilson-Hilferty below).
ALPHA, Z_ALPHA = 1e-4, 3.719


def _probs(rng, rows, vocab, temperature=1.0):
    logits = rng.standard_normal((rows, vocab)) / temperature
    p = np.exp(logits - logits.max(1, keepdims=True))
    return (p / p.sum(1, keepdims=True)).astype(np.float32)


def _draw(probs, top_k=None, top_p=None, seed=0, offset=0):
    return sampling.top_k_top_p_sampling_from_probs(probs, top_k, top_p, seed=seed,
                                                    offset=offset).copy_to_host()


def _check_members(probs, tokens, top_k, top_p):
    """Each token is admissible, allowing float32's slack at the top-p edge."""
    p = None if top_p is None else np.asarray(top_p, np.float64)
    loose = sampling.admissible(probs, top_k, None if p is None else np.minimum(p + SLACK, 1))
    rows = np.arange(len(tokens))
    assert (tokens >= 0).all() and (tokens < probs.shape[1]).all(), tokens
    bad = ~loose[rows, tokens]
    assert not bad.any(), (np.flatnonzero(bad), tokens[bad])


@pytest.mark.parametrize("vocab", [32000, 4097, 1000, 37])
@pytest.mark.parametrize("top_k,top_p", [(1, None), (5, None), (50, 0.9), (None, 0.5),
                                         (20, 0.3), (None, None), (10**6, 1.0)])
def test_every_token_is_admissible(vocab, top_k, top_p):
    rng = np.random.default_rng()
    probs = _probs(rng, 64, vocab, temperature=rng.uniform(0.3, 2.0))
    for seed in range(3):
        tokens = _draw(probs, top_k, top_p, seed=int(rng.integers(2**63)))
        _check_members(probs, tokens, top_k, top_p)
    if top_k == 1:  # the most probable token (ties: any of them)
        assert (probs[np.arange(64), tokens] == probs.max(1)).all()


def test_per_row_parameters():
    rng = np.random.default_rng()
    rows, vocab = 128, 5000
    probs = _probs(rng, rows, vocab, 0.5)
    ks = rng.integers(1, 200, rows).astype(np.int32)
    ps = rng.uniform(0.05, 1.0, rows).astype(np.float32)
    tokens = _draw(probs, cuda.to_device(ks), cuda.to_device(ps), seed=7)
    _check_members(probs, tokens, ks, ps)


def _chi_square_threshold(df: int) -> float:
    """The (1 - ALPHA) quantile of chi-square with df degrees of freedom (Wilson-Hilferty)."""
    h = 2.0 / (9.0 * df)
    return df * (1.0 - h + Z_ALPHA * np.sqrt(h)) ** 3


def _chi_square(row, tokens, top_k, top_p):
    """Chi-square of the draws against the renormalized admissible probabilities of ``row``;
    cells expecting fewer than 5 draws are pooled."""
    mask = sampling.admissible(row[None], top_k, top_p)[0]
    assert mask[tokens].all()
    expected = np.where(mask, row.astype(np.float64), 0)
    expected *= len(tokens) / expected.sum()
    observed = np.bincount(tokens, minlength=len(row)).astype(np.float64)
    order = np.flatnonzero(mask)
    big = order[expected[order] >= 5]
    small = order[expected[order] < 5]
    obs = list(observed[big]) + ([observed[small].sum()] if len(small) else [])
    exp = list(expected[big]) + ([expected[small].sum()] if len(small) else [])
    obs, exp = np.array(obs), np.array(exp)
    stat = ((obs - exp) ** 2 / exp).sum()
    df = len(obs) - 1
    assert df >= 1
    assert stat < _chi_square_threshold(df), (stat, df)


@pytest.mark.parametrize("vocab,top_k,top_p", [(37, None, None), (5000, 30, None),
                                               (5000, None, 0.6), (9000, 40, 0.8)])
def test_draws_follow_the_renormalized_probabilities(vocab, top_k, top_p):
    rng = np.random.default_rng()
    row = _probs(rng, 1, vocab, 0.4)[0]
    batch = np.repeat(row[None], 4096, axis=0)  # each row draws with its own counter
    seed = int(rng.integers(2**63))
    tokens = np.concatenate([_draw(batch, top_k, top_p, seed=seed, offset=o) for o in range(4)])
    _chi_square(row, tokens, top_k, top_p)


def test_ties_at_the_top_k_edge_are_all_in():
    """k=2 with (0.4, 0.2, 0.2, 0.1, 0.1): three tokens have fewer than 2 strictly above."""
    row = np.zeros(3000, np.float32)
    row[[7, 900, 2999, 5, 1500]] = [0.4, 0.2, 0.2, 0.1, 0.1]
    batch = np.repeat(row[None], 4096, axis=0)
    tokens = np.concatenate([_draw(batch, 2, None, seed=3, offset=o) for o in range(3)])
    assert set(np.unique(tokens)) == {7, 900, 2999}
    _chi_square(row, tokens, 2, None)


def test_single_non_zero_rows():
    rng = np.random.default_rng()
    rows, vocab = 32, 10000
    probs = np.zeros((rows, vocab), np.float32)
    where = rng.integers(0, vocab, rows)
    probs[np.arange(rows), where] = 1.0
    for top_k, top_p in ((None, None), (1, 0.1), (100, 0.9)):
        assert (_draw(probs, top_k, top_p, seed=int(rng.integers(1000))) == where).all()


def test_reproducible_per_seed_and_offset():
    rng = np.random.default_rng()
    probs = _probs(rng, 256, 3000, 2.0)
    a = _draw(probs, 100, 0.95, seed=11, offset=5)
    assert (a == _draw(probs, 100, 0.95, seed=11, offset=5)).all()
    assert (a != _draw(probs, 100, 0.95, seed=11, offset=6)).mean() > 0.5
    assert (a != _draw(probs, 100, 0.95, seed=12, offset=5)).mean() > 0.5


def test_from_logits_with_a_temperature():
    rng = np.random.default_rng()
    rows, vocab, temperature = 32, 7000, 0.7
    logits = (rng.standard_normal((rows, vocab)) * 4).astype(np.float32)
    probs = sampling.softmax(logits, temperature).copy_to_host()
    z = logits.astype(np.float64) / temperature
    ref = np.exp(z - z.max(1, keepdims=True))
    ref /= ref.sum(1, keepdims=True)
    np.testing.assert_allclose(probs, ref, rtol=1e-4, atol=1e-7)
    tokens = sampling.top_k_top_p_sampling_from_logits(logits, temperature, 20, 0.9,
                                                       seed=5).copy_to_host()
    _check_members(ref.astype(np.float32), tokens, 20, 0.9)


def test_bad_input_is_refused():
    probs = np.full((2, 10), 0.1, np.float32)
    with pytest.raises(ValueError, match="top_k=0"):
        sampling.top_k_top_p_sampling_from_probs(probs, 0)
    with pytest.raises(ValueError, match="top_p=1.5"):
        sampling.top_k_top_p_sampling_from_probs(probs, None, 1.5)
    with pytest.raises(ValueError, match="float32"):
        sampling.top_k_top_p_sampling_from_probs(probs.astype(np.float64))
