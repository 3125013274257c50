"""BlockExchange: every kind (striped/blocked/warp-striped conversions, scatters with ranks,
guarded and flagged), warp_time_slicing, faithful and Pythonic surfaces."""
import functools

import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local
from gpu_util import (SMEM_LIMIT, block_id, dtype_id, launch, nthreads, random, rng_for,
                      to_device, to_host)

pytestmark = pytest.mark.gpu

NKINDS = 8


@functools.lru_cache(maxsize=None)
def exchange_kernel(ipt, time_slicing):
    @cuda.jit
    def k(d_in, d_ranks, d_flags, d_out):
        x = local.array(ipt, d_in.dtype)
        y = local.array(ipt, d_in.dtype)
        r = local.array(ipt, np.int32)
        f = local.array(ipt, np.bool_)
        t = cuda.threadIdx.x + cuda.blockDim.x * (cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)
        nt = cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z
        for i in range(ipt):
            x[i] = d_in[t * ipt + i]
            r[i] = d_ranks[t * ipt + i]
            f[i] = d_flags[t * ipt + i] != 0
        # CUB has no time-sliced ScatterToStripedGuarded/Flagged: with warp_time_slicing they
        # would write past the (one warp's) buffer (coopgen refuses them), so they run only
        # without it.
        for s in range(NKINDS - 2 if time_slicing else NKINDS):
            for i in range(ipt):
                y[i] = x[i]
            if s == 0:
                block.exchange(x, y, block_exchange_type="StripedToBlocked",
                               warp_time_slicing=time_slicing)
            elif s == 1:
                block.exchange(x, y, block_exchange_type="BlockedToStriped",
                               warp_time_slicing=time_slicing)
            elif s == 2:
                block.BlockExchange.WarpStripedToBlocked(x, y, warp_time_slicing=time_slicing)
            elif s == 3:
                block.exchange(x, y, block_exchange_type="BlockedToWarpStriped",
                               warp_time_slicing=time_slicing)
            elif s == 4:
                block.exchange(x, y, ranks=r, block_exchange_type="ScatterToBlocked",
                               warp_time_slicing=time_slicing)
            elif s == 5:
                block.BlockExchange.ScatterToStriped(x, y, r, warp_time_slicing=time_slicing)
            elif s == 6:
                block.exchange(x, y, ranks=r, block_exchange_type="ScatterToStripedGuarded")
            else:
                block.exchange(x, y, ranks=r, valid_flags=f,
                               block_exchange_type="ScatterToStripedFlagged")
            for i in range(ipt):
                d_out[(s * nt + t) * ipt + i] = y[i]
    return k


