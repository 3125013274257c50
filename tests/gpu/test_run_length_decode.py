"""BlockRunLengthDecode: a parent object built in the kernel, decoded window by window."""
import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local

pytestmark = pytest.mark.gpu

RUNS, DECODED = 2, 4


@cuda.jit
def decode(d_values, d_lengths, d_out, d_total):
    values = local.array(RUNS, np.int32)
    lengths = local.array(RUNS, np.int32)
    t = cuda.threadIdx.x
    for i in range(RUNS):
        values[i] = d_values[t * RUNS + i]
        lengths[i] = d_lengths[t * RUNS + i]
    total = local.array(1, np.uint32)
    rld = block.BlockRunLengthDecode(values, lengths, total, decoded_items_per_thread=DECODED)
    decoded = local.array(DECODED, np.int32)
    window = 0
    while window < total[0]:  # the same object, called in a loop
        rld.RunLengthDecode(decoded, window)
        for i in range(DECODED):
            pos = window + t * DECODED + i
            if pos < total[0]:
                d_out[pos] = decoded[i]
        window += cuda.blockDim.x * DECODED
    if t == 0:
        d_total[0] = total[0]


@pytest.mark.parametrize("threads", [32, 128])
def test_decode_matches_numpy_repeat(threads):
    rng = np.random.default_rng()
    values = rng.integers(-100, 100, threads * RUNS).astype(np.int32)
    # CUB: "a run of length zero may not be followed by a run length that is not zero", so
    # zero-length runs only at the end.
    lengths = rng.integers(1, 9, threads * RUNS).astype(np.int32)
    lengths[-3:] = 0
    want = np.repeat(values, lengths)
    out = cuda.device_array(max(1, want.size), np.int32)
    total = cuda.device_array(1, np.uint32)
    decode[1, threads](cuda.to_device(values), cuda.to_device(lengths), out, total)
    assert total.copy_to_host()[0] == want.size
    np.testing.assert_array_equal(out.copy_to_host()[:want.size], want)
