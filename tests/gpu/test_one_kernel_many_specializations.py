"""One kernel object launched across dtypes and block sizes: some of its specializations keep
their storage in static shared memory, some need more than 48 KB and take it from dynamic shared
memory. ``kernel[grid, block]`` is one cached launch configuration for all of them, so each launch
must use the dynamic size of the specialization it launches, whatever was launched before, with
and without the user's own dynamic bytes."""
import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local

pytestmark = pytest.mark.gpu

ITEMS = 16
TILES = 2
#: (dtype, threads): int64 and float64 at 512 threads need 66 KB of storage, the others < 48 KB.
SMALL_INT, SMALL_FLOAT = (np.int32, 512), (np.float32, 128)
BIG_INT, BIG_FLOAT = (np.int64, 512), (np.float64, 512)
ORDERS = {
    "small-big-small": [SMALL_INT, BIG_INT, SMALL_INT, SMALL_FLOAT, BIG_FLOAT, SMALL_FLOAT],
    "big-small-big": [BIG_INT, SMALL_INT, BIG_INT, BIG_FLOAT, SMALL_FLOAT, BIG_FLOAT, SMALL_INT],
}


@cuda.jit
def sort_and_sum(d_in, d_out, d_sums, d_user):
    items = local.array(ITEMS, d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * ITEMS
    block.load(d_in[base:], items, algorithm="warp_transpose")
    total = block.sum(items)  # valid in thread 0
    block.radix_sort_keys(items)
    block.store(d_out[base:], items, algorithm="warp_transpose")
    if cuda.threadIdx.x == 0:
        d_sums[cuda.blockIdx.x] = total


@cuda.jit
def sort_and_sum_beside_user_memory(d_in, d_out, d_sums, d_user):
    mine = cuda.shared.array(0, np.int32)  # the launch's dynamic bytes, the user's own
    n = d_user.shape[1]
    for i in range(cuda.threadIdx.x, n, cuda.blockDim.x):
        mine[i] = (cuda.blockIdx.x + 1) * 100000 + i
    items = local.array(ITEMS, d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * ITEMS
    block.load(d_in[base:], items, algorithm="warp_transpose")
    total = block.sum(items)
    block.radix_sort_keys(items)
    block.store(d_out[base:], items, algorithm="warp_transpose")
    if cuda.threadIdx.x == 0:
        d_sums[cuda.blockIdx.x] = total
    cuda.syncthreads()
    for i in range(cuda.threadIdx.x, n, cuda.blockDim.x):
        d_user[cuda.blockIdx.x, i] = mine[i]


#: kernel, the user's int32s of dynamic shared memory (None: ``kernel[grid, block]``)
VARIANTS = {
    "no-user-bytes": (sort_and_sum, None),
    "zero-user-bytes": (sort_and_sum, 0),
    "user-bytes-unused": (sort_and_sum, 1000),
    "user-bytes-used": (sort_and_sum_beside_user_memory, 700),
}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("order", ORDERS)
def test_each_launch_gets_its_own_specializations_dynamic_memory(order, variant):
    kernel, user_ints = VARIANTS[variant]
    rng = np.random.default_rng()
    for dtype, threads in ORDERS[order]:
        x = rng.integers(-1000, 1000, TILES * threads * ITEMS).astype(dtype)
        out, sums = cuda.device_array_like(x), cuda.device_array(TILES, dtype)
        user = cuda.device_array((TILES, user_ints or 0), np.int32)
        if user_ints is None:
            launch = kernel[TILES, threads]
        else:
            launch = kernel[TILES, threads, 0, 4 * user_ints]
        launch(cuda.to_device(x), out, sums, user)
        tiles = x.reshape(TILES, -1)
        where = f"{np.dtype(dtype).name} x {threads} threads, {order}, {variant}"
        np.testing.assert_array_equal(out.copy_to_host(), np.sort(tiles, axis=1).ravel(),
                                      err_msg=where)
        np.testing.assert_array_equal(sums.copy_to_host(), tiles.sum(axis=1, dtype=dtype),
                                      err_msg=where)
        if kernel is sort_and_sum_beside_user_memory:
            want = np.arange(1, TILES + 1)[:, None] * 100000 + np.arange(user_ints)
            np.testing.assert_array_equal(user.copy_to_host(), want, err_msg=where)
