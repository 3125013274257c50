"""The examples/ kernels at small sizes against their numpy references: the single-pass scan
(partial tiles, both dtypes, a generic operator, two launches in a row), Mamba's selective
scan (several chunks, a partial chunk, with and without z gating and softplus) and RMSNorm
(float16 and bfloat16, full and partial rows, other block sizes, PyTorch tensors through DLPack
against a float32 reference)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import mamba_selective_scan as msc  # noqa: E402
import rms_norm  # noqa: E402
import single_pass_scan as sps  # noqa: E402
from gpu_util import rng_for  # noqa: E402

pytestmark = pytest.mark.gpu

SCAN_SIZES = (1, 77, sps.TILE - 1, sps.TILE, sps.TILE + 1, 40 * sps.TILE + 5, 300_001)


@pytest.mark.parametrize("dtype", (np.int32, np.float32), ids=("int32", "float32"))
@pytest.mark.parametrize("n", SCAN_SIZES)
def test_single_pass_exclusive_sum(n, dtype):
    sps.check(n, dtype, rng=rng_for("scan", n, np.dtype(dtype).name))


def test_single_pass_max_scan():
    lowest = np.iinfo(np.int32).min
    sps.check(100 * sps.TILE + 3, np.int32, sps.maximum, np.maximum, init=lowest,
              rng=rng_for("max-scan"))


def test_single_pass_scan_alternating_sizes():
    # Launches of different lengths share one status buffer: each must find it cleared.
    from gpu_util import cuda
    rng = rng_for("alternating")
    scan = sps.ExclusiveScan(np.int32)
    for n in (50 * sps.TILE, 3 * sps.TILE + 1, 70 * sps.TILE + 9, 2 * sps.TILE, 70 * sps.TILE):
        x = rng.integers(-1000, 1000, n, dtype=np.int32)
        d_out = cuda.device_array(n, np.int32)
        scan(cuda.to_device(x), d_out)
        np.testing.assert_array_equal(d_out.copy_to_host(), sps.reference(x))


MAMBA_CASES = [  # batch, dim, N, L, z, softplus, outputs given
    (2, 3, 16, 3 * msc.CHUNK + 100, True, True, False),
    (1, 2, 4, msc.CHUNK, False, False, True),
    (2, 2, 8, 700, True, False, False),
    (1, 1, msc.MAX_STATES, 2 * msc.CHUNK - 1, False, True, True),
]


@pytest.mark.parametrize("batch,dim,n_states,length,with_z,softplus,reuse", MAMBA_CASES)
def test_mamba_selective_scan(batch, dim, n_states, length, with_z, softplus, reuse):
    msc.check(batch, dim, n_states, length, with_z=with_z, delta_softplus=softplus,
              reuse_outputs=reuse,
              rng=rng_for("mamba", batch, dim, n_states, length, with_z, softplus))


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
@pytest.mark.parametrize("rows,hidden", [(1, 32), (5, 1000), (16, 4096), (3, 8192), (2, 12288)])
def test_rms_norm(rows, hidden, dtype):
    pytest.importorskip("ml_dtypes")
    rms_norm.check(rows, hidden, dtype, rng=rng_for("rms_norm", rows, hidden, dtype))


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
@pytest.mark.parametrize("hidden,threads", [(8192, 128), (8192, 512), (8192, 1024), (4096, 512),
                                            (4096, 96)])
def test_rms_norm_block_sizes(hidden, threads, dtype):
    # The benchmark's sweep: 16-byte vectors at other block sizes (4096 / 96: partial rows)
    pytest.importorskip("ml_dtypes")
    rms_norm.check(9, hidden, dtype, threads=threads,
                   rng=rng_for("rms_norm-threads", hidden, threads, dtype))


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
@pytest.mark.parametrize("rows,hidden", [(257, 4096), (64, 8192), (3, 1000)])
def test_rms_norm_torch_tensors(rows, hidden, dtype):
    # PyTorch tensors in and out, seen through DLPack without a copy (out is written in place),
    # against a float32 reference computed by PyTorch: the kernel's bound plus the reference's
    # own float32 error.
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch sees no GPU")
    gen = torch.Generator(device="cuda").manual_seed(rows * hidden)
    tdtype = getattr(torch, dtype)
    x = (3 * torch.randn(rows, hidden, device="cuda", generator=gen)).to(tdtype)
    w = (torch.rand(hidden, device="cuda", generator=gen) + 0.5).to(tdtype)
    out = torch.full_like(x, float("nan"))
    assert rms_norm.rms_norm(x, w, 1e-5, out=out) is out
    torch.cuda.synchronize()
    x32, w32 = x.float(), w.float()
    want = x32 * torch.rsqrt((x32 * x32).mean(-1, keepdim=True) + 1e-5) * w32
    rel, tiny = rms_norm.tolerance(dtype, hidden)
    rel += ((hidden - 1) / 2 + 8) * 2.0**-24
    worst = ((out.float() - want).abs() / (rel * want.abs() + tiny)).max().item()
    assert worst <= 1.0, f"error {worst:.2f}x the tolerance"
    made = rms_norm.rms_norm(x, w, 1e-5)  # a numba device array when out is not given
    assert np.array_equal(rms_norm.to_host(made).view(np.uint16),
                          out.view(torch.int16).cpu().numpy().view(np.uint16))
    with pytest.raises(ValueError, match="rms_norm: x must be C-contiguous"):
        rms_norm.rms_norm(x.t(), w)


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
def test_rms_norm_rows_off_a_16_byte_boundary(dtype):
    # rows of whole 16-byte vectors move as 16-byte items, which need 16-byte aligned rows: a
    # view 2 bytes into a buffer takes the guarded kernel of elements
    import ml_dtypes  # noqa: F401
    rows, hidden = 3, 4096
    x, w = rms_norm.random_inputs(rng_for("rms_norm-offset", dtype), rows, hidden, dtype)
    buf = rms_norm.to_device(np.concatenate([x.reshape(-1)[:1], x.reshape(-1)]))
    xs = buf[1:].reshape(rows, hidden)  # x, 2 bytes past the buffer's start
    assert not rms_norm.aligned(xs)
    got = rms_norm.to_host(rms_norm.rms_norm(xs, rms_norm.to_device(w)))
    assert rms_norm.worst_error(got, rms_norm.reference(x, w), dtype, hidden) <= 1


@pytest.mark.parametrize("n,weights", [(1000, 7), (1 << 20, 4096)])
def test_streaming_cache_hints(n, weights):
    """Both kernels of the streaming example give numpy's answer (run() checks it) at a
    positive rate."""
    import streaming_cache_hints as sch

    gbs = sch.run(n, weights, repeats=2)
    assert set(gbs) == {"plain", "cs"} and min(gbs.values()) > 0


@pytest.mark.parametrize("tiles", [1, 333])
def test_blocked_vectorized(tiles):
    """Both kernels of the blocked-loads example give numpy's running sums (run() checks them)
    at a positive rate; a size that is no whole number of tiles is refused."""
    import blocked_vectorized as bv

    gbs = bv.run(tiles * bv.THREADS * bv.ITEMS, repeats=2)
    assert set(gbs) == {"plain", "vectorized", "copy"} and min(gbs.values()) > 0
    with pytest.raises(ValueError, match="must be a multiple of 2048"):
        bv.run(bv.THREADS * bv.ITEMS + 1, repeats=1)
