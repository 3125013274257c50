"""Probe BlockRunLengthDecode variants (one window; explicit temp storage; item offsets)."""
import sys

import numpy as np
from numba import cuda

from coopgen import block, local, shared

RUNS, DECODED, T = 2, 4, 32
variant = sys.argv[1]


@cuda.jit
def k(d_values, d_lengths, d_out, d_total):
    values = local.array(RUNS, np.int32)
    lengths = local.array(RUNS, np.int32)
    t = cuda.threadIdx.x
    for i in range(RUNS):
        values[i] = d_values[t * RUNS + i]
        lengths[i] = d_lengths[t * RUNS + i]
    total = local.array(1, np.uint32)
    decoded = local.array(DECODED, np.int32)
    if variant == "explicit":
        ts = shared.array(4096, np.uint8)
        rld = block.BlockRunLengthDecode(values, lengths, total, decoded_items_per_thread=DECODED,
                                         temp_storage=ts)
        rld.RunLengthDecode(decoded, 0)
    elif variant == "offsets":
        rld = block.BlockRunLengthDecode(values, lengths, total, decoded_items_per_thread=DECODED)
        rel = local.array(DECODED, np.int32)
        rld.RunLengthDecode(decoded, rel, 0)
    else:
        rld = block.BlockRunLengthDecode(values, lengths, total, decoded_items_per_thread=DECODED)
        rld.RunLengthDecode(decoded, 0)
    for i in range(DECODED):
        d_out[t * DECODED + i] = decoded[i]
    d_total[t] = total[0]


rng = np.random.default_rng(0)
values = rng.integers(-100, 100, T * RUNS).astype(np.int32)
lengths = rng.integers(1, 3, T * RUNS).astype(np.int32)
want = np.repeat(values, lengths)
out = cuda.device_array(T * DECODED, np.int32)
total = cuda.device_array(T, np.uint32)
try:
    k[1, T](cuda.to_device(values), cuda.to_device(lengths), out, total)
    got = out.copy_to_host()
    n = min(want.size, T * DECODED)
    print(variant, "totals", set(total.copy_to_host().tolist()), "want", want.size,
          "first window equal", np.array_equal(got[:n], want[:n]))
except Exception as e:
    print(variant, "FAILED", str(e)[:120])
