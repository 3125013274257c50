"""On a GPU: the CuTe DSL bench kernels (tools/bench/cute_cases.py) give numpy's answers at a
few tiles, and the CuTe DSL sampler (examples/cute_sampling.py) draws admissible tokens,
reproducibly. Skipped without a GPU (tests/cute/test_cute_bench.py links them on the CPU)."""
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tools" / "bench"), str(ROOT / "examples")]
import cases  # noqa: E402
import cute_cases  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def cuda():
    from numba import cuda
    if not cuda.is_available():
        pytest.skip("no CUDA GPU")
    return cuda


@pytest.mark.parametrize("name", sorted(cute_cases.KERNELS))
def test_bench_kernel_gives_numpys_answer(cuda, name):
    case = cases.CASES[name]
    tiles = 5
    host = case.make_input(np.random.default_rng(11), tiles * case.tile)
    d_in = cuda.to_device(host)
    d_out = cuda.device_array(case.out_len(host.size), case.dtype)
    cute_cases.make(case)[tiles, case.threads](d_in, d_out, *case.extra_args)
    cuda.synchronize()
    got, want = d_out.copy_to_host(), case.expected(host)
    if case.exact:
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9 * np.abs(want).max())


def probabilities(rows: int, vocab: int, seed: int) -> np.ndarray:
    logits = np.random.default_rng(seed).standard_normal((rows, vocab)) * 3
    probs = np.exp(logits - logits.max(1, keepdims=True))
    return (probs / probs.sum(1, keepdims=True)).astype(np.float32)


def sample(cuda, probs, k, p, seed=1, offset=0):
    import cute_sampling
    rows = probs.shape[0]
    out = cuda.device_array(rows, np.int32)
    cute_sampling.top_k_top_p_sampling_from_probs(
        cuda.to_device(probs), cuda.to_device(np.broadcast_to(np.int32(k), rows).copy()),
        cuda.to_device(np.broadcast_to(np.float32(p), rows).copy()), out, seed=seed,
        offset=offset)
    cuda.synchronize()
    return out.copy_to_host()


def _example(name: str):
    """examples/NAME.py, whatever module of that name comes first on sys.path."""
    import importlib.util
    spec = importlib.util.spec_from_file_location(f"example_{name}", ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("rows,vocab,k,p", [
    (8, 32000, 50, 0.9),       # the bench's k and p, a vocabulary of 4 tiles (the last partial)
    (3, 8192, 20, 0.5),        # one full tile exactly
    (4, 37, 5, 1.0),           # less than a tile: the partial load alone
    (2, 100003, 100003, 0.3),  # top-p alone, an odd row length (rows not 16-byte aligned)
    (5, 5000, 1, 1.0),         # top-1: the most probable token
])
def test_the_sampler_draws_admissible_tokens(cuda, rows, vocab, k, p):
    admissible = _example("sampling").admissible  # tools/bench has a sampling module too
    probs = probabilities(rows, vocab, seed=vocab)
    for offset in range(4):
        tokens = sample(cuda, probs, k, p, offset=offset)
        assert (tokens >= 0).all() and (tokens < vocab).all(), tokens
        ok = admissible(probs, k, min(p + 2e-5, 1.0))[np.arange(rows), tokens]
        assert ok.all(), (offset, tokens, np.flatnonzero(~ok))
    if k == 1:
        np.testing.assert_array_equal(tokens, probs.argmax(axis=1))


def test_the_sampler_is_reproducible(cuda):
    probs = probabilities(16, 32000, seed=3)
    first = sample(cuda, probs, 50, 0.9, seed=7, offset=5)
    np.testing.assert_array_equal(first, sample(cuda, probs, 50, 0.9, seed=7, offset=5))
    others = [sample(cuda, probs, 50, 0.9, seed=7, offset=o) for o in range(6, 10)]
    assert any((o != first).any() for o in others)  # the offset changes the draws