def _expected(x, ranks, flags, nt, ipt):
    """[kind][thread, item] -> expected value, or None where undefined; mask of defined ones."""
    n = nt * ipt
    X = x.reshape(nt, ipt)
    out = []
    # striped_to_blocked: X[t, i] sits at position i*nt + t.
    pos = np.empty(n, x.dtype)
    pos[(np.arange(ipt)[None, :] * nt + np.arange(nt)[:, None]).reshape(-1)] = X.reshape(-1)
    out.append((pos.reshape(nt, ipt), None))
    # blocked_to_striped: thread t item i gets position i*nt + t.
    out.append((x.reshape(ipt, nt).T, None))
    # warp-striped position of (t, i): warp*32*ipt + i*32 + lane.
    t_idx, i_idx = np.meshgrid(np.arange(nt), np.arange(ipt), indexing="ij")
    wpos = (t_idx // 32) * 32 * ipt + i_idx * 32 + t_idx % 32
    ws = np.empty(n, x.dtype)
    ws[wpos.reshape(-1)] = X.reshape(-1)
    out.append((ws.reshape(nt, ipt), None))
    out.append((x[wpos], None))
    # scatters: value X[t, i] goes to rank ranks[t, i].
    R = ranks.reshape(nt, ipt)
    by_rank = np.empty(n, x.dtype)
    by_rank[R.reshape(-1)] = X.reshape(-1)
    out.append((by_rank.reshape(nt, ipt), None))
    striped_pos = i_idx * nt + t_idx  # striped: thread t item i holds rank i*nt + t
    out.append((by_rank[striped_pos], None))
    out.append((by_rank[striped_pos], None))  # guarded: all ranks valid here
    written = np.zeros(n, bool)
    written[R.reshape(-1)[flags.reshape(-1) != 0]] = True
    out.append((by_rank[striped_pos], written[striped_pos]))
    return out


CASES = [(np.int32, 128, 4, False), (np.float64, 128, 4, True), (np.int8, (16, 8), 4, False),
         (np.uint16, 32, 16, False), (np.int64, 1024, 1, False), (np.float32, (4, 8, 8), 16, True),
         (np.uint64, 256, 16, False)]
CASES = [c for c in CASES if nthreads(c[1]) * c[2] * np.dtype(c[0]).itemsize <= SMEM_LIMIT]


@pytest.mark.parametrize("dtype,blk,ipt,time_slicing", CASES,
                         ids=[f"{dtype_id(d)}-{block_id(b)}-ipt{i}-ts{int(s)}" for d, b, i, s in CASES])
def test_every_exchange(dtype, blk, ipt, time_slicing):
    nt = nthreads(blk)
    n = nt * ipt
    rng = rng_for("exchange", dtype_id(dtype), blk, ipt, time_slicing)
    x = random(dtype, n, rng)
    ranks = rng.permutation(n).astype(np.int32)
    flags = rng.integers(0, 2, n).astype(np.int32)
    d_out = to_device(np.zeros(NKINDS * n, dtype))
    launch(exchange_kernel(ipt, time_slicing), 1, blk, to_device(x), to_device(ranks),
           to_device(flags), d_out)
    got = to_host(d_out).reshape(NKINDS, nt, ipt)
    for s, (want, mask) in enumerate(_expected(x, ranks, flags, nt, ipt)):
        if time_slicing and s >= NKINDS - 2:
            break
        if mask is None:
            np.testing.assert_array_equal(got[s], want, err_msg=f"kind #{s}")
        else:
            np.testing.assert_array_equal(got[s][mask], want[mask], err_msg=f"kind #{s}")


@functools.lru_cache(maxsize=None)
def guarded_kernel():
    @cuda.jit
    def k(d_in, d_ranks, d_out):
        x = local.array(4, d_in.dtype)
        y = local.array(4, d_in.dtype)
        r = local.array(4, np.int32)
        t = cuda.threadIdx.x
        for i in range(4):
            x[i] = d_in[t * 4 + i]
            r[i] = d_ranks[t * 4 + i]
        block.exchange(x, y, ranks=r, block_exchange_type="ScatterToStripedGuarded")
        for i in range(4):
            d_out[t * 4 + i] = y[i]
    return k


def test_scatter_guarded_skips_negative_ranks():
    nt, ipt = 128, 4
    n = nt * ipt
    rng = rng_for("guarded")
    x = random(np.int32, n, rng)
    ranks = rng.permutation(n).astype(np.int32)
    drop = rng.random(n) < 0.3
    ranks[drop] = -1
    d_out = to_device(np.zeros(n, np.int32))
    launch(guarded_kernel(), 1, nt, to_device(x), to_device(ranks), d_out)
    got = to_host(d_out).reshape(nt, ipt)
    by_rank = np.zeros(n, np.int32)
    written = np.zeros(n, bool)
    by_rank[ranks[~drop]] = x[~drop]
    written[ranks[~drop]] = True
    t_idx, i_idx = np.meshgrid(np.arange(nt), np.arange(ipt), indexing="ij")
    sp = i_idx * nt + t_idx
    np.testing.assert_array_equal(got[written[sp]], by_rank[sp][written[sp]])
