"""Device-wide exclusive prefix scan in ONE kernel launch: the single-pass scan with decoupled
look-back (Merrill and Garland, 2016), the algorithm behind ``cub::DeviceScan``.

Each thread block scans one tile of ``THREADS * ITEMS`` elements:

1. ``block.load`` the tile (the last tile may be partial);
2. ``block.exclusive_scan`` it with a *prefix callback*. CUB calls the callback from the
   block's first warp once it knows the tile's aggregate, and uses what it returns as the
   tile's starting value. Here the callback does the decoupled look-back:

   - publish the tile's aggregate (flag A) in the tile's status word;
   - walk back over the predecessors' status words, 32 at a time (one per lane), combining
     aggregates until it meets a tile whose inclusive prefix is known (flag P);
   - publish this tile's inclusive prefix (flag P) and return the exclusive one.

   A status word is one int64: the flag in the high 32 bits and the value's 32 bits in the
   low ones, so flag and value are published and read together by single 64-bit accesses
   (CUB's tile-state design for 4-byte values). Tile 0 needs no look-back: it scans with the
   initial value and publishes its inclusive prefix at once.
3. ``block.store`` the tile.

No separate initialisation kernel: the status words live in two halves used by alternate
launches, and each launch clears the half the next launch will use.

    python examples/single_pass_scan.py        # checks int32, float32 and a max-scan
"""
from __future__ import annotations

import numpy as np
from _compiler import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)
from _compiler import libdevice

from coopgen import block, local

#: CUB's sm_90 tuning for 4-byte scans: 128 threads x 24 items per tile, warp-transposed
#: load and store, and a short sleep before each poll of a predecessor's status.
THREADS, ITEMS = 128, 24
TILE = THREADS * ITEMS
POLL_DELAY_NS = 648  # sleep before each read of a window of status words
FIRST_POLL_DELAY_NS = 1245  # ... and once more before the first, while the L2 write lands

# Tile status flags (the high half of a status word). 0 = nothing published yet: a cleared
# word is "not ready".
NOT_READY, AGGREGATE, PREFIX = 0, 1, 2
LOW_32 = 0xFFFFFFFF


@cuda.jit(device=True, inline="always")
def add(a, b):
    return a + b


# --- value <-> 32 bits, per dtype -----------------------------------------------------------

@cuda.jit(device=True, inline="always")
def _int32_bits(v):
    return np.int64(v) & LOW_32


@cuda.jit(device=True, inline="always")
def _int32_from_bits(bits):
    return np.int32(bits)


@cuda.jit(device=True, inline="always")
def _float32_bits(v):
    return np.int64(libdevice.float_as_int(v)) & LOW_32


@cuda.jit(device=True, inline="always")
def _float32_from_bits(bits):
    return libdevice.int_as_float(np.int32(bits))


#: dtype -> (value -> low 32 bits, low 32 bits -> value)
CODECS = {np.dtype(np.int32): (_int32_bits, _int32_from_bits),
          np.dtype(np.float32): (_float32_bits, _float32_from_bits)}


def make_lookback(dtype, op):
    """The prefix callback: ``lookback(status, block_aggregate) -> exclusive prefix``, with
    ``status`` the launch's tile status words (coopgen passes a stateful callback's array as a
    pointer). CUB calls it from all 32 lanes of warp 0 and uses lane 0's result."""
    to_bits, from_bits = CODECS[np.dtype(dtype)]
    as_value = np.dtype(dtype).type

    @cuda.jit(device=True, inline="always")
    def combine(a, b):
        return as_value(op(a, b))  # e.g. int32 + int32 is int64 in numba

    @cuda.jit(device=True, inline="always")
    def publish(status, tile, flag, value):
        cuda.stcg(status, tile, (np.int64(flag) << 32) | to_bits(value))

    @cuda.jit(device=True, inline="always")
    def lookback(status, block_aggregate):
        tile = cuda.blockIdx.x
        lane = cuda.threadIdx.x  # warp 0: lanes 0..31
        if lane == 0:
            publish(status, tile, AGGREGATE, block_aggregate)
        cuda.nanosleep(FIRST_POLL_DELAY_NS)
        # Lane i looks at tile - 1 - i: lane 0 at the nearest predecessor. Lanes past tile 0
        # read nothing and pretend to be a prefix; tile 0 always publishes one, so they are
        # never combined.
        predecessor = tile - 1 - lane
        exclusive_prefix = block_aggregate  # (overwritten by the first window)
        first_window = True
        while True:
            word = np.int64(PREFIX) << 32
            while True:
                cuda.nanosleep(POLL_DELAY_NS)
                if predecessor >= 0:
                    word = cuda.ldcg(status, predecessor)
                if cuda.ballot_sync(0xFFFFFFFF, (word >> 32) == NOT_READY) == 0:
                    break
            value = from_bits(word & LOW_32)
            prefixes = cuda.ballot_sync(0xFFFFFFFF, (word >> 32) == PREFIX)
            # Combine lanes 0..last, last = the nearest tile whose prefix is known (or all 32):
            # a segmented reduction towards lane 0, farther tiles on the left of ``op``.
            last = cuda.ffs(prefixes) - 1 if prefixes != 0 else 31
            offset = 1
            while offset < 32:
                farther = cuda.shfl_down_sync(0xFFFFFFFF, value, offset)
                if lane + offset <= last:
                    value = combine(farther, value)
                offset *= 2
            window = cuda.shfl_sync(0xFFFFFFFF, value, 0)
            if first_window:
                exclusive_prefix = window
                first_window = False
            else:
                exclusive_prefix = combine(window, exclusive_prefix)
            if prefixes != 0:
                break
            predecessor -= 32
        if lane == 0:
            publish(status, tile, PREFIX, combine(exclusive_prefix, block_aggregate))
        return exclusive_prefix

    return lookback, publish, combine


