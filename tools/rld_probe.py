"""Probe BlockRunLengthDecode: python tools/rld_probe.py MIN_LENGTH THREADS."""
import sys

import numpy as np
from numba import cuda

sys.path.insert(0, "tests/gpu")
from test_run_length_decode import RUNS, decode  # noqa: E402

lo, threads = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
values = rng.integers(-100, 100, threads * RUNS).astype(np.int32)
lengths = rng.integers(lo, 9, threads * RUNS).astype(np.int32)
want = np.repeat(values, lengths)
out = cuda.device_array(max(1, want.size), np.int32)
total = cuda.device_array(1, np.uint32)
decode[1, threads](cuda.to_device(values), cuda.to_device(lengths), out, total)
got = out.copy_to_host()[:want.size]
print("min length", lo, "threads", threads, "total", total.copy_to_host()[0], "want", want.size,
      "equal", np.array_equal(got, want))
