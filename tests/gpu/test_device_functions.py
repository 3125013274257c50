"""Primitives in device functions: inline ones follow the launch; others must be explicit."""
import numpy as np
import pytest
from numba import cuda
from numba.cuda.core.errors import TypingError

from coopgen import block

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


def test_launch_shape_in_a_device_function_is_refused():
    out = cuda.device_array(1, np.int32)
    with pytest.raises(TypingError, match="device function 'implicit_sum' without threads_per_block="):
        k_implicit[1, 128](cuda.to_device(np.ones(128, np.int32)), out)
