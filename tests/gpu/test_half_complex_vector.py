"""float16, bfloat16 (ml_dtypes arrays), complex64/128 and CUDA vector types on the GPU, checked
against numpy on fresh random data. A sum's tolerance is the worst case of any summation
order: |error| <= (n - 1) * u * sum(|x|) (u: the type's unit roundoff), plus one rounding of
the result."""
import functools

import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, coop, local, shared, warp
from gpu_util import launch, rng_for, to_device, to_host

pytestmark = pytest.mark.gpu
ml_dtypes = pytest.importorskip("ml_dtypes")

TYPES = (np.float16, ml_dtypes.bfloat16, np.complex64, np.complex128)
REAL = (np.float16, ml_dtypes.bfloat16)
GRID = 3


def _random(dtype, n, rng):
    x = rng.uniform(-4, 4, n)
    if np.dtype(dtype).kind == "c":
        x = x + 1j * rng.uniform(-4, 4, n)
    return x.astype(dtype)


def _unit_roundoff(dtype) -> float:
    return float(ml_dtypes.finfo(dtype).eps) / 2 if dtype is ml_dtypes.bfloat16 else \
        float(np.finfo(dtype).eps) / 2


def _assert_sums(got, x, dtype):
    """Each row of ``x``'s sum, within the worst case of any summation order."""
    x64 = x.astype(np.complex128 if np.dtype(dtype).kind == "c" else np.float64)
    want, n, u = x64.sum(axis=-1), x.shape[-1], _unit_roundoff(dtype)
    bound = (n - 1) * u * np.abs(x64).sum(axis=-1) + u * np.abs(want) + 1e-30
    err = np.abs(got.astype(x64.dtype) - want)
    assert (err <= bound).all(), (err.max(), bound.min())


@functools.lru_cache(maxsize=None)
def _sum_kernel(ipt, threads):
    @cuda.jit
    def k(d_in, d_out, d_sums):
        items = local.array(ipt, d_in.dtype)
        base = cuda.blockIdx.x * threads * ipt
        block.load(d_in[base:], items, algorithm="warp_transpose")
        total = block.sum(items)
        block.store(d_out[base:], items, algorithm="striped")
        if cuda.threadIdx.x == 0:
            d_sums[cuda.blockIdx.x] = total
    return k


