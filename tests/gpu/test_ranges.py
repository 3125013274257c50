"""Fixed-size range parameters (CCCL 3.5.0): WarpReduce over a thread's items and every
WarpReduceBatched method, against numpy. Runs in a subprocess bound to CCCL 3.5.0."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

SCRIPT = textwrap.dedent('''
    import importlib, json, os
    import numpy as np
    cuda = importlib.import_module(os.environ.get("COOPGEN_COMPILER", "numba") + ".cuda")
    from coopgen import local, warp

    IPT, BATCHES, BIG = 4, 4, 40  # BIG batches: 2 outputs per lane (ceil_div(40, 32))

    @cuda.jit
    def reduce_items(d_in, d_out):
        items = local.array(IPT, np.int32)
        t = cuda.threadIdx.x
        for i in range(IPT):
            items[i] = d_in[t * IPT + i]
        s = warp.sum(items)  # the range overload: the thread's items, then the warp
        hi = warp.WarpReduce.Max(items)
        lo = warp.WarpReduce.Min(items)
        r = warp.WarpReduce.Reduce(items, "max")
        if t % 32 == 0:
            w = t // 32
            d_out[w * 4 + 0] = s
            d_out[w * 4 + 1] = hi
            d_out[w * 4 + 2] = lo
            d_out[w * 4 + 3] = r

    @cuda.jit
    def batched(d_small, d_big, d_lane, d_striped, d_blocked):
        t = cuda.threadIdx.x
        small = local.array(BATCHES, np.int32)  # Batches comes from the array's length
        for b in range(BATCHES):
            small[b] = d_small[t * BATCHES + b]
        d_lane[t * 2] = warp.WarpReduceBatched.Sum(small)
        d_lane[t * 2 + 1] = warp.WarpReduceBatched.Reduce(small, "min")
        big = local.array(BIG, np.int32)
        for b in range(BIG):
            big[b] = d_big[t * BIG + b]
        out = local.array(2, np.int32)
        warp.WarpReduceBatched.SumToStriped(big, out)
        d_striped[t * 4] = out[0]
        d_striped[t * 4 + 1] = out[1]
        warp.WarpReduceBatched.ReduceToStriped(big, out, "max")
        d_striped[t * 4 + 2] = out[0]
        d_striped[t * 4 + 3] = out[1]
        warp.WarpReduceBatched.SumToBlocked(big, out)
        d_blocked[t * 4] = out[0]
        d_blocked[t * 4 + 1] = out[1]
        warp.WarpReduceBatched.ReduceToBlocked(big, out, "max")
        d_blocked[t * 4 + 2] = out[0]
        d_blocked[t * 4 + 3] = out[1]

    rng = np.random.default_rng()
    warps = 3
    n = 32 * warps
    x = rng.integers(-1000, 1000, n * IPT, dtype=np.int32)
    got = cuda.device_array(warps * 4, np.int32)
    reduce_items[1, n](cuda.to_device(x), got)
    w = x.reshape(warps, 32 * IPT)
    want = np.stack([w.sum(1), w.max(1), w.min(1), w.max(1)], axis=1).ravel()

    small = rng.integers(-1000, 1000, (n, BATCHES), dtype=np.int32)
    big = rng.integers(-1000, 1000, (n, BIG), dtype=np.int32)
    lane = cuda.device_array(n * 2, np.int32)
    striped = cuda.device_array(n * 4, np.int32)
    blocked = cuda.device_array(n * 4, np.int32)
    batched[1, n](cuda.to_device(small.ravel()), cuda.to_device(big.ravel()), lane, striped,
                  blocked)
    lane, striped, blocked = (a.copy_to_host().reshape(n, -1) for a in (lane, striped, blocked))
    bad = []
    for wi in range(warps):
        s_w = small[wi * 32:(wi + 1) * 32]
        b_w = big[wi * 32:(wi + 1) * 32]
        for i in range(32):
            g = wi * 32 + i
            if i < BATCHES:  # lane i holds batch i
                if lane[g, 0] != s_w[:, i].sum() or lane[g, 1] != s_w[:, i].min():
                    bad.append(("lane", g))
            for j in range(2):
                b = i + 32 * j  # striped: lane i, output j -> batch i + 32 j
                if b < BIG and (striped[g, j] != b_w[:, b].sum() or
                                striped[g, 2 + j] != b_w[:, b].max()):
                    bad.append(("striped", g, j))
                b = i * 2 + j  # blocked: lane i, output j -> batch 2 i + j
                if b < BIG and (blocked[g, j] != b_w[:, b].sum() or
                                blocked[g, 2 + j] != b_w[:, b].max()):
                    bad.append(("blocked", g, j))
    print(json.dumps({"reduce_items": got.copy_to_host().tolist(), "want": want.tolist(),
                      "batched_mismatches": bad[:10]}))
''')


def test_range_overloads_under_cccl_3_5_0(tmp_path):
    from coopgen.generator.headers import HeaderError, load_lock, locate

    entry = next(e for e in load_lock() if e.cccl == "3.5.0")
    try:
        locate(entry)
    except HeaderError as e:  # no wheel, no cache and no network: nothing to compile against
        pytest.skip(f"CCCL 3.5.0 headers unavailable: {e}")
    (tmp_path / "ranges.py").write_text(SCRIPT, encoding="utf-8")
    env = dict(os.environ, COOPGEN_CCCL="3.5.0")
    out = subprocess.run([sys.executable, "ranges.py"], cwd=tmp_path, env=env,
                         capture_output=True, encoding="utf-8", errors="replace")
    assert out.returncode == 0, out.stderr[-4000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["reduce_items"] == r["want"]
    assert r["batched_mismatches"] == []
