"""Two-phase primitives gathered in a ``coop.gpu_dataclass`` (a CUB ``KernelTraits``-style
struct passed as a kernel argument), sharing temp storage every way cuda.coop offers: each
call its own sized ``TempStorage``, one shared (sized or inferred, with or without automatic
barriers), one exclusive (inferred, or sized to the slices in call order), or slices of a shared
array sized from the dataclass's ``temp_storage_bytes_sum``.

Each tile of a block's grid-stride loop goes load, exclusive sum, radix sort (8 bits), merge
sort, store: the tile's exclusive prefix sums, sorted. Each ``case_*`` returns a
coop_kernels.Case (linked for sm_90 by tests/cpu/test_coop_compile.py, launched by
tests/gpu/compat/test_coop_containers.py).
"""
from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba import cuda

from coop_kernels import Case
from coopgen import coop

THREADS, ITEMS, TILES = 64, 2, 3
TILE = THREADS * ITEMS
BEGIN_BIT, END_BIT = numba.int32(0), numba.int32(8)


@cuda.jit(device=True)
def less(a, b):
    return a < b


@dataclass
class Traits:
    items_per_thread: int
    load: object
    exclusive_sum: object
    radix_sort: object
    merge_sort: object
    store: object


def make_traits(dtype=np.uint32):
    tile = (dtype, THREADS, ITEMS)
    return coop.gpu_dataclass(Traits(
        ITEMS, coop.block.load(*tile, algorithm=coop.BlockLoadAlgorithm.DIRECT),
        coop.block.exclusive_sum(*tile),
        coop.block.radix_sort_keys(*tile, begin_bit=BEGIN_BIT, end_bit=END_BIT),
        coop.block.merge_sort_keys(*tile, less),
        coop.block.store(*tile, algorithm=coop.BlockStoreAlgorithm.DIRECT)))


def _slices(traits):
    """(offset, bytes) of each primitive's slice, in call order, each at its alignment."""
    out, end = [], 0
    for p in (traits.load, traits.exclusive_sum, traits.radix_sort, traits.merge_sort,
              traits.store):
        start = -(-end // p.temp_storage_alignment) * p.temp_storage_alignment
        out.append((start, p.temp_storage_bytes))
        end = start + p.temp_storage_bytes
    return out


def make_kernel(mode: str, traits):
    """The kernel of one way to give the five calls their temp storage."""
    largest, align = traits.temp_storage_bytes_max, traits.temp_storage_alignment
    slices = _slices(traits)
    (lo, ln), (so, sn), (ro, rn), (mo, mn), (to, tn) = slices
    exclusive_bytes = slices[-1][0] + slices[-1][1]  # no padding after the last slice
    (la, sa, ra, ma, ta) = (p.temp_storage_alignment for p in (
        traits.load, traits.exclusive_sum, traits.radix_sort, traits.merge_sort, traits.store))
    padding = align * len(slices)  # room to align each slice of the summed bytes

    @cuda.jit
    def kernel(d_in, d_out, total, kp):
        items = coop.local.array(kp.items_per_thread, dtype=d_in.dtype)
        if mode == "array_slices":
            arena = coop.shared.array(kp.temp_storage_bytes_sum + padding, np.uint8)
        elif mode == "shared_sized":
            ts = coop.TempStorage(largest, align)
        elif mode == "shared_sized_manual":
            ts = coop.TempStorage(largest, align, auto_sync=False)
        elif mode == "shared_inferred":
            ts = coop.TempStorage()
        elif mode == "exclusive_inferred":
            ts = coop.TempStorage(sharing="exclusive")
        elif mode == "exclusive_sized":
            ts = coop.TempStorage(exclusive_bytes, align, sharing="exclusive")
        offset = cuda.blockIdx.x * TILE
        while offset < total:
            if mode == "array_slices":
                kp.load(d_in[offset:], items, temp_storage=arena[lo:lo + ln])
                kp.exclusive_sum(items, items, temp_storage=arena[so:so + sn])
                kp.radix_sort(items, kp.items_per_thread, BEGIN_BIT, END_BIT,
                              temp_storage=arena[ro:ro + rn])
                kp.merge_sort(items, kp.items_per_thread, less, temp_storage=arena[mo:mo + mn])
                kp.store(d_out[offset:], items, temp_storage=arena[to:to + tn])
            elif mode == "own":
                kp.load(d_in[offset:], items, temp_storage=coop.TempStorage(ln, la))
                kp.exclusive_sum(items, items, temp_storage=coop.TempStorage(sn, sa))
                kp.radix_sort(items, kp.items_per_thread, BEGIN_BIT, END_BIT,
                              temp_storage=coop.TempStorage(rn, ra))
                kp.merge_sort(items, kp.items_per_thread, less,
                              temp_storage=coop.TempStorage(mn, ma))
                kp.store(d_out[offset:], items, temp_storage=coop.TempStorage(tn, ta))
            else:
                manual = mode == "shared_sized_manual"
                kp.load(d_in[offset:], items, temp_storage=ts)
                if manual:
                    cuda.syncthreads()
                kp.exclusive_sum(items, items, temp_storage=ts)
                if manual:
                    cuda.syncthreads()
                kp.radix_sort(items, kp.items_per_thread, BEGIN_BIT, END_BIT, temp_storage=ts)
                if manual:
                    cuda.syncthreads()
                kp.merge_sort(items, kp.items_per_thread, less, temp_storage=ts)
                if manual:
                    cuda.syncthreads()
                kp.store(d_out[offset:], items, temp_storage=ts)
                if manual:
                    cuda.syncthreads()
            offset += cuda.gridDim.x * TILE
    return kernel


def _case(rng, mode):
    traits = make_traits()
    x = rng.integers(0, 16, TILES * TILE, dtype=np.uint32)
    tiles = x.reshape(TILES, TILE)
    scanned = np.cumsum(tiles, axis=1, dtype=np.uint32) - tiles
    want = np.sort(scanned, axis=1).ravel()

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], want)
    # one block walks the tiles, so each call reuses its storage round the loop
    return Case(make_kernel(mode, traits), 1, THREADS, (x, np.zeros_like(x), x.size, traits),
                check)


def case_dataclass_own_storage_per_call(rng):
    return _case(rng, "own")


def case_dataclass_shared_sized_storage(rng):
    return _case(rng, "shared_sized")


def case_dataclass_shared_sized_storage_manual_barriers(rng):
    return _case(rng, "shared_sized_manual")


def case_dataclass_shared_inferred_storage(rng):
    return _case(rng, "shared_inferred")


def case_dataclass_exclusive_inferred_storage(rng):
    return _case(rng, "exclusive_inferred")


def case_dataclass_exclusive_storage_sized_to_its_slices(rng):
    return _case(rng, "exclusive_sized")


def case_dataclass_slices_of_an_array_sized_from_the_sum(rng):
    return _case(rng, "array_slices")


CASES = [case_dataclass_own_storage_per_call, case_dataclass_shared_sized_storage,
         case_dataclass_shared_sized_storage_manual_barriers,
         case_dataclass_shared_inferred_storage, case_dataclass_exclusive_inferred_storage,
         case_dataclass_exclusive_storage_sized_to_its_slices,
         case_dataclass_slices_of_an_array_sized_from_the_sum]
