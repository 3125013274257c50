"""The differential suite's kernels compile without a GPU: a seeded sample of configurations
drawn from the specs links to an sm_90 cubin, each call resolving to the overload it was drawn
for; and keyword-only calls (the suite makes nothing else) pick overloads by their keywords."""
import sys
from pathlib import Path

import numpy as np
from numba import cuda, types

import coopgen
from coopgen import block, local
from coopgen.lower import typing as calls

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: tools/

from tools.fuzz import runner, space  # noqa: E402

I32 = types.int32[::1]


def shim_source(kernel, threads, monkeypatch) -> str:
    """The C++ translation unit NVRTC compiles for ``kernel`` (the disk cache off)."""
    from coopgen.codegen import nvrtc
    from coopgen.linkcheck import link_cubin

    sources = []
    real = nvrtc.compile_naming
    monkeypatch.setattr(nvrtc, "compile_naming",
                        lambda src, *a, **kw: (sources.append(src), real(src, *a, **kw))[1])
    monkeypatch.setenv("COOPGEN_DISABLE_CACHE", "1")
    with coopgen.block_shape(threads):
        link_cubin(kernel, (I32, I32))
    return sources[-1]


def test_a_keyword_only_other_overloads_have_is_no_crash():
    """block_aggregate= exists only in the 3-parameter InclusiveSum: the 2-parameter overload,
    tried first, must be passed over, not end the resolution with a bare StopIteration."""
    def k(d_in, d_out, d_agg):
        x = local.array(4, np.int32)
        y = local.array(4, np.int32)
        a = local.array(1, np.int32)
        for i in range(4):
            x[i] = d_in[i]
        block.BlockScan.InclusiveSum(input=x, output=y, block_aggregate=a)
        d_out[0] = y[0]
        d_agg[0] = a[0]

    calls.RESOLVED.clear()
    with coopgen.block_shape(128):
        cuda.compile_all(k, (I32, I32, I32), device=False, abi="numba", cc=(9, 0),
                         output="ltoir")
    assert list(calls.RESOLVED)[-1].endswith(
        "InclusiveSum(T (&)[ITEMS_PER_THREAD], T (&)[ITEMS_PER_THREAD], T &)")


def test_a_seeded_sample_of_fuzz_configurations_links_for_sm90():
    configs = space.draw(12, seed=20261123, block=(32, 4))  # one shape: two kernels
    batches = runner.batches_of(configs, 6)
    calls.RESOLVED.clear()
    results = [r for b in batches for r in runner.run_batch(b, compile_only=True)]
    bad = [r.line() for r in results if r.status != "compiled"]
    assert not bad, "\n".join(bad)
    assert {c.label() for c in configs} <= set(calls.RESOLVED)


def test_half_precision_and_complex_configurations_link_for_sm90():
    from tools.fuzz import families
    # (seed 19 drew WarpExchange's in-place ScatterToStriped, which a keyword-only call resolves
    # to its out-of-place overload: a question for the fuzz space, left open)
    configs = space.draw(12, seed=23, block=(64,), dtypes=families.ML)
    assert {c.dtype for c in configs} == set(families.ML)
    calls.RESOLVED.clear()
    results = [r for b in runner.batches_of(configs, 6) for r in runner.run_batch(b, compile_only=True)]
    bad = [r.line() for r in results if r.status != "compiled"]
    assert not bad, "\n".join(bad)
    assert {c.label() for c in configs} <= set(calls.RESOLVED)


def test_group_first_calls_of_the_differential_suite_link_for_sm90():
    """The fuzz's group-first surface (cuda.coop's coop.sum(coop.this_block(), x), ...): every
    overload that has one, drawn so, links."""
    configs = space.draw(2 * len(space.GROUP_CALLS), seed=27, block=(64,), surface="group")
    assert {c.surface for c in configs} == {"group"}
    drawn = {(c.cls, c.method.name) for c in configs}
    assert drawn == {(c, m) for c, m, _ in space.GROUP_CALLS}
    results = [r for b in runner.batches_of(configs, 12) for r in runner.run_batch(
        b, compile_only=True)]
    bad = [r.line() for r in results if r.status != "compiled"]
    assert not bad, "\n".join(bad)


def test_warp_storage_slices_of_two_logical_warp_sizes_do_not_overlap(monkeypatch):
    """Found by the differential suite (WarpMergeSort next to other warp primitives): slice k
    of one TempStorage type overlapped slice j of another type used by another logical warp,
    which __syncwarp does not order. Each logical warp size gets its own array of slices."""
    from coopgen import warp


    def k(d_in, d_out):
        t = cuda.threadIdx.x
        keys = local.array(4, np.int32)
        for i in range(4):
            keys[i] = d_in[t * 4 + i]
        warp.WarpMergeSort.Sort(keys=keys, compare_op="<", logical_warp_threads=8)
        total = warp.WarpReduce.Sum(input=keys[0], logical_warp_threads=32)
        s = warp.WarpScan.InclusiveSum(input=keys[1], logical_warp_threads=8)
        d_out[t] = total + s

    src = shim_source(k, 128, monkeypatch)
    assert "  coopgen_warp_storage_8_t coopgen_warp_storage_8[16];" in src
    assert "  coopgen_warp_storage_32_t coopgen_warp_storage_32[4];" in src
    assert src.count("coopgen_warp_storage_8[(threadIdx.x") == 2


def test_logical_warps_of_sizes_not_dividing_32_are_indexed_as_cub_forms_them(monkeypatch):
    """CUB forms logical warps inside each hardware warp (lane / size), so a size that does not
    divide 32 leaves a partial logical warp at the end of every hardware warp; the storage
    slices follow that layout, not linear thread / size. (CUB runs such sizes only as a block
    that is one logical warp: larger blocks are refused, see test_limits.py.)"""
    from coopgen import warp


    def k(d_in, d_out):
        t = cuda.threadIdx.x
        d_out[t] = warp.WarpReduce.Sum(input=d_in[t], logical_warp_threads=12)

    src = shim_source(k, 12, monkeypatch)
    assert "coopgen_warp_storage_12[3];" in src  # 3 logical warps fit a hardware warp
    tid = "(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"
    assert f"coopgen_warp_storage_12[({tid} / 32 * 3 + {tid} % 32 / 12)]" in src


def test_free_function_configurations_link_for_sm90():
    """The suite draws CUB's free functions too (direct loads/stores, cache-modified thread
    loads/stores, warp shuffles): a seeded sample of each links, resolving as drawn."""
    names = ("LoadDirect", "StoreDirect", "ThreadLoad", "ThreadStore", "ShuffleUp::",
             "ShuffleDown::", "ShuffleIndex::")
    configs = [c for name in names for c in space.draw(2, seed=34, block=(64,), only=name)]
    assert {c.cls for c in configs} >= {"ThreadLoad", "ThreadStore", "ShuffleUp", "ShuffleDown",
                                        "ShuffleIndex"}
    calls.RESOLVED.clear()
    results = [r for b in runner.batches_of(configs, 8) for r in runner.run_batch(b, compile_only=True)]
    bad = [r.line() for r in results if r.status != "compiled"]
    assert not bad, "\n".join(bad)
    assert {c.label() for c in configs} <= set(calls.RESOLVED)
