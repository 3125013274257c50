"""Blocked loads and stores: each thread owns ``ITEMS`` consecutive elements (the arrangement a
thread-level scan or sort wants), here a running sum of them. numba alone loads them one element
at a time; CUB's ``LoadDirectBlockedVectorized`` / ``StoreDirectBlockedVectorized``
(``block.load_direct_blocked_vectorized``) move them in 16-byte vectors (``ld.global.v4``),
a quarter of the memory instructions for float32.

    python examples/blocked_vectorized.py            # GB/s of both kernels, checked
    python examples/blocked_vectorized.py --n 268435456 --repeats 50
"""
import argparse
import functools

import numpy as np

from _compiler import cuda
from coopgen import block, local

THREADS = 256
ITEMS = 8  # consecutive float32 a thread: two 16-byte vectors


@functools.lru_cache(maxsize=None)
def make_kernel(vectorized: bool):
    """The running-sum kernel over tiles of THREADS * ITEMS, with CUB's vectorized direct
    loads and stores (``vectorized``) or numba's element-by-element accesses."""
    @cuda.jit
    def running_sums(x, out):
        tile = cuda.blockIdx.x * (THREADS * ITEMS)
        first = tile + cuda.threadIdx.x * ITEMS  # this thread's first item
        items = local.array(ITEMS, np.float32)
        if vectorized:
            block.load_direct_blocked_vectorized(x[tile:], items)
        else:
            for j in range(ITEMS):
                items[j] = x[first + j]
        total = np.float32(0)
        for j in range(ITEMS):
            total += items[j]
            items[j] = total
        if vectorized:
            block.store_direct_blocked_vectorized(out[tile:], items)
        else:
            for j in range(ITEMS):
                out[first + j] = items[j]
    return running_sums


def run(n: int, repeats: int) -> dict:
    """Both kernels on ``n`` float32 items (a multiple of THREADS * ITEMS): their GB/s (bytes
    read and written once per call) after checking them against numpy, and a device copy's."""
    tile = THREADS * ITEMS
    if n % tile:
        raise ValueError(f"blocked_vectorized: n={n} must be a multiple of {tile}")
    x = np.random.default_rng(0).standard_normal(n, dtype=np.float32)
    want = np.cumsum(x.reshape(-1, ITEMS), axis=1, dtype=np.float32).reshape(-1)
    d_x, d_out = cuda.to_device(x), cuda.device_array_like(x)
    start, stop = cuda.event(), cuda.event()
    out = {}
    for vectorized in (False, True):
        k = make_kernel(vectorized)[n // tile, THREADS]
        k(d_x, d_out)
        cuda.synchronize()
        np.testing.assert_allclose(d_out.copy_to_host(), want, rtol=1e-6, atol=1e-5)
        start.record()
        for _ in range(repeats):
            k(d_x, d_out)
        stop.record()
        stop.synchronize()
        seconds = cuda.event_elapsed_time(start, stop) / 1e3 / repeats
        out["vectorized" if vectorized else "plain"] = 2 * n * 4 / seconds / 1e9
    start.record()
    for _ in range(repeats):
        d_out.copy_to_device(d_x)
    stop.record()
    stop.synchronize()
    out["copy"] = 2 * n * 4 / (cuda.event_elapsed_time(start, stop) / 1e3 / repeats) / 1e9
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1 << 28, help="float32 items")
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    gbs = run(args.n, args.repeats)
    for name, v in gbs.items():
        print(f"{name:10} {v:8.1f} GB/s")
    print(f"vectorized / plain: {gbs['vectorized'] / gbs['plain']:.3f}x")


if __name__ == "__main__":
    main()
