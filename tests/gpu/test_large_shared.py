"""Storage above 48 KB runs from dynamic shared memory, set up by the launch itself; the launch
configuration reports the total, as cuda.coop's does."""
import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

import coopgen
from coopgen import block, coop, local, shared

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
    out = cuda.device_array(blocks * threads * 16, np.int64)
    want = (np.arange(1, blocks + 1)[:, None] * 100000 + np.arange(user_ints)).astype(np.int32)
    launch = sort_tiles_beside_user_memory[blocks, threads, 0, 4 * user_ints]
    for _ in range(2):  # the second launch reads the reported total: it asks for the same
        x = _keys(blocks * threads * 16)
        user = cuda.device_array((blocks, user_ints), np.int32)
        launch(cuda.to_device(x), out, user)
        np.testing.assert_array_equal(out.copy_to_host(), _sorted_tiles(x, blocks))
        np.testing.assert_array_equal(user.copy_to_host(), want)
        assert launch.sharedmem > 4 * user_ints + 128 * 1024  # and the sort's 132 KB


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


# -- cuda.coop's TempStorage(size_in_bytes): that many bytes, past 48 KB in dynamic memory -------

ABOVE_STATIC = 49 * 1024
HALF_OF_IT = 25 * 1024  # two of these: each below 48 KB, together above


@cuda.jit
def scan_in_sized_storage(d_in, d_out):
    items = coop.local.array(4, d_in.dtype)
    temp = coop.TempStorage(ABOVE_STATIC, 16)
    base = cuda.blockIdx.x * cuda.blockDim.x * 4
    coop.block.load(d_in[base:], items)
    coop.block.exclusive_sum(items, items, temp_storage=temp)
    coop.block.store(d_out[base:], items)


@cuda.jit
def scan_twice_in_two_storages(d_in, d_out):
    items = coop.local.array(4, d_in.dtype)
    first = coop.TempStorage(HALF_OF_IT, 16)
    second = coop.TempStorage(HALF_OF_IT, 16)
    base = cuda.blockIdx.x * cuda.blockDim.x * 4
    coop.block.load(d_in[base:], items)
    coop.block.exclusive_sum(items, items, temp_storage=first)
    coop.block.inclusive_sum(items, items, temp_storage=second)
    coop.block.store(d_out[base:], items)


def _tiles(blocks, threads):
    x = np.random.default_rng().integers(0, 1000, blocks * threads * 4, dtype=np.uint32)
    return x, x.reshape(blocks, -1)


def test_the_launch_reports_its_dynamic_shared_memory():
    blocks, threads = 3, 128
    launch = scan_in_sized_storage[blocks, threads]
    callbacks = len(launch.pre_launch_callbacks)
    for _ in range(2):
        x, tiles = _tiles(blocks, threads)
        out = cuda.device_array_like(x)
        launch(cuda.to_device(x), out)
        want = np.cumsum(tiles, axis=1, dtype=np.uint32) - tiles
        np.testing.assert_array_equal(out.copy_to_host(), want.ravel())
        assert ABOVE_STATIC <= launch.sharedmem < ABOVE_STATIC + 1024
    assert len(launch.pre_launch_callbacks) == callbacks + 1
    # reporting the total made the dispatcher compile nothing again
    assert len(scan_in_sized_storage.overloads) == 1
    assert not getattr(scan_in_sized_storage, "_launch_config_specializations", {})


def test_storages_below_the_limit_together_above_it():
    blocks, threads = 2, 128
    x, tiles = _tiles(blocks, threads)
    out = cuda.device_array_like(x)
    launch = scan_twice_in_two_storages[blocks, threads]
    launch(cuda.to_device(x), out)
    exclusive = np.cumsum(tiles, axis=1, dtype=np.uint32) - tiles
    np.testing.assert_array_equal(out.copy_to_host(),
                                  np.cumsum(exclusive, axis=1, dtype=np.uint32).ravel())
    assert launch.sharedmem >= 2 * HALF_OF_IT > 48 * 1024


def test_sized_storage_past_the_device_opt_in_is_a_clear_error():
    limit = cuda.get_current_device().MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    too_big = limit + 256

    @cuda.jit
    def scan_in_too_much_storage(d_in, d_out):
        items = coop.local.array(4, d_in.dtype)
        temp = coop.TempStorage(too_big, 16)
        coop.block.load(d_in, items)
        coop.block.exclusive_sum(items, items, temp_storage=temp)
        coop.block.store(d_out, items)

    x = np.zeros(128 * 4, np.uint32)
    with pytest.raises(ValueError, match=rf"kernel '.*scan_in_too_much_storage' needs \d+ "
                                         rf"bytes .*more than the device max opt-in of {limit}"):
        scan_in_too_much_storage[1, 128](cuda.to_device(x), cuda.device_array_like(x))
