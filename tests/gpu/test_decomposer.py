"""Radix sort of record keys through a decomposer (fields named from Python)."""
import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local

pytestmark = pytest.mark.gpu

REC = np.dtype([("a", np.int32), ("b", np.float32)], align=True)
ITEMS = 4


@cuda.jit
def sort_records(d_keys, d_vals, descending):
    keys = local.array(ITEMS, REC)
    vals = local.array(ITEMS, np.int32)
    base = cuda.blockIdx.x * cuda.blockDim.x * ITEMS + cuda.threadIdx.x * ITEMS
    for i in range(ITEMS):
        keys[i] = d_keys[base + i]
        vals[i] = d_vals[base + i]
    if descending:
        block.radix_sort_pairs_descending(keys, vals, decomposer=("a", "b"))
    else:
        block.radix_sort_pairs(keys, vals, decomposer=("a", "b"))
    for i in range(ITEMS):
        d_keys[base + i] = keys[i]
        d_vals[base + i] = vals[i]


@pytest.mark.parametrize("descending", [False, True])
@pytest.mark.parametrize("threads", [32, 128])
def test_sort_records_by_a_then_b(threads, descending):
    rng = np.random.default_rng()
    blocks = 3
    n = blocks * threads * ITEMS
    keys = np.empty(n, REC)
    keys["a"] = rng.integers(-5, 5, n)  # many ties on a, so b decides
    keys["b"] = rng.standard_normal(n).astype(np.float32)
    vals = np.arange(n, dtype=np.int32)
    d_keys, d_vals = cuda.to_device(keys), cuda.to_device(vals)
    sort_records[blocks, threads](d_keys, d_vals, descending)
    got_k, got_v = d_keys.copy_to_host(), d_vals.copy_to_host()
    tile = threads * ITEMS
    for t in range(blocks):
        k = keys[t * tile:(t + 1) * tile]
        order = np.lexsort((k["b"], k["a"]), axis=0)  # by a, then b; stable
        if descending:
            order = order[::-1]
        want = k[order]
        np.testing.assert_array_equal(got_k[t * tile:(t + 1) * tile]["a"], want["a"])
        np.testing.assert_array_equal(got_k[t * tile:(t + 1) * tile]["b"], want["b"])
        # values travel with their keys
        np.testing.assert_array_equal(keys[got_v[t * tile:(t + 1) * tile]]["a"], want["a"])
