"""BlockReduce: Sum / Reduce, array and scalar inputs, num_valid, every algorithm, built-in and
Python operators, faithful, Pythonic and two-phase surfaces."""
import functools

import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local, shared
from gpu_util import (ALL_DTYPES, BLOCKS, assert_sums_equal, block_id,
                      dtype_id, launch, nthreads, random, rng_for, to_device,
                      to_host, wrap_sum)

pytestmark = pytest.mark.gpu

ALGORITHMS = ("raking_commutative_only", "raking", "warp_reductions")
GRID = 3


@functools.lru_cache(maxsize=None)
def sum_kernel(ipt):
    @cuda.jit
    def k(d_in, d_out):
        items = local.array(ipt, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        base = cuda.blockIdx.x * (cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z) * ipt
        for i in range(ipt):
            items[i] = d_in[base + t * ipt + i]
        total = block.sum(items)
        if t == 0:
            d_out[cuda.blockIdx.x] = total
    return k


SUM_CASES = ([(dt, 128, 4) for dt in ALL_DTYPES]
             + [(np.int32, b, ipt) for b in BLOCKS for ipt in (1, 16)]
             + [(np.float64, (4, 8, 8), 4), (np.uint8, (16, 8), 16)])


@pytest.mark.parametrize("dtype,blk,ipt", SUM_CASES,
                         ids=[f"{dtype_id(d)}-{block_id(b)}-ipt{i}" for d, b, i in SUM_CASES])
def test_sum_of_items(dtype, blk, ipt):
    n = nthreads(blk) * ipt
    x = random(dtype, GRID * n, rng_for("sum", dtype_id(dtype), blk, ipt))
    d_out = to_device(np.zeros(GRID, dtype))
    launch(sum_kernel(ipt), GRID, blk, to_device(x), d_out)
    want = wrap_sum(x.reshape(GRID, n), dtype, axis=1)
    assert_sums_equal(to_host(d_out), want, dtype, x, n)


@functools.lru_cache(maxsize=None)
def all_overloads_kernel(algorithm):
    @cuda.jit
    def k(d_in, d_out, num_valid):
        items = local.array(4, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        base = cuda.blockIdx.x * (cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z) * 4
        for i in range(4):
            items[i] = d_in[base + t * 4 + i]
        x = items[0]
        r0 = block.sum(items, algorithm=algorithm)
        r1 = block.reduce(items, binary_op="max", algorithm=algorithm)
        r2 = block.sum(x, algorithm=algorithm)
        r3 = block.reduce(x, binary_op="min", algorithm=algorithm)
        r4 = block.sum(x, num_valid=num_valid, algorithm=algorithm)
        r5 = block.BlockReduce.Reduce(x, "max", num_valid, algorithm=algorithm)
        if t == 0:
            o = cuda.blockIdx.x * 6
            d_out[o + 0] = r0
            d_out[o + 1] = r1
            d_out[o + 2] = r2
            d_out[o + 3] = r3
            d_out[o + 4] = r4
            d_out[o + 5] = r5
    return k


ALGO_CASES = ([(a, dt, 128) for a in ALGORITHMS for dt in (np.int32, np.uint8, np.int64, np.float32)]
              + [(a, np.float64, (16, 8)) for a in ALGORITHMS] + [("raking", np.int16, 1024)])


@pytest.mark.parametrize("algorithm,dtype,blk", ALGO_CASES,
                         ids=[f"{a}-{dtype_id(d)}-{block_id(b)}" for a, d, b in ALGO_CASES])
def test_every_overload_and_algorithm(algorithm, dtype, blk):
    nt = nthreads(blk)
    rng = rng_for("algo", algorithm, dtype_id(dtype), blk)
    x = random(dtype, GRID * nt * 4, rng)
    num_valid = int(rng.integers(1, nt))
    d_out = to_device(np.zeros(GRID * 6, dtype))
    launch(all_overloads_kernel(algorithm), GRID, blk, to_device(x), d_out, num_valid)
    got = to_host(d_out).reshape(GRID, 6)
    tiles = x.reshape(GRID, nt, 4)
    firsts = tiles[:, :, 0]
    assert_sums_equal(got[:, 0], wrap_sum(tiles.reshape(GRID, -1), dtype, axis=1), dtype, x, nt * 4)
    np.testing.assert_array_equal(got[:, 1], tiles.reshape(GRID, -1).max(axis=1))
    assert_sums_equal(got[:, 2], wrap_sum(firsts, dtype, axis=1), dtype, x, nt)
    np.testing.assert_array_equal(got[:, 3], firsts.min(axis=1))
    assert_sums_equal(got[:, 4], wrap_sum(firsts[:, :num_valid], dtype, axis=1), dtype, x, nt)
    np.testing.assert_array_equal(got[:, 5], firsts[:, :num_valid].max(axis=1))


@functools.lru_cache(maxsize=None)
def ops_kernel():
    @cuda.jit
    def k(d_in, d_out):
        items = local.array(4, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        for i in range(4):
            items[i] = d_in[t * 4 + i]
        r = (block.reduce(items, binary_op="+"), block.reduce(items, binary_op="*"),
             block.reduce(items, binary_op="&"), block.reduce(items, binary_op="|"),
             block.reduce(items, binary_op="^"), block.reduce(items, binary_op="min"),
             block.reduce(items, binary_op="max"))
        if t == 0:
            for j in range(7):
                d_out[j] = r[j]
    return k


@pytest.mark.parametrize("dtype", [np.int16, np.uint32, np.int64], ids=dtype_id)
def test_builtin_operators(dtype):
    x = random(dtype, 256 * 4, rng_for("ops", dtype_id(dtype))) | dtype(1)  # odd: products stay nonzero
    d_out = to_device(np.zeros(7, dtype))
    launch(ops_kernel(), 1, 256, to_device(x), d_out)
    want = [x.sum(dtype=dtype), x.prod(dtype=dtype), np.bitwise_and.reduce(x),
            np.bitwise_or.reduce(x), np.bitwise_xor.reduce(x), x.min(), x.max()]
    np.testing.assert_array_equal(to_host(d_out), np.array(want, dtype))


@cuda.jit(device=True)
def larger_magnitude(a, b):
    return a if abs(a) >= abs(b) else b


@functools.lru_cache(maxsize=None)
def pyop_kernel():
    @cuda.jit
    def k(d_in, d_out):
        items = local.array(4, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        for i in range(4):
            items[i] = d_in[t * 4 + i]
        r = block.reduce(items, binary_op=larger_magnitude)
        r2 = block.BlockReduce.Reduce(items[1], larger_magnitude)
        if t == 0:
            d_out[0] = r
            d_out[1] = r2
    return k


@pytest.mark.parametrize("dtype", [np.int32, np.float64], ids=dtype_id)
def test_python_operator(dtype):
    x = random(dtype, 128 * 4, rng_for("pyop", dtype_id(dtype)), lo=-1000, hi=1000)
    d_out = to_device(np.zeros(2, dtype))
    launch(pyop_kernel(), 1, 128, to_device(x), d_out)
    got = to_host(d_out)
    assert abs(got[0]) == np.abs(x).max()
    assert abs(got[1]) == np.abs(x.reshape(128, 4)[:, 1]).max()


TWO_PHASE_SUM = block.sum(np.int32, 128, items_per_thread=4)
TWO_PHASE_REDUCE = block.BlockReduce(np.int32, threads_per_block=128, algorithm="raking")


@functools.lru_cache(maxsize=None)
def surfaces_kernel():
    @cuda.jit
    def k(d_in, d_out):
        items = local.array(4, np.int32)
        plain = cuda.local.array(4, np.int32)  # numba array: no static shape
        t = cuda.threadIdx.x
        for i in range(4):
            items[i] = d_in[t * 4 + i]
            plain[i] = d_in[t * 4 + i]
        ts = shared.array(4096, np.uint8)
        r0 = block.BlockReduce.Sum(items)
        r1 = TWO_PHASE_SUM(items)
        r2 = TWO_PHASE_REDUCE.Reduce(items, "max")
        r3 = block.sum(items, temp_storage=ts)
        r4 = block.sum(plain, items_per_thread=4)
        r5 = block.reduce(items, binary_op="min", threads_per_block=128,
                          algorithm="RAKING_COMMUTATIVE_ONLY")
        if t == 0:
            d_out[0] = r0
            d_out[1] = r1
            d_out[2] = r2
            d_out[3] = r3
            d_out[4] = r4
            d_out[5] = r5
    return k


def test_faithful_pythonic_two_phase_and_explicit_storage():
    x = random(np.int32, 128 * 4, rng_for("surfaces"), lo=-10**6, hi=10**6)
    d_out = to_device(np.zeros(6, np.int32))
    launch(surfaces_kernel(), 1, 128, to_device(x), d_out)
    s = x.sum(dtype=np.int32)
    np.testing.assert_array_equal(to_host(d_out), [s, s, x.max(), s, s, x.min()])
