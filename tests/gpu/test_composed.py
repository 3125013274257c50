"""One kernel composing load, radix sort, run-length encode and decode, histogram, scan and
store, all sharing one inferred coopgen.TempStorage, with CUB's barriers between uses."""
import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

import coopgen
from coopgen import block, local, shared

pytestmark = pytest.mark.gpu

T, IPT, BINS = 128, 4, 16
N = T * IPT
N1 = N + 1  # (array shapes must be constants)
ts = coopgen.TempStorage()


@cuda.jit
def compose(d_in, d_out, d_hist, d_runs):
    t = cuda.threadIdx.x
    items = local.array(IPT, np.int32)
    block.load(d_in, items, algorithm="warp_transpose", temp_storage=ts)
    cuda.syncthreads()
    block.radix_sort_keys(items, temp_storage=ts)
    cuda.syncthreads()
    # Run-length encode: heads of runs, then each run's index by an exclusive scan.
    heads = local.array(IPT, np.int32)
    block.discontinuity(items, heads, flag_op="!=", temp_storage=ts)
    cuda.syncthreads()
    run_index = local.array(IPT, np.int32)
    num_runs = local.array(1, np.int32)
    block.exclusive_sum(heads, run_index, block_aggregate=num_runs, temp_storage=ts)
    starts = shared.array(N1, np.int32)
    run_values = shared.array(N, np.int32)
    for i in range(IPT):
        if heads[i]:
            starts[run_index[i]] = t * IPT + i
            run_values[run_index[i]] = items[i]
    if t == 0:
        starts[num_runs[0]] = N
        d_runs[0] = num_runs[0]
    cuda.syncthreads()
    # Decode again: IPT runs per thread (blocked), zero-length runs at the end.
    values = local.array(IPT, np.int32)
    lengths = local.array(IPT, np.int32)
    for i in range(IPT):
        r = t * IPT + i
        if r < num_runs[0]:
            values[i] = run_values[r]
            lengths[i] = starts[r + 1] - starts[r]
        else:
            values[i] = 0
            lengths[i] = 0
    total = local.array(1, np.uint32)
    rld = block.BlockRunLengthDecode(values, lengths, total, decoded_items_per_thread=IPT,
                                     temp_storage=ts)
    decoded = local.array(IPT, np.int32)
    rld.RunLengthDecode(decoded, 0)
    cuda.syncthreads()
    bins = shared.array(BINS, np.int32)
    block.BlockHistogram.Histogram(decoded, bins, temp_storage=ts)
    cuda.syncthreads()
    for b in range(t, BINS, T):
        d_hist[b] = bins[b]
    block.store(d_out, decoded, algorithm="warp_transpose", temp_storage=ts)


def test_composed_kernel_matches_numpy():
    rng = np.random.default_rng()
    x = rng.integers(0, BINS, N).astype(np.int32)
    out = cuda.device_array(N, np.int32)
    hist = cuda.device_array(BINS, np.int32)
    runs = cuda.device_array(1, np.int32)
    compose[1, T](cuda.to_device(x), out, hist, runs)
    want = np.sort(x)
    np.testing.assert_array_equal(out.copy_to_host(), want)
    np.testing.assert_array_equal(hist.copy_to_host(), np.bincount(x, minlength=BINS))
    assert runs.copy_to_host()[0] == len(np.unique(x))
