"""Storage above 48 KB runs from dynamic shared memory, set up by the launch itself."""
import numpy as np
import pytest
from numba import cuda

import coopgen
from coopgen import block, local, shared

pytestmark = pytest.mark.gpu

big_ts = coopgen.TempStorage()


@cuda.jit
def sort_tiles(d_in, d_out):
    items = local.array(16, np.int64)
    base = cuda.blockIdx.x * cuda.blockDim.x * 16
    block.load(d_in[base:], items, algorithm="warp_transpose")
    block.radix_sort_keys(items)
    block.store(d_out[base:], items, algorithm="warp_transpose")


@cuda.jit
def scale_tiles(d_in, d_out):
    items = local.array(32, np.float64)
    base = cuda.blockIdx.x * cuda.blockDim.x * 32
    block.load(d_in[base:], items, algorithm="warp_transpose")
    for i in range(32):
        items[i] = 2 * items[i] + 1
    block.store(d_out[base:], items, algorithm="warp_transpose")


@cuda.jit
def sort_tiles_beside_user_memory(d_in, d_out, d_user):
    # The launch's own dynamic shared memory stays the user's: coopgen's storage comes after it.
    mine = cuda.shared.array(0, np.int32)
    n = d_user.shape[1]
    for i in range(cuda.threadIdx.x, n, cuda.blockDim.x):
        mine[i] = (cuda.blockIdx.x + 1) * 100000 + i
    items = local.array(16, np.int64)
    base = cuda.blockIdx.x * cuda.blockDim.x * 16
    block.load(d_in[base:], items, algorithm="warp_transpose")
    block.radix_sort_keys(items)
    block.store(d_out[base:], items, algorithm="warp_transpose")
    cuda.syncthreads()
    for i in range(cuda.threadIdx.x, n, cuda.blockDim.x):
        d_user[cuda.blockIdx.x, i] = mine[i]


@cuda.jit
def sort_tiles_temp_storage(d_in, d_out):
    items = local.array(16, np.int64)
    base = cuda.blockIdx.x * cuda.blockDim.x * 16
    block.load(d_in[base:], items, algorithm="warp_transpose", temp_storage=big_ts)
    cuda.syncthreads()
    block.radix_sort_keys(items, temp_storage=big_ts)
    cuda.syncthreads()
    block.store(d_out[base:], items, algorithm="warp_transpose", temp_storage=big_ts)


@cuda.jit
def sort_tiles_in_shared_array(d_in, d_out):
    temp = shared.array(140 * 1024, np.uint8)  # as temp_storage: room for the sort's 132 KB
    items = local.array(16, np.int64)
    base = cuda.blockIdx.x * cuda.blockDim.x * 16
    block.load(d_in[base:], items, algorithm="warp_transpose", temp_storage=temp)
    cuda.syncthreads()
    block.radix_sort_keys(items, temp_storage=temp)
    cuda.syncthreads()
    block.store(d_out[base:], items, algorithm="warp_transpose", temp_storage=temp)


@cuda.jit
def reverse_tiles(d_in, d_out):
    buf = shared.array((128, 128), np.float64)  # 128 KB, no primitive
    t = cuda.threadIdx.x
    base = cuda.blockIdx.x * 128 * 128
    for i in range(128):
        buf[t, i] = d_in[base + t * 128 + i]
    cuda.syncthreads()
    for i in range(128):
        d_out[base + t * 128 + i] = buf[127 - t, 127 - i]


def _keys(n):
    info = np.iinfo(np.int64)
    return np.random.default_rng().integers(info.min, info.max, n, dtype=np.int64)


def _sorted_tiles(x, blocks):
    return np.sort(x.reshape(blocks, -1), axis=1).ravel()


def test_radix_sort_1024_threads_16_int64_keys():
    blocks, threads = 6, 1024  # 128 KB of storage per block
    x = _keys(blocks * threads * 16)
    out = cuda.device_array_like(x)
    sort_tiles[blocks, threads](cuda.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), _sorted_tiles(x, blocks))


def test_warp_transpose_load_store_32_float64_per_thread():
    blocks, threads = 5, 512  # 132 KB of storage per block
    x = np.random.default_rng().standard_normal(blocks * threads * 32)
    out = cuda.device_array_like(x)
    scale_tiles[blocks, threads](cuda.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), 2 * x + 1)


def test_past_the_device_opt_in_is_a_clear_error():
    # A 1024 x 32 float64 warp-transpose tile needs 264 KB: more than an H100/H200 block gets.
    threads = 1024
    limit = cuda.get_current_device().MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    x = np.random.default_rng().standard_normal(threads * 32)
    need = block.BlockStore(np.float64, threads_per_block=threads, items_per_thread=32,
                            algorithm="warp_transpose").temp_storage_bytes
    if need <= limit:
        pytest.skip(f"this device gives a block {limit} bytes")
    with pytest.raises(ValueError, match=rf"kernel 'scale_tiles' needs \d+ bytes of shared "
                                         rf"memory per block .*device max opt-in of {limit}"):
        scale_tiles[1, threads](cuda.to_device(x), cuda.device_array_like(x))


@pytest.mark.parametrize("user_ints", [1, 250, 3001])
def test_the_launch_dynamic_memory_stays_the_users(user_ints):
    blocks, threads = 3, 1024
    x = _keys(blocks * threads * 16)
    out = cuda.device_array_like(x)
    user = cuda.device_array((blocks, user_ints), np.int32)
    sort_tiles_beside_user_memory[blocks, threads, 0, 4 * user_ints](cuda.to_device(x), out, user)
    np.testing.assert_array_equal(out.copy_to_host(), _sorted_tiles(x, blocks))
    want = (np.arange(1, blocks + 1)[:, None] * 100000 + np.arange(user_ints)).astype(np.int32)
    np.testing.assert_array_equal(user.copy_to_host(), want)


def test_temp_storage_above_48_kb():
    blocks, threads = 4, 1024
    x = _keys(blocks * threads * 16)
    out = cuda.device_array_like(x)
    sort_tiles_temp_storage[blocks, threads](cuda.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), _sorted_tiles(x, blocks))


def test_shared_array_above_48_kb_as_temp_storage():
    blocks, threads = 4, 1024
    x = _keys(blocks * threads * 16)
    out = cuda.device_array_like(x)
    sort_tiles_in_shared_array[blocks, threads](cuda.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), _sorted_tiles(x, blocks))


def test_shared_array_above_48_kb():
    blocks = 3
    x = np.random.default_rng().standard_normal(blocks * 128 * 128)
    out = cuda.device_array_like(x)
    reverse_tiles[blocks, 128](cuda.to_device(x), out)
    np.testing.assert_array_equal(out.copy_to_host(), x.reshape(blocks, -1)[:, ::-1].ravel())


def test_a_zero_byte_dynamic_request_still_gets_the_storage():
    """kernel[grid, block, stream, 0] (cuda.coop's tests launch so): the request is the user's,
    none here, and the storage above 48 KB is added by the launch as without it."""
    blocks, threads = 2, 1024
    x = _keys(blocks * threads * 16)
    for launch in (sort_tiles[blocks, threads, 0, 0], sort_tiles_temp_storage[blocks, threads, 0, 0]):
        out = cuda.device_array_like(x)
        launch(cuda.to_device(x), out)
        np.testing.assert_array_equal(out.copy_to_host(), _sorted_tiles(x, blocks))
