"""coopgen.cute on a GPU: CuTe DSL kernels calling coopgen give numpy's answers (int32, uint32,
float32 and int64; 128 and 256 threads, as 1-D blocks, and as 2-D (32 x 4) and 3-D (8 x 8 x 4)
ones for partial tiles; 4 and 8 items per thread). Skipped without a GPU. The differential
suite draws far more (python -m tools.fuzz --backend cute, docs/cute.md)."""
import numpy as np
import pytest
from kernels import CASES, GRID, DeviceArray, everything, pointer

import cutlass.cute as cute

pytestmark = pytest.mark.gpu

DTYPES = (np.int32, np.uint32, np.float32, np.int64)
SHAPES = ((128, 4), (256, 8))


def data(dtype, n: int, rng) -> np.ndarray:
    if np.dtype(dtype).kind == "f":  # sums of small integers: exact in float32
        return rng.integers(-50, 50, n).astype(dtype)
    return rng.integers(0 if np.dtype(dtype).kind == "u" else -1000, 1000, n).astype(dtype)


def run(dev, launch, dtype, x, n_out, n_z):
    bufs = [DeviceArray(dev, x), DeviceArray(dev, np.zeros(n_out, dtype)),
            DeviceArray(dev, np.zeros(n_z, dtype))]
    compiled = cute.compile(launch, *(pointer(dtype) for _ in bufs))
    compiled(*(pointer(dtype, b.address) for b in bufs))
    dev.sync()
    return [b.get() for b in bufs[1:]]


@pytest.mark.parametrize("threads,items", SHAPES, ids=[f"{t}x{i}" for t, i in SHAPES])
@pytest.mark.parametrize("dtype", DTYPES, ids=[np.dtype(d).name for d in DTYPES])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gives_numpys_answer(device, name, dtype, threads, items):
    if name == "histogram" and np.dtype(dtype).kind == "f":
        pytest.skip("histogram bins are indexed by integer items")
    launch, want = CASES[name](dtype, threads, items)
    x = data(dtype, GRID * threads * items, np.random.default_rng(7))
    if name == "histogram":  # items index the 64 bins
        x = (np.abs(x) % 64).astype(dtype)
    n_out = GRID * threads * (3 if name == "warp_reductions" else items)
    y, z = run(device, launch, dtype, x, n_out, x.size)
    want_y, want_z = want(x)
    np.testing.assert_array_equal(y, want_y)
    if want_z is not None:
        np.testing.assert_array_equal(z[:want_z.size], want_z)


def test_everything_kernel_runs(device):
    """The link check's kernel, run: its sorted, scanned tile; in thread 0 of each block the
    tile's sum + max, in lane 0 of each other warp its warp's sum + max + inclusive sum (lane
    0's own item) of the threads' first scanned items."""
    threads, items = 128, 4
    x = data(np.int32, GRID * threads * items, np.random.default_rng(3))
    y, z = run(device, everything(np.int32, threads, items), np.int32, x, x.size, x.size)
    tiles = np.sort(x.reshape(GRID, -1), axis=1)
    excl = np.cumsum(tiles, axis=1, dtype=np.int32) - tiles
    scanned = np.maximum.accumulate(excl, axis=1)
    np.testing.assert_array_equal(y.reshape(GRID, -1), scanned)
    z = z[:GRID * threads].reshape(GRID, threads)  # one item per thread
    np.testing.assert_array_equal(z[:, 0], tiles.sum(axis=1, dtype=np.int32) + tiles.max(axis=1))
    firsts = scanned[:, ::items].reshape(GRID, -1, 32)  # blocked: thread t's first item
    lane0 = firsts.sum(axis=2, dtype=np.int32) + firsts.max(axis=2) + firsts[:, :, 0]
    np.testing.assert_array_equal(z[:, 32::32], lane0[:, 1:])
