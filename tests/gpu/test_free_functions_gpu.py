"""CUB's free functions against numpy: the direct block loads and stores (each arrangement,
guarded tiles), cache-modified thread loads and stores (every modifier), warp shuffles of any
type, and the thread-level reduce, sort, search and bit helpers."""
import functools

import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local, thread, warp
from coopgen.enums import CacheLoadModifier, CacheStoreModifier
from gpu_util import launch, rng_for, to_device, to_host

pytestmark = pytest.mark.gpu

THREADS, IPT, GRID = 128, 4, 3
TILE = THREADS * IPT


def _arranged(x_tile, arrangement):
    """What thread t holds in item i after a load of ``x_tile`` ([THREADS, IPT])."""
    if arrangement == "blocked":
        return x_tile.reshape(THREADS, IPT)
    if arrangement == "striped":
        return x_tile.reshape(IPT, THREADS).T
    # warp-striped: each warp's 32 * IPT items, striped across its lanes
    warps = x_tile.reshape(THREADS // 32, IPT, 32)
    return warps.transpose(0, 2, 1).reshape(THREADS, IPT)


@functools.lru_cache(maxsize=None)
def direct_kernel(arrangement, guarded):
    load = {"blocked": block.load_direct_blocked, "striped": block.load_direct_striped,
            "warp_striped": block.load_direct_warp_striped}[arrangement]
    store = {"blocked": block.store_direct_blocked, "striped": block.store_direct_striped,
             "warp_striped": block.store_direct_warp_striped}[arrangement]

    @cuda.jit
    def k(d_in, d_regs, d_out, valid):
        items = local.array(IPT, np.int32)
        tile = cuda.blockIdx.x * TILE
        if guarded:
            load(d_in[tile:], items, valid, -7)
        else:
            load(d_in[tile:], items)
        for i in range(IPT):
            d_regs[tile + cuda.threadIdx.x * IPT + i] = items[i]
        if guarded:
            store(d_out[tile:], items, valid)
        else:
            store(d_out[tile:], items)
    return k


@pytest.mark.parametrize("arrangement", ("blocked", "striped", "warp_striped"))
@pytest.mark.parametrize("guarded", (False, True))
def test_direct_loads_and_stores(arrangement, guarded):
    rng = rng_for("direct", arrangement, guarded)
    x = rng.integers(-1000, 1000, GRID * TILE, dtype=np.int32)
    valid = TILE - 77 if guarded else TILE
    d_in, d_regs = to_device(x), to_device(np.zeros_like(x))
    d_out = to_device(np.full_like(x, 5))
    launch(direct_kernel(arrangement, guarded), GRID, THREADS, d_in, d_regs, d_out, valid)
    regs, out = to_host(d_regs), to_host(d_out)
    for b in range(GRID):
        tile = x[b * TILE:(b + 1) * TILE].copy()
        tile[valid:] = -7  # the out-of-bounds default
        want = _arranged(tile, arrangement)
        np.testing.assert_array_equal(regs[b * TILE:(b + 1) * TILE].reshape(THREADS, IPT), want)
        stored = out[b * TILE:(b + 1) * TILE]
        np.testing.assert_array_equal(stored[:valid], x[b * TILE:b * TILE + valid])
        assert (stored[valid:] == 5).all()  # nothing written past the valid items


@functools.lru_cache(maxsize=None)
def vectorized_kernel():
    @cuda.jit
    def k(d_in, d_out):
        items = local.array(IPT, np.float32)
        tile = cuda.blockIdx.x * TILE
        block.load_direct_blocked_vectorized(d_in[tile:], items)
        for i in range(IPT):
            items[i] = items[i] * 2
        block.store_direct_blocked_vectorized(d_out[tile:], items)
    return k


def test_vectorized_blocked_roundtrip():
    x = rng_for("vectorized").standard_normal(GRID * TILE).astype(np.float32)
    d_out = to_device(np.zeros_like(x))
    launch(vectorized_kernel(), GRID, THREADS, to_device(x), d_out)
    np.testing.assert_array_equal(to_host(d_out), x * 2)


@functools.lru_cache(maxsize=None)
def modified_copy_kernel(load_modifier, store_modifier):
    @cuda.jit
    def k(d_in, d_out):
        i = cuda.grid(1)
        if i < d_in.size:
            v = thread.load(d_in[i:], modifier=load_modifier)
            thread.store(d_out[i:], v * 3, modifier=store_modifier)
    return k


@pytest.mark.parametrize("load_modifier", [m.name.lower() for m in CacheLoadModifier])
@pytest.mark.parametrize("dtype", (np.int32, np.float64, np.int8))
def test_thread_load_every_modifier(load_modifier, dtype):
    x = (rng_for("load", load_modifier).integers(-40, 40, 1000)).astype(dtype)
    d_out = to_device(np.zeros_like(x))
    launch(modified_copy_kernel(load_modifier, "default"), 8, 128, to_device(x), d_out)
    np.testing.assert_array_equal(to_host(d_out), (x * 3).astype(dtype))


@pytest.mark.parametrize("store_modifier", [m.name.lower() for m in CacheStoreModifier])
def test_thread_store_every_modifier(store_modifier):
    x = rng_for("store", store_modifier).standard_normal(1000).astype(np.float32)
    d_out = to_device(np.zeros_like(x))
    launch(modified_copy_kernel("cs", store_modifier), 8, 128, to_device(x), d_out)
    np.testing.assert_array_equal(to_host(d_out), x * 3)


@functools.lru_cache(maxsize=None)
def shuffle_kernel(kind, delta):
    shuffle = {"up": warp.shuffle_up, "down": warp.shuffle_down,
               "index": warp.shuffle_index}[kind]

    @cuda.jit
    def k(d_in, d_out):
        i = cuda.grid(1)
        d_out[i] = shuffle(d_in[i], delta)
    return k


@pytest.mark.parametrize("kind", ("up", "down", "index"))
@pytest.mark.parametrize("dtype", (np.int32, np.float64, np.int64, np.float32))
def test_warp_shuffles(kind, dtype):
    delta = 3
    x = rng_for("shuffle", kind).integers(-10**6, 10**6, 256).astype(dtype)
    d_out = to_device(np.zeros_like(x))
    launch(shuffle_kernel(kind, delta), 2, 128, to_device(x), d_out)
    lanes = np.arange(256) % 32
    base = np.arange(256) - lanes
    if kind == "up":  # lanes below delta keep their own value
        src = np.where(lanes >= delta, np.arange(256) - delta, np.arange(256))
    elif kind == "down":
        src = np.where(lanes + delta <= 31, np.arange(256) + delta, np.arange(256))
    else:
        src = base + delta
    np.testing.assert_array_equal(to_host(d_out), x[src])


@functools.lru_cache(maxsize=None)
def thread_kernel():
    @cuda.jit
    def k(d_in, d_vals, d_sum, d_keys, d_bounds, d_bits):
        t = cuda.grid(1)
        keys = local.array(8, np.int32)
        vals = local.array(8, np.float32)
        for i in range(8):
            keys[i] = d_in[t * 8 + i]
            vals[i] = d_vals[t * 8 + i]
        d_sum[t] = thread.reduce(keys, "+")
        thread.stable_odd_even_sort(keys, vals, "<")
        for i in range(8):
            d_keys[t * 8 + i] = keys[i]
            d_vals[t * 8 + i] = vals[i]
        d_bounds[2 * t] = thread.lower_bound(d_keys[t * 8:], 8, np.int32(0))
        d_bounds[2 * t + 1] = thread.upper_bound(d_keys[t * 8:], 8, np.int32(0))
        d_bits[t] = thread.bfe(np.uint32(d_in[t * 8]) & np.uint32(0xffff), 4, 8)
    return k


def test_thread_reduce_sort_search_bits():
    n = 64
    rng = rng_for("thread")
    x = rng.integers(-5, 5, n * 8).astype(np.int32)
    v = np.arange(n * 8, dtype=np.float32)
    d_vals, d_keys = to_device(v.copy()), to_device(np.zeros_like(x))
    d_sum, d_bounds = to_device(np.zeros(n, np.int32)), to_device(np.zeros(2 * n, np.int32))
    d_bits = to_device(np.zeros(n, np.uint32))
    launch(thread_kernel(), 1, n, to_device(x), d_vals, d_sum, d_keys, d_bounds, d_bits)
    rows = x.reshape(n, 8)
    np.testing.assert_array_equal(to_host(d_sum), rows.sum(axis=1))
    order = np.argsort(rows, axis=1, kind="stable")
    np.testing.assert_array_equal(to_host(d_keys).reshape(n, 8), np.take_along_axis(rows, order, 1))
    np.testing.assert_array_equal(to_host(d_vals).reshape(n, 8),
                                  np.take_along_axis(v.reshape(n, 8), order, 1))
    srt = np.sort(rows, axis=1)
    bounds = to_host(d_bounds).reshape(n, 2)
    np.testing.assert_array_equal(bounds[:, 0], [np.searchsorted(r, 0, "left") for r in srt])
    np.testing.assert_array_equal(bounds[:, 1], [np.searchsorted(r, 0, "right") for r in srt])
    first = (rows[:, 0].astype(np.int64) & 0xffff).astype(np.uint32)
    np.testing.assert_array_equal(to_host(d_bits), (first >> 4) & 0xff)


@functools.lru_cache(maxsize=None)
def thread_scan_kernel():
    @cuda.jit
    def k(d_in, d_incl, d_excl, d_last):
        t = cuda.grid(1)
        items = local.array(8, np.int32)
        incl = local.array(8, np.int32)
        excl = local.array(8, np.int32)
        for i in range(8):
            items[i] = d_in[t * 8 + i]
        d_last[t] = thread.scan_inclusive(items, incl, "+")
        thread.scan_exclusive(items, excl, "+", np.int32(100))
        for i in range(8):
            d_incl[t * 8 + i] = incl[i]
            d_excl[t * 8 + i] = excl[i]
    return k


@pytest.mark.skipif(not hasattr(thread, "scan_inclusive"),
                    reason="this CCCL has no thread scans in cub::detail")
def test_thread_scans():
    n = 64
    x = rng_for("thread-scan").integers(-50, 50, n * 8).astype(np.int32)
    d_incl, d_excl = to_device(np.zeros_like(x)), to_device(np.zeros_like(x))
    d_last = to_device(np.zeros(n, np.int32))
    launch(thread_scan_kernel(), 1, n, to_device(x), d_incl, d_excl, d_last)
    rows = x.reshape(n, 8)
    incl = np.cumsum(rows, axis=1)
    np.testing.assert_array_equal(to_host(d_incl).reshape(n, 8), incl)
    np.testing.assert_array_equal(to_host(d_last), incl[:, -1])
    excl = 100 + np.concatenate([np.zeros((n, 1), np.int64), incl[:, :-1]], axis=1)
    np.testing.assert_array_equal(to_host(d_excl).reshape(n, 8), excl)
