"""Implicit temp storage: block primitives share one union; barriers make reuse safe."""
import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local
from coopgen.codegen import nvrtc

pytestmark = pytest.mark.gpu

TILES = 8


@cuda.jit
def tile_sums_in_a_loop(d_in, d_out):
    # The same primitive, called once per loop iteration: each call reuses the storage.
    items = local.array(4, np.int32)
    for t in range(TILES):
        base = (cuda.blockIdx.x * TILES + t) * cuda.blockDim.x * 4
        block.load(d_in[base:], items, algorithm="warp_transpose")
        total = block.sum(items)
        if cuda.threadIdx.x == 0:
            d_out[cuda.blockIdx.x * TILES + t] = total


@cuda.jit
def sort_then_scan(d_in, d_out):
    # Different primitives, one after another, in the shared union.
    items = local.array(4, np.int32)
    base = cuda.blockIdx.x * cuda.blockDim.x * 4
    block.load(d_in[base:], items, algorithm="transpose")
    block.radix_sort_keys(items)
    block.exclusive_sum(items, items)
    block.store(d_out[base:], items, algorithm="transpose")


@pytest.mark.parametrize("threads", [64, 256])
def test_primitive_in_a_loop(threads):
    rng = np.random.default_rng()
    blocks = 5
    host = rng.integers(-1000, 1000, blocks * TILES * threads * 4, dtype=np.int32)
    out = cuda.device_array(blocks * TILES, np.int32)
    tile_sums_in_a_loop[blocks, threads](cuda.to_device(host), out)
    np.testing.assert_array_equal(out.copy_to_host(),
                                  host.reshape(blocks * TILES, -1).sum(axis=1, dtype=np.int32))


def test_several_primitives_share_storage():
    rng = np.random.default_rng()
    threads, blocks = 128, 7
    host = rng.integers(-(1 << 20), 1 << 20, blocks * threads * 4, dtype=np.int32)
    out = cuda.device_array_like(host)
    sort_then_scan[blocks, threads](cuda.to_device(host), out)
    tiles = np.sort(host.reshape(blocks, -1), axis=1)
    want = (np.cumsum(tiles, axis=1, dtype=np.int32) - tiles).ravel()
    np.testing.assert_array_equal(out.copy_to_host(), want)


def test_one_nvrtc_compile_per_kernel(monkeypatch, tmp_path):
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(tmp_path))

    @cuda.jit
    def k(d_in, d_out):
        items = local.array(4, np.int32)
        base = cuda.blockIdx.x * cuda.blockDim.x * 4
        block.load(d_in[base:], items)
        block.radix_sort_keys(items)
        block.store(d_out[base:], items)
        d_out[0] += block.sum(items) * 0

    host = np.random.default_rng().integers(0, 100, 128 * 4, dtype=np.int32)
    out = cuda.device_array_like(host)
    before = nvrtc.compile_count()
    k[1, 128](cuda.to_device(host), out)
    cuda.synchronize()
    assert nvrtc.compile_count() - before == 1
