"""block.histogram(items, bins): an object keeping its bins; h.init() and h.composite(items)."""
import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local, shared

pytestmark = pytest.mark.gpu

BINS, IPT = 32, 4


@cuda.jit
def histogram_tiles(d_in, d_hist, tiles):
    items = local.array(IPT, np.uint8)
    bins = shared.array(BINS, np.uint32)
    h = block.histogram(items, bins)  # dtype, items per thread and bins from the arrays
    h.init()
    cuda.syncthreads()
    t = cuda.threadIdx.x
    for tile in range(tiles):  # the object used across loop iterations
        base = (tile * cuda.blockDim.x + t) * IPT
        for i in range(IPT):
            items[i] = d_in[base + i]
        h.composite(items)
        cuda.syncthreads()
    for b in range(t, BINS, cuda.blockDim.x):
        d_hist[b] = bins[b]


@pytest.mark.parametrize("threads", [32, 128])
def test_histogram_object_accumulates_tiles(threads):
    tiles = 3
    x = np.random.default_rng().integers(0, BINS, tiles * threads * IPT).astype(np.uint8)
    out = cuda.device_array(BINS, np.uint32)
    histogram_tiles[1, threads](cuda.to_device(x), out, tiles)
    np.testing.assert_array_equal(out.copy_to_host(), np.bincount(x, minlength=BINS))


def _two_phase_methods(algorithm, threads):
    """cuda.coop's two-phase histogram: make_histogram's init and composite called on their
    own in a kernel, with the temp storage their host attributes size."""
    from coopgen import coop
    histo = coop.block.make_histogram(np.uint8, np.uint32, threads_per_block=threads,
                                      items_per_thread=IPT, bins=BINS, algorithm=algorithm)
    init, composite = histo.init, histo.composite
    size = max(init.temp_storage_bytes, composite.temp_storage_bytes)
    alignment = max(init.temp_storage_alignment, composite.temp_storage_alignment)

    @cuda.jit
    def k(d_in, d_hist):
        items = local.array(IPT, np.uint8)
        bins = shared.array(BINS, np.uint32)
        storage = coop.TempStorage(size, alignment)
        init(bins, temp_storage=storage)
        cuda.syncthreads()
        t = cuda.threadIdx.x
        for i in range(IPT):
            items[i] = d_in[t * IPT + i]
        composite(items, bins, temp_storage=storage)
        cuda.syncthreads()
        for b in range(t, BINS, cuda.blockDim.x):
            d_hist[b] = bins[b]
    return k


@pytest.mark.parametrize("algorithm", ["atomic", "sort"])
def test_two_phase_histogram_methods_on_their_own(algorithm):
    threads = 64
    x = np.random.default_rng(3).integers(0, BINS, threads * IPT).astype(np.uint8)
    out = cuda.device_array(BINS, np.uint32)
    _two_phase_methods(algorithm, threads)[1, threads](cuda.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), np.bincount(x, minlength=BINS))
