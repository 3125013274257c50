"""BlockAdjacentDifference (left/right, partial tiles, tile predecessor/successor), BlockDiscontinuity
(heads/tails/both, with tile neighbours, 2- and 3-argument flag ops), BlockShuffle."""
import functools

import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local
from gpu_util import (block_id, dtype_id, launch, nthreads, random, rng_for, to_device, to_host)

pytestmark = pytest.mark.gpu


@cuda.jit(device=True)
def diff_py(a, b):
    return a - b


@functools.lru_cache(maxsize=None)
def adjacent_kernel(ipt):
    @cuda.jit
    def k(d_in, d_out, valid, pred, succ):
        x = local.array(ipt, d_in.dtype)
        y = local.array(ipt, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        nt = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z
        for i in range(ipt):
            x[i] = d_in[t * ipt + i]
        for s in range(7):
            if s == 0:
                block.adjacent_difference(x, y, difference_op="-")
            elif s == 1:
                block.BlockAdjacentDifference.SubtractLeft(x, y, diff_py, pred)
            elif s == 2:
                block.adjacent_difference(x, y, difference_op="-", valid_items=valid)
            elif s == 3:
                block.adjacent_difference(x, y, difference_op="-", valid_items=valid,
                                          tile_predecessor_item=pred)
            elif s == 4:
                block.adjacent_difference(x, y, difference_op=diff_py,
                                          block_adjacent_difference_type="SubtractRight")
            elif s == 5:
                block.BlockAdjacentDifference.SubtractRight(x, y, "-", succ)
            else:
                block.adjacent_difference(x, y, difference_op="-", valid_items=valid,
                                          block_adjacent_difference_type="SubtractRight")
            for i in range(ipt):
                d_out[(s * nt + t) * ipt + i] = y[i]
    return k


ADJ_CASES = [(np.int32, 128, 4), (np.uint8, 128, 4), (np.float64, 128, 4), (np.int64, (16, 8), 4),
             (np.int16, 32, 1), (np.float32, 256, 16), (np.uint32, (4, 8, 8), 4)]


@pytest.mark.parametrize("dtype,blk,ipt", ADJ_CASES,
                         ids=[f"{dtype_id(d)}-{block_id(b)}-ipt{i}" for d, b, i in ADJ_CASES])
def test_adjacent_difference(dtype, blk, ipt):
    nt = nthreads(blk)
    n = nt * ipt
    rng = rng_for("adjacent", dtype_id(dtype), blk, ipt)
    x = random(dtype, n, rng)
    pred, succ = random(dtype, 2, rng)
    valid = int(rng.integers(2, n))
    d_out = to_device(np.zeros(7 * n, dtype))
    launch(adjacent_kernel(ipt), 1, blk, to_device(x), d_out, valid, pred, succ)
    got = to_host(d_out).reshape(7, n)
    with np.errstate(over="ignore"):
        left = x.copy()
        left[1:] = x[1:] - x[:-1]  # wraps like C++ for integers
        left_pred = left.copy()
        left_pred[0] = x[0] - pred
        right = x.copy()
        right[:-1] = x[:-1] - x[1:]
        right_succ = right.copy()
        right_succ[-1] = x[-1] - succ
    p = np.arange(n)
    left_part = np.where(p < valid, left, x)
    left_part_pred = np.where(p < valid, left_pred, x)
    right_part = np.where(p < valid - 1, right, x)
    for s, want in enumerate([left, left_pred, left_part, left_part_pred, right, right_succ,
                              right_part]):
        np.testing.assert_array_equal(got[s], want, err_msg=f"variant #{s}")


@cuda.jit(device=True)
def differs_or_every_seventh(a, b, b_index):
    return a != b or b_index % 7 == 0


@functools.lru_cache(maxsize=None)
def discontinuity_kernel(ipt):
    @cuda.jit
    def k(d_in, d_flags, pred, succ):
        x = local.array(ipt, d_in.dtype)
        h = local.array(ipt, d_flags.dtype)
        tl = local.array(ipt, d_flags.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        nt = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z
        n = nt * ipt
        for i in range(ipt):
            x[i] = d_in[t * ipt + i]
        for s in range(9):
            for i in range(ipt):
                h[i] = 0
                tl[i] = 0
            if s == 0:
                block.discontinuity(x, h, flag_op="!=")
            elif s == 1:
                block.discontinuity(x, h, flag_op="!=", tile_predecessor_item=pred)
            elif s == 2:
                block.BlockDiscontinuity.FlagTails(tl, x, "!=")
            elif s == 3:
                block.discontinuity(x, tail_flags=tl, flag_op="!=", tile_successor_item=succ,
                                    block_discontinuity_type="TAILS")
            elif s == 4:
                block.discontinuity(x, h, tl, flag_op="!=", block_discontinuity_type="HEADS_AND_TAILS")
            elif s == 5:
                block.BlockDiscontinuity.FlagHeadsAndTails(h, tl, succ, x, "!=")
            elif s == 6:
                block.discontinuity(x, h, tl, flag_op="!=", tile_predecessor_item=pred,
                                    block_discontinuity_type="HEADS_AND_TAILS")
            elif s == 7:
                block.discontinuity(x, h, tl, flag_op="!=", tile_predecessor_item=pred,
                                    tile_successor_item=succ,
                                    block_discontinuity_type="HEADS_AND_TAILS")
            else:
                block.discontinuity(x, h, flag_op=differs_or_every_seventh)
            for i in range(ipt):
                d_flags[(2 * s) * n + t * ipt + i] = h[i]
                d_flags[(2 * s + 1) * n + t * ipt + i] = tl[i]
    return k


DISC_CASES = [(np.int32, np.int32, 128, 4), (np.float32, np.int32, 128, 4),
              (np.uint8, np.uint8, (16, 8), 4), (np.int64, np.int32, 32, 16),
              (np.float64, np.int8, 256, 1), (np.int16, np.bool_, (4, 8, 8), 4)]


@pytest.mark.parametrize("dtype,ftype,blk,ipt", DISC_CASES,
                         ids=[f"{dtype_id(d)}-{dtype_id(f)}-{block_id(b)}-ipt{i}" for d, f, b, i in DISC_CASES])
def test_discontinuity(dtype, ftype, blk, ipt):
    nt = nthreads(blk)
    n = nt * ipt
    rng = rng_for("disc", dtype_id(dtype), dtype_id(ftype), blk, ipt)
    x = rng.integers(0, 3, n).astype(dtype)  # runs of equal values
    pred, succ = dtype(x[0]), dtype(1 - x[-1] if x[-1] <= 1 else 0)  # pred equal, succ differs
    d_flags = to_device(np.zeros(18 * n, ftype))
    launch(discontinuity_kernel(ipt), 1, blk, to_device(x), d_flags, pred, succ)
    got = to_host(d_flags).reshape(9, 2, n).astype(np.int64)
    heads = np.ones(n, np.int64)
    heads[1:] = x[1:] != x[:-1]
    heads_pred = heads.copy()
    heads_pred[0] = int(pred != x[0])
    tails = np.ones(n, np.int64)
    tails[:-1] = x[:-1] != x[1:]
    tails_succ = tails.copy()
    tails_succ[-1] = int(x[-1] != succ)
    zeros = np.zeros(n, np.int64)
    want = [(heads, zeros), (heads_pred, zeros), (zeros, tails), (zeros, tails_succ),
            (heads, tails), (heads, tails_succ), (heads_pred, tails), (heads_pred, tails_succ)]
    for s, (wh, wt) in enumerate(want):
        np.testing.assert_array_equal(got[s, 0], wh, err_msg=f"heads #{s}")
        np.testing.assert_array_equal(got[s, 1], wt, err_msg=f"tails #{s}")
    seventh = heads.copy()
    seventh[1:] = (x[1:] != x[:-1]) | (np.arange(1, n) % 7 == 0)
    np.testing.assert_array_equal(got[8, 0], seventh)


@functools.lru_cache(maxsize=None)
def shuffle_kernel(ipt):
    @cuda.jit
    def k(d_in, d_out, d_scalars, sentinel, distance):
        x = local.array(ipt, d_in.dtype)
        y = local.array(ipt, d_in.dtype)
        o = local.array(1, d_in.dtype)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        nt = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z
        n = nt * ipt
        for i in range(ipt):
            x[i] = d_in[t * ipt + i]
        # Offset / Rotate (scalars), outputs start as the sentinel.
        o[0] = sentinel
        block.shuffle(x[0], o, distance=distance)
        d_scalars[t] = o[0]
        o[0] = sentinel
        block.shuffle(x[0], o, distance=-distance)
        d_scalars[nt + t] = o[0]
        d_scalars[2 * nt + t] = block.shuffle(x[0])  # distance 1
        d_scalars[3 * nt + t] = block.BlockShuffle.Rotate(x[0], distance)
        # Up / Down (arrays), with and without the block suffix / prefix.
        for s in range(4):
            for i in range(ipt):
                y[i] = sentinel
            if s == 0:
                block.shuffle(x, y, block_shuffle_type="Up")
            elif s == 1:
                block.BlockShuffle.Up(x, y, o)
            elif s == 2:
                block.BlockShuffle.Down(x, y)
            else:
                block.shuffle(x, y, block_shuffle_type="Down", block_prefix=o)
            for i in range(ipt):
                d_out[s * n + t * ipt + i] = y[i]
            if s % 2 == 1:
                d_scalars[(4 + s // 2) * nt + t] = o[0]
    return k


SHUFFLE_CASES = [(np.int32, 128, 4), (np.float64, 128, 4), (np.int8, (16, 8), 4),
                 (np.uint64, 1024, 1), (np.float32, (4, 8, 8), 16), (np.uint16, 32, 16)]


@pytest.mark.parametrize("dtype,blk,ipt", SHUFFLE_CASES,
                         ids=[f"{dtype_id(d)}-{block_id(b)}-ipt{i}" for d, b, i in SHUFFLE_CASES])
def test_shuffle(dtype, blk, ipt):
    nt = nthreads(blk)
    n = nt * ipt
    rng = rng_for("shuffle", dtype_id(dtype), blk, ipt)
    x = random(dtype, n, rng)
    sentinel = dtype(5)
    distance = int(rng.integers(2, nt // 2))
    d_out, d_sc = to_device(np.zeros(4 * n, dtype)), to_device(np.zeros(6 * nt, dtype))
    launch(shuffle_kernel(ipt), 1, blk, to_device(x), d_out, d_sc, sentinel, distance)
    got, sc = to_host(d_out).reshape(4, n), to_host(d_sc).reshape(6, nt)
    first = x.reshape(nt, ipt)[:, 0]
    t = np.arange(nt)
    np.testing.assert_array_equal(sc[0], np.where(t + distance < nt, first[np.minimum(t + distance, nt - 1)], sentinel))
    np.testing.assert_array_equal(sc[1], np.where(t - distance >= 0, first[np.maximum(t - distance, 0)], sentinel))
    np.testing.assert_array_equal(sc[2][:-1], first[1:])  # the last thread's output is unset
    np.testing.assert_array_equal(sc[3], first[(t + distance) % nt])
    up = np.concatenate([[sentinel], x[:-1]]).astype(dtype)
    down = np.concatenate([x[1:], [sentinel]]).astype(dtype)
    np.testing.assert_array_equal(got[0], up)
    np.testing.assert_array_equal(got[1], up)
    np.testing.assert_array_equal(got[2], down)
    np.testing.assert_array_equal(got[3], down)
    np.testing.assert_array_equal(sc[4], np.full(nt, x[-1]))  # block_suffix: the tile's last item
    np.testing.assert_array_equal(sc[5], np.full(nt, x[0]))  # block_prefix: the tile's first item