def make_kernel(dtype, op=add):
    """The scan kernel for ``dtype`` and the associative ``op`` (a device function)."""
    if np.dtype(dtype) not in CODECS:
        raise ValueError(f"single_pass_scan: dtype={np.dtype(dtype)} is not supported; a tile "
                         f"status packs the value in 32 bits: use "
                         f"{', '.join(str(d) for d in CODECS)}")
    lookback, publish, combine = make_lookback(dtype, op)

    @cuda.jit
    def single_pass_scan(d_in, d_out, status, status_next, init):
        items = local.array(ITEMS, dtype)
        tile = cuda.blockIdx.x
        base = tile * TILE
        remaining = d_in.size - base
        full = remaining >= TILE
        if full:
            block.load(d_in[base:], items, algorithm="warp_transpose")
        else:
            block.load(d_in[base:], items, ITEMS, "warp_transpose", remaining, init)
        if tile == 0:
            aggregate = local.array(1, dtype)
            block.exclusive_scan(items, items, ITEMS, op, init, block_aggregate=aggregate)
            if cuda.threadIdx.x == 0:
                publish(status, 0, PREFIX, combine(init, aggregate[0]))
        else:
            block.exclusive_scan(items, items, ITEMS, op, prefix_op=(lookback, status))
        if full:
            block.store(d_out[base:], items, algorithm="warp_transpose")
        else:
            block.store(d_out[base:], items, ITEMS, "warp_transpose", remaining)
        # Clear the other half of the status words for the next launch (grid-stride, so a
        # later launch over more tiles than this one finds them cleared too).
        i = tile * THREADS + cuda.threadIdx.x
        while i < status_next.size:
            status_next[i] = 0
            i += cuda.gridDim.x * THREADS

    return single_pass_scan


class ExclusiveScan:
    """``scan(d_in, d_out)``: ``d_out[i] = init op d_in[0] op ... op d_in[i - 1]`` for device
    arrays of int32 or float32, in one kernel launch.

    ``op`` is an associative ``@cuda.jit(device=True)`` function of two values (default:
    addition) and ``init`` the value before the first element (default 0)."""

    def __init__(self, dtype, op=add, init=0):
        self.dtype = np.dtype(dtype)
        self.kernel = make_kernel(self.dtype, op)
        self.init = self.dtype.type(init)
        self._status = None  # (2, tiles) int64: the halves alternate between launches
        self._launches = 0

    def __call__(self, d_in, d_out, stream=0):
        if d_in.dtype != self.dtype or d_out.dtype != self.dtype:
            raise ValueError(f"single_pass_scan: arrays of {d_in.dtype} -> {d_out.dtype} given; "
                             f"this scan was made for {self.dtype}")
        if d_out.size != d_in.size:
            raise ValueError(f"single_pass_scan: d_out has {d_out.size} elements, d_in "
                             f"{d_in.size}: they must be equal")
        tiles = -(-d_in.size // TILE)
        if tiles == 0:
            return
        if self._status is None or self._status.shape[1] < tiles:
            self._status = cuda.to_device(np.zeros((2, tiles), np.int64), stream=stream)
        half = self._launches % 2
        self._launches += 1
        self.kernel[tiles, THREADS, stream](d_in, d_out, self._status[half],
                                            self._status[1 - half], self.init)


def reference(x, op=np.add, init=0):
    """numpy's answer: the exclusive scan with ``init`` first."""
    out = np.empty_like(x)
    if x.size:
        out[0] = init
        op.accumulate(np.concatenate(([init], x[:-1])).astype(x.dtype), out=out)
    return out


@cuda.jit(device=True, inline="always")
def maximum(a, b):
    return max(a, b)


def check(n, dtype, op=add, np_op=np.add, init=0, rng=None):
    """Scan ``n`` random values on the GPU (twice, to use both status halves) and compare
    with numpy; returns the largest absolute error."""
    rng = rng or np.random.default_rng()
    if np.dtype(dtype).kind == "i":
        x = rng.integers(-1000, 1000, n, dtype=dtype)
    else:
        x = rng.uniform(0, 1, n).astype(dtype)  # positive: relative errors stay meaningful
    scan = ExclusiveScan(dtype, op, init)
    d_in, d_out = cuda.to_device(x), cuda.device_array(n, dtype)
    want = reference(x.astype(np.float64) if x.dtype.kind == "f" else x, np_op, init)
    err = 0.0
    for _ in range(2):
        d_out[:] = np.nan if x.dtype.kind == "f" else -12345  # poison: all must be written
        scan(d_in, d_out)
        got = d_out.copy_to_host()
        if x.dtype.kind == "f":
            # float32 running sums of positive values: relative rounding error
            err = max(err, float(np.max(np.abs(got - want) / np.maximum(want, 1.0))))
            assert err <= 1e-5, f"{dtype} n={n}: relative error {err}"
        else:
            np.testing.assert_array_equal(got, want)
    return err


if __name__ == "__main__":
    for dtype in (np.int32, np.float32):
        for n in (1, TILE - 1, TILE, 3 * TILE + 17, 1_000_003):
            check(n, dtype)
    check(100_000, np.int32, maximum, np.maximum, init=np.iinfo(np.int32).min)
    print(f"single_pass_scan: int32 and float32 sums and an int32 max-scan match numpy "
          f"(up to 1,000,003 elements, {TILE} per tile)")
