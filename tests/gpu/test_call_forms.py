"""Call forms the compile-time checks must let through, against numpy: the partial-tile load
with keywords only some overloads have, and explicit temp storage of exactly the size CUB needs."""
import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local, shared
from gpu_util import launch, random, rng_for, to_device, to_host

pytestmark = pytest.mark.gpu

THREADS, ITEMS = 128, 4
SORT_BYTES = block.BlockRadixSort(np.int32, threads_per_block=THREADS,
                                  items_per_thread=ITEMS).temp_storage_bytes


@cuda.jit
def partial_load_by_keywords(d_in, d_out, valid, oob):
    items = local.array(ITEMS, np.int32)
    block.load(d_in, items, block_items_end=valid, oob_default=oob)
    for i in range(ITEMS):
        d_out[cuda.threadIdx.x * ITEMS + i] = items[i]


@cuda.jit
def sort_in_explicit_storage(d_in, d_out):
    items = local.array(ITEMS, np.int32)
    storage = shared.array(SORT_BYTES, np.uint8)
    block.load(d_in, items)
    block.radix_sort_keys(items, temp_storage=storage)
    block.store(d_out, items)


@pytest.mark.parametrize("valid", [1, 37, THREADS * ITEMS - 1])
def test_partial_tile_load_with_keywords(valid):
    rng = rng_for("partial_kw", valid)
    x = random(np.int32, THREADS * ITEMS, rng)
    oob = int(rng.integers(-1000, 1000))
    d_out = to_device(np.zeros_like(x))
    launch(partial_load_by_keywords, 1, THREADS, to_device(x), d_out, np.int32(valid),
           np.int32(oob))
    expected = np.where(np.arange(x.size) < valid, x, oob).astype(np.int32)
    np.testing.assert_array_equal(to_host(d_out), expected)


def test_radix_sort_in_explicit_storage_of_exact_size():
    x = random(np.int32, THREADS * ITEMS, rng_for("explicit_storage"))
    d_out = to_device(np.zeros_like(x))
    launch(sort_in_explicit_storage, 1, THREADS, to_device(x), d_out)
    np.testing.assert_array_equal(to_host(d_out), np.sort(x))


@cuda.jit
def exclusive_sum_with_aggregate_keyword(d_in, d_out, d_total):
    items = local.array(ITEMS, np.int32)
    aggregate = local.array(1, np.int32)
    block.load(d_in, items)
    # the method's keyword after the template keywords
    block.exclusive_sum(items, items, threads_per_block=THREADS, block_aggregate=aggregate)
    block.store(d_out, items)
    if cuda.threadIdx.x == 0:
        d_total[0] = aggregate[0]


def test_method_keyword_after_template_keywords():
    x = random(np.int32, THREADS * ITEMS, rng_for("aggregate_kw"), -1000, 1000)
    d_out, d_total = to_device(np.zeros_like(x)), to_device(np.zeros(1, np.int32))
    launch(exclusive_sum_with_aggregate_keyword, 1, THREADS, to_device(x), d_out, d_total)
    expected = np.concatenate([[0], np.cumsum(x)[:-1]]).astype(np.int32)
    np.testing.assert_array_equal(to_host(d_out), expected)
    assert to_host(d_total)[0] == x.sum()
