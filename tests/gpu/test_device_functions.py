"""Primitives in device functions called from a kernel follow each launch's block shape, as in
cuda.coop: single-phase block and warp primitives (the function is inlined into the kernel, which
is compiled per block shape) and an object made in the kernel and used in a device function."""
import numpy as np
import pytest
from gpu_util import cuda, numba  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, coop

pytestmark = pytest.mark.gpu


@cuda.jit(device=True, inline="always")
def inline_sum(x):
    return block.sum(x)


@cuda.jit(device=True)
def explicit_sum(x):
    return block.sum(x, threads_per_block=128)


@cuda.jit(device=True)
def implicit_sum(x):
    return block.sum(x)


@cuda.jit
def k_inline(d_in, d_out):
    total = inline_sum(d_in[cuda.threadIdx.x])
    if cuda.threadIdx.x == 0:  # the sum is valid in thread 0, as in CUB
        d_out[0] = total


@cuda.jit
def k_explicit(d_in, d_out):
    total = explicit_sum(d_in[cuda.threadIdx.x])
    if cuda.threadIdx.x == 0:  # the sum is valid in thread 0, as in CUB
        d_out[0] = total


@cuda.jit
def k_implicit(d_in, d_out):
    total = implicit_sum(d_in[cuda.threadIdx.x])
    if cuda.threadIdx.x == 0:  # the sum is valid in thread 0, as in CUB
        d_out[0] = total


def test_inline_device_function_follows_each_launch():
    x = np.random.default_rng().integers(-100, 100, 256).astype(np.int32)
    for threads in (128, 256, 128):
        out = cuda.device_array(1, np.int32)
        k_inline[1, threads](cuda.to_device(x), out)
        assert out.copy_to_host()[0] == x[:threads].sum()


def test_explicit_block_size_in_a_device_function():
    x = np.random.default_rng().integers(-100, 100, 128).astype(np.int32)
    out = cuda.device_array(1, np.int32)
    k_explicit[1, 128](cuda.to_device(x), out)
    assert out.copy_to_host()[0] == x.sum()


def test_launch_shape_in_a_device_function_follows_each_launch():
    rng = np.random.default_rng()
    for threads in (128, 64, 256, 128):
        x = rng.integers(-100, 100, threads).astype(np.int32)
        out = cuda.device_array(1, np.int32)
        k_implicit[1, threads](cuda.to_device(x), out)
        assert out.copy_to_host()[0] == x.sum(), threads


@cuda.jit(device=True)
def warp_largest(x):
    return coop.warp.reduce(x, "max")


@cuda.jit(device=True)
def block_prefix_sums(items):
    coop.block.exclusive_sum(items, items)


@cuda.jit
def k_coop_device_functions(d_in, d_out, d_max):
    t = cuda.threadIdx.x
    items = coop.local.array(2, numba.int32)
    for i in range(2):
        items[i] = d_in[t * 2 + i]
    block_prefix_sums(items)
    for i in range(2):
        d_out[t * 2 + i] = items[i]
    m = warp_largest(d_in[t])
    if t % 32 == 0:
        d_max[t // 32] = m


def test_coop_primitives_in_device_functions():
    rng = np.random.default_rng()
    for threads in (96, 256, 64):
        x = rng.integers(-1000, 1000, 2 * threads).astype(np.int32)
        out, mx = cuda.device_array(2 * threads, np.int32), cuda.device_array(threads // 32,
                                                                               np.int32)
        k_coop_device_functions[1, threads](cuda.to_device(x), out, mx)
        np.testing.assert_array_equal(out.copy_to_host(), np.cumsum(x) - x)
        np.testing.assert_array_equal(mx.copy_to_host(), x[:threads].reshape(-1, 32).max(axis=1))


@cuda.jit(device=True)
def count_items(h, items):
    h.composite(items)


@cuda.jit
def k_histogram_in_device_function(d_in, d_out):
    items = coop.local.array(4, numba.uint8)
    for i in range(4):
        items[i] = d_in[cuda.threadIdx.x * 4 + i]
    hist = coop.shared.array(256, numba.int32)
    h = coop.block.histogram(items, hist)
    h.init()
    cuda.syncthreads()
    count_items(h, items)
    cuda.syncthreads()
    for b in range(cuda.threadIdx.x, 256, cuda.blockDim.x):
        d_out[b] = hist[b]


def test_histogram_object_used_in_a_device_function():
    rng = np.random.default_rng()
    for threads in (128, 64):
        x = rng.integers(0, 256, 4 * threads).astype(np.uint8)
        out = cuda.device_array(256, np.int32)
        k_histogram_in_device_function[1, threads](cuda.to_device(x), out)
        np.testing.assert_array_equal(out.copy_to_host(), np.bincount(x, minlength=256))
