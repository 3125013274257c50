"""The examples/ kernels compile and link for sm_90 without a GPU, with no local memory, and
their host entry points refuse bad input with a clear ValueError."""
import sys
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest

from coopgen import block_shape
from coopgen.linkcheck import link_cubin

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import mamba_selective_scan as msc  # noqa: E402
import rms_norm  # noqa: E402
import single_pass_scan as sps  # noqa: E402


def _ty(dtype, ndim=1):
    return numba.typeof(np.empty((1,) * ndim, dtype))


def _link(kernel, sig, threads):
    with block_shape(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaExperimentalFeatureWarning)
        return link_cubin(kernel, sig)


@pytest.mark.parametrize("dtype,op", [(np.int32, sps.add), (np.float32, sps.maximum)],
                         ids=("int32-add", "float32-max"))
def test_single_pass_scan_links(dtype, op):
    sig = (_ty(dtype), _ty(dtype), _ty(np.int64), _ty(np.int64), numba.typeof(dtype(0)))
    res = _link(sps.make_kernel(dtype, op), sig, sps.THREADS)
    assert res.local_bytes == 0
    assert res.registers <= 64  # cub::DeviceScan's kernel for int32 uses 64 on sm_90


@pytest.mark.parametrize("has_z,softplus", [(True, True), (False, False)])
def test_mamba_selective_scan_links(has_z, softplus):
    f1, f2, f3 = _ty(np.float32), _ty(np.float32, 2), _ty(np.float32, 3)
    res = _link(msc.make_kernel(has_z, softplus), (f3, f3, f2, f3, f3, f1, f3, f1, f3, f3),
                msc.THREADS)
    assert res.local_bytes == 0
    assert res.smem <= 8976  # the nvcc-built twin in tools/bench/apps.py


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
@pytest.mark.parametrize("hidden", [4096, 8192, 1000])
def test_rms_norm_links(dtype, hidden):
    from numba.cuda.typing.typeof import typeof  # knows ml_dtypes' bfloat16
    import ml_dtypes  # noqa: F401
    threads, items = rms_norm.plan(hidden)
    arr = typeof(np.empty(1, np.dtype(dtype)))
    sig = (arr, arr, arr, numba.typeof(np.int32(0)), numba.typeof(np.float32(0)))
    res = _link(rms_norm.make_kernel(items, threads * items == hidden), sig, threads)
    assert res.local_bytes == 0


def test_rms_norm_plan():
    assert rms_norm.plan(4096) == (512, 8) and rms_norm.plan(8192) == (1024, 8)
    assert rms_norm.plan(12288) == (768, 16) and rms_norm.plan(1000) == (128, 8)
    with pytest.raises(ValueError, match="rms_norm: hidden=0 must be positive"):
        rms_norm.plan(0)


def test_single_pass_scan_rejects_wide_types():
    with pytest.raises(ValueError, match="single_pass_scan: dtype=float64 is not supported"):
        sps.make_kernel(np.float64)


def test_mamba_rejects_mismatched_shapes():
    rng = np.random.default_rng()
    inputs = msc.random_inputs(rng, 2, 4, 8, 64)
    inputs["B"] = inputs["B"][:, :, :32]
    with pytest.raises(ValueError, match=r"selective_scan_fwd: B has shape \(2, 8, 32\).*"
                                         r"must be \(2, 8, 64\)"):
        msc.selective_scan_fwd(**inputs)
    inputs = msc.random_inputs(rng, 2, 4, 8, 64)
    with pytest.raises(ValueError, match="selective_scan_fwd: out must be a device array, not "
                                         "ndarray"):
        msc.selective_scan_fwd(**inputs, out=np.empty((2, 4, 64), np.float32))


def test_references_agree_with_a_direct_loop():
    # The numpy references themselves, against the definitions written as plain loops.
    rng = np.random.default_rng()
    x = rng.integers(-100, 100, 50, dtype=np.int32)
    want = [0]
    for v in x[:-1]:
        want.append(want[-1] + v)
    np.testing.assert_array_equal(sps.reference(x), want)
    inp = msc.random_inputs(rng, 1, 2, 3, 20)
    y, last = msc.reference(**inp, delta_softplus=True)
    inp = {k: v.astype(np.float64) for k, v in inp.items()}
    dt = np.log1p(np.exp(inp["delta"] + inp["delta_bias"][:, None]))
    for d in range(2):
        h = np.zeros(3)
        for t in range(20):
            h = np.exp(dt[0, d, t] * inp["A"][d]) * h + dt[0, d, t] * inp["B"][0, :, t] * \
                inp["u"][0, d, t]
            out = h @ inp["C"][0, :, t] + inp["D"][d] * inp["u"][0, d, t]
            z = inp["z"][0, d, t]
            np.testing.assert_allclose(y[0, d, t], out * z / (1 + np.exp(-z)), rtol=1e-9)
        np.testing.assert_allclose(last[0, d], h, rtol=1e-9)