@pytest.mark.parametrize("dtype", TYPES, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("threads,ipt", [(32, 1), (128, 4), (256, 3)])
def test_load_sum_store(dtype, threads, ipt):
    rng = rng_for(np.dtype(dtype).name, threads, ipt)
    x = _random(dtype, GRID * threads * ipt, rng)
    out, sums = to_device(np.zeros_like(x)), to_device(np.zeros(GRID, dtype))
    launch(_sum_kernel(ipt, threads), GRID, threads, to_device(x), out, sums)
    tiles = x.reshape(GRID, ipt * threads)
    # blocked in, striped out: item i of thread t lands at t + i * threads
    want = tiles.reshape(GRID, threads, ipt).transpose(0, 2, 1).reshape(GRID, -1)
    np.testing.assert_array_equal(to_host(out).reshape(GRID, -1), want)
    _assert_sums(to_host(sums), tiles, dtype)


@functools.lru_cache(maxsize=None)
def _sort_kernel(ipt, threads, radix):
    @cuda.jit(device=True)
    def less(a, b):
        return a < b

    @cuda.jit
    def k(d_in, d_out):
        items = local.array(ipt, d_in.dtype)
        base = cuda.blockIdx.x * threads * ipt
        block.load(d_in[base:], items)
        if radix:
            block.radix_sort_keys(items)
        else:
            block.merge_sort_keys(items, less)
        block.store(d_out[base:], items)
    return k


@pytest.mark.parametrize("dtype", REAL, ids=lambda t: np.dtype(t).name)
@pytest.mark.parametrize("radix", [True, False], ids=["radix", "merge"])
@pytest.mark.parametrize("threads,ipt", [(64, 2), (128, 4)])
def test_sorts(dtype, radix, threads, ipt):
    rng = rng_for(np.dtype(dtype).name, radix, threads, ipt)
    x = _random(dtype, GRID * threads * ipt, rng)
    out = to_device(np.zeros_like(x))
    launch(_sort_kernel(ipt, threads, radix), GRID, threads, to_device(x), out)
    want = np.sort(x.astype(np.float32).reshape(GRID, -1), axis=1)
    np.testing.assert_array_equal(to_host(out).astype(np.float32).reshape(GRID, -1), want)


@functools.lru_cache(maxsize=None)
def _scan_kernel(ipt, threads):
    @cuda.jit
    def k(d_in, d_out):
        items = local.array(ipt, d_in.dtype)
        base = cuda.blockIdx.x * threads * ipt
        block.load(d_in[base:], items)
        block.exclusive_sum(items, items)
        block.store(d_out[base:], items)
    return k


@pytest.mark.parametrize("dtype", TYPES, ids=lambda t: np.dtype(t).name)
def test_exclusive_sum(dtype):
    threads, ipt = 128, 2
    rng = rng_for(np.dtype(dtype).name, "scan")
    x = _random(dtype, GRID * threads * ipt, rng)
    out = to_device(np.zeros_like(x))
    launch(_scan_kernel(ipt, threads), GRID, threads, to_device(x), out)
    tiles = x.reshape(GRID, -1)
    got = to_host(out).reshape(GRID, -1)
    for j in (1, tiles.shape[1] // 2, tiles.shape[1] - 1):  # prefixes of a few lengths
        _assert_sums(got[:, j], tiles[:, :j], dtype)


@functools.lru_cache(maxsize=None)
def _warp_sum_kernel():
    @cuda.jit
    def k(d_in, d_out):
        total = warp.sum(d_in[cuda.threadIdx.x])
        if cuda.threadIdx.x == 0:
            d_out[0] = total
    return k


@pytest.mark.parametrize("dtype", TYPES, ids=lambda t: np.dtype(t).name)
def test_warp_sum(dtype):
    x = _random(dtype, 32, rng_for(np.dtype(dtype).name, "warp"))
    out = to_device(np.zeros(1, dtype))
    launch(_warp_sum_kernel(), 1, 32, to_device(x), out)
    _assert_sums(to_host(out), x[None, :], dtype)


def _vector_kernel(vec, lanes, threads, ipt):
    n = threads * ipt
    load = coop.block.make_load(vec, threads, ipt, "striped")
    store = coop.block.make_store(vec, threads, ipt)
    if lanes == 2:
        @cuda.jit(device=True)
        def get(a, i):
            return vec(a[2 * i], a[2 * i + 1])

        @cuda.jit(device=True)
        def put(a, i, v):
            a[2 * i], a[2 * i + 1] = v.x, v.y
    else:
        @cuda.jit(device=True)
        def get(a, i):
            return vec(a[4 * i], a[4 * i + 1], a[4 * i + 2], a[4 * i + 3])

        @cuda.jit(device=True)
        def put(a, i, v):
            a[4 * i], a[4 * i + 1], a[4 * i + 2], a[4 * i + 3] = v.x, v.y, v.z, v.w

    @cuda.jit
    def k(d_in, d_out):
        tile = shared.array(n, vec)
        items = local.array(ipt, vec)
        t = cuda.threadIdx.x
        for j in range(ipt):
            tile[t + j * threads] = get(d_in, t + j * threads)
        cuda.syncthreads()
        load(tile, items)  # striped: items[j] = tile[t + j * threads]
        cuda.syncthreads()
        store(tile, items)  # blocked: tile[t * ipt + j] = items[j]
        cuda.syncthreads()
        for j in range(ipt):
            put(d_out, t + j * threads, tile[t + j * threads])
    return k


@pytest.mark.parametrize("name", ["float32x2", "float32x4", "uint32x4", "int32x2"])
@pytest.mark.parametrize("threads,ipt", [(32, 1), (64, 3)])
def test_coop_vector_load_store(name, threads, ipt):
    """make_load/make_store of numba-cuda's vector types (cuda.coop's spelling)."""
    lanes = int(name[-1])
    lane = np.dtype(name.split("x")[0])
    x = (rng_for(name, threads, ipt).uniform(0, 1000, threads * ipt * lanes)).astype(lane)
    out = to_device(np.zeros_like(x))
    launch(_vector_kernel(getattr(cuda, name), lanes, threads, ipt), 1, threads,
           to_device(x), out)
    items = x.reshape(ipt, threads, lanes)  # item j of thread t at t + j * threads
    want = items.transpose(1, 0, 2).reshape(-1, lanes)  # at t * ipt + j
    np.testing.assert_array_equal(to_host(out).reshape(-1, lanes), want)
