"""The examples/ kernels compile and link for sm_90 without a GPU, with no local memory, and
their host entry points refuse bad input with a clear ValueError."""
import sys
import warnings
from pathlib import Path

import numba
import numpy as np
import pytest

from coopgen import block_shape
from coopgen.linkcheck import link_cubin

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import mamba_selective_scan as msc  # noqa: E402
import rms_norm  # noqa: E402
import sampling  # noqa: E402
import single_pass_scan as sps  # noqa: E402


def _ty(dtype, ndim=1):
    return numba.typeof(np.empty((1,) * ndim, dtype))


def _link(kernel, sig, threads):
    with block_shape(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaExperimentalFeatureWarning)
        return link_cubin(kernel, sig)


@pytest.mark.parametrize("dtype,op", [(np.int32, sps.add), (np.float32, sps.maximum)],
                         ids=("int32-add", "float32-max"))
def test_single_pass_scan_links(dtype, op):
    sig = (_ty(dtype), _ty(dtype), _ty(np.int64), _ty(np.int64), numba.typeof(dtype(0)))
    res = _link(sps.make_kernel(dtype, op), sig, sps.THREADS)
    assert res.local_bytes == 0
    assert res.registers <= 64  # cub::DeviceScan's kernel for int32 uses 64 on sm_90


@pytest.mark.parametrize("has_z,softplus", [(True, True), (False, False)])
def test_mamba_selective_scan_links(has_z, softplus):
    f1, f2, f3 = _ty(np.float32), _ty(np.float32, 2), _ty(np.float32, 3)
    res = _link(msc.make_kernel(has_z, softplus), (f3, f3, f2, f3, f3, f1, f3, f1, f3, f3),
                msc.THREADS)
    assert res.local_bytes == 0
    assert res.smem <= 8976  # the nvcc-built twin in tools/bench/apps.py


def _rms_norm_kernel(dtype, hidden, threads=None, convert_once=False, striped=False,
                     blocked=False):
    """(kernel, signature, threads, full) as ``rms_norm`` launches it for this width."""
    from numba.cuda.typing.typeof import typeof  # knows ml_dtypes' bfloat16
    import ml_dtypes  # noqa: F401
    threads, items = rms_norm.plan(hidden, threads)
    full = threads * items == hidden
    word = np.uint64 if striped else np.uint32 if blocked else rms_norm.VECTOR_BITS
    arr = typeof(np.empty(1, word if full else np.dtype(dtype)))
    sig = (arr, arr, arr, numba.typeof(np.int32(0)), numba.typeof(np.float32(0)))
    kernel = rms_norm.make_kernel(dtype, items, full, convert_once, striped, blocked, threads)
    return kernel, sig, threads, full


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
@pytest.mark.parametrize("hidden,threads", [(4096, None), (8192, None), (1000, None),
                                            (8192, 128), (16384, None)])
def test_rms_norm_links(dtype, hidden, threads):
    kernel, sig, threads, _ = _rms_norm_kernel(dtype, hidden, threads)
    res = _link(kernel, sig, threads)
    assert res.local_bytes == 0


@pytest.mark.parametrize("dtype,items,threads", [("bfloat16", 16, 320), ("float16", 16, 1024),
                                                  ("float16", 8, 640)])
def test_rms_norm_rows_of_whole_vectors_past_the_end_keep_32_registers(dtype, items, threads):
    # rows of 5000 (320 threads x 16 items hold 5120) move as 16-byte vectors, those past the
    # row's end skipped: the launch bounds' 32 registers, no local memory
    vecs = numba.typeof(np.empty(1, rms_norm.VECTOR_BITS))  # 16-byte items
    sig = (vecs, vecs, vecs, numba.typeof(np.int32(0)), numba.typeof(np.float32(0)))
    res = _link(rms_norm.make_kernel(dtype, items, True, threads=threads, tail=True), sig,
                threads)
    assert res.local_bytes == 0 and res.registers <= 32


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
def test_rms_norm_four_vectors_bounded_to_three_blocks(dtype):
    # 11,008-wide rows at 352 threads x 32 items (a tail past the row): launch bounds for
    # three blocks an SM hold both types at float16's 56 registers (bfloat16 takes 75-77
    # without them, two blocks an SM), with no local memory
    vecs = numba.typeof(np.empty(1, rms_norm.VECTOR_BITS))  # 16-byte items
    sig = (vecs, vecs, vecs, numba.typeof(np.int32(0)), numba.typeof(np.float32(0)))
    kernel = rms_norm.make_kernel(dtype, 32, True, threads=352, tail=True)
    assert kernel.targetoptions["launch_bounds"] == (352, 3)
    res = _link(kernel, sig, 352)
    assert res.local_bytes == 0 and res.registers <= rms_norm.WIDE_REGISTERS


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
@pytest.mark.parametrize("hidden,threads,items,tail", [(13824, 288, 48, False),
                                                       (11008, 288, 40, True),
                                                       (16384, 256, 64, False)])
def test_rms_norm_late_weights_hold_one_row_in_registers(dtype, hidden, threads, items, tail):
    # late weights: only x is held through the reduction, so six to eight vectors a thread fit
    # three or more blocks an SM (each with its row in flight), with no local memory
    vecs = numba.typeof(np.empty(1, rms_norm.VECTOR_BITS))  # 16-byte items
    sig = (vecs, vecs, vecs, numba.typeof(np.int32(0)), numba.typeof(np.float32(0)))
    assert (threads * items == hidden) != tail
    kernel = rms_norm.make_kernel(dtype, items, True, threads=threads, tail=tail,
                                  late_weights=True)
    res = _link(kernel, sig, threads)
    assert res.local_bytes == 0 and res.spill_stores == 0
    assert 3 * threads * res.registers <= rms_norm.SM_REGISTERS
    with pytest.raises(ValueError, match="late weights"):
        rms_norm.make_kernel(dtype, items, True, striped=True, threads=threads,
                             late_weights=True)


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
@pytest.mark.parametrize("cluster,threads,items,tail", [(2, 704, 8, True), (8, 128, 16, False)],
                         ids=("11008-2", "16384-8"))
def test_rms_norm_cluster_kernel_adds_its_blocks_sums(dtype, cluster, threads, items, tail):
    # a row split over a cluster: the blocks' sums meet through distributed shared memory
    # after the cluster's barrier, and each block waits at a second one before it exits
    from coopgen.linkcheck import link_ptx
    vecs = numba.typeof(np.empty(1, rms_norm.VECTOR_BITS))  # 16-byte items
    sig = (vecs, vecs, vecs, numba.typeof(np.int32(0)), numba.typeof(np.float32(0)))
    kernel = rms_norm.make_kernel(dtype, items, True, threads=threads, tail=tail,
                                  cluster=cluster)
    res = _link(kernel, sig, threads)
    assert res.local_bytes == 0 and res.spill_stores == 0
    with block_shape(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaExperimentalFeatureWarning)
        ptx = link_ptx(kernel, sig)
    for op in ("barrier.cluster.arrive.release.aligned", "barrier.cluster.wait.acquire.aligned",
               "mapa.shared::cluster.u32", "ld.shared::cluster.f32",
               "barrier.cluster.arrive.relaxed.aligned", "barrier.cluster.wait.aligned"):
        assert op in ptx, op
    for bad in ({"striped": True}, {"cluster": 9}, {"reduce": "warps_shared"}):
        with pytest.raises(ValueError, match="a cluster of"):
            rms_norm.make_kernel(dtype, items, True, threads=threads,
                                 **dict({"cluster": cluster}, **bad))


@pytest.mark.parametrize("hidden", [4096, 1000])
def test_rms_norm_converting_once_keeps_values_in_registers(hidden):
    # Keeping the float32 values is the bench sweep's variant: registers, never local memory.
    # (How many registers each variant takes is ptxas's choice and differs between CUDA
    # releases, so only the absence of local memory is asserted.)
    plain = _link(*_rms_norm_kernel("float16", hidden)[:2], rms_norm.plan(hidden)[0])
    kernel, sig, threads, _ = _rms_norm_kernel("float16", hidden, convert_once=True)
    once = _link(kernel, sig, threads)
    assert plain.local_bytes == 0 and once.local_bytes == 0
    assert 0 < once.registers <= 65536 // threads and once.spill_stores == 0


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
@pytest.mark.parametrize("hidden", [4096, 8192])
@pytest.mark.parametrize("blocked", (False, True), ids=("sliced", "blocked"))
def test_rms_norm_moves_16_bytes_per_access(dtype, hidden, blocked):
    # Full rows move 16 bytes an access: each load of x and w and each store of y (CUB's
    # vectors of 2-byte items would be 8: ld.global.v4.u16). Sliced rows come as 16-byte items
    # and nothing else: no 4-byte accesses beside them. Blocked rows come as 32-bit words,
    # four to a vector, where the scalar u32 accesses are CUB's fallback for a misaligned row,
    # which rms_norm never passes.
    import re
    from coopgen.linkcheck import link_ptx
    kernel, sig, threads, full = _rms_norm_kernel(dtype, hidden, blocked=blocked)
    assert full and _link(kernel, sig, threads).local_bytes == 0
    with block_shape(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaExperimentalFeatureWarning)
        ptx = link_ptx(kernel, sig)
    body = ptx[ptx.index(".entry"):]
    body = body[:body.index("\n}")]
    vectors = hidden // threads // 8  # per thread, of x, of w and of y
    # 16 bytes: two 64-bit or four 32-bit lanes (the words ``PAIR_SOURCE`` converts)
    wide = r"v4\.u32" if blocked else r"(?:v2\.[ufb]64|v4\.[ub]32)"
    assert len(re.findall(r"ld\.global(?:\.nc)?\." + wide, body)) == 2 * vectors
    assert len(re.findall(r"st\.global\." + wide, body)) == vectors
    assert not re.search(r"(?:ld|st)\.global(?:\.nc)?\.v[24]\.[ub]16", body)
    if not blocked:
        assert len(re.findall(r"(?:ld|st)\.global", body)) == 3 * vectors


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
@pytest.mark.parametrize("hidden", [2048, 5120, 7168, 8192])
def test_rms_norm_full_rows_fit_a_whole_sm_with_one_barrier(dtype, hidden):
    # The launch bounds ask for SM_THREADS resident threads, so 65,536 / 2,048 = 32 registers
    # (ptxas takes 40 without them) and nothing in local memory; the row's sum reaches every
    # thread after a single barrier (block.sum and a shared rstd took three).
    import re
    from coopgen.linkcheck import link_ptx
    kernel, sig, threads, full = _rms_norm_kernel(dtype, hidden)
    res = _link(kernel, sig, threads)
    blocks = rms_norm.SM_THREADS // threads
    assert full and res.registers * threads * blocks <= 65536 and res.local_bytes == 0
    with block_shape(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaExperimentalFeatureWarning)
        ptx = link_ptx(kernel, sig)
    body = ptx[ptx.index(".entry"):]
    assert len(re.findall(r"\bbar(?:rier)?\.sync", body)) == 1


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
@pytest.mark.parametrize("hidden,striped", [(4096, False), (8192, False), (4096, True)])
def test_rms_norm_converts_elements_two_a_word(dtype, hidden, striped):
    # PAIR_SOURCE, linked and inlined: every two outputs packed by one cvt of a pair (sm_80 and
    # later), and no 64-bit shift left to pick an element out of an item's 64-bit half
    import re
    from coopgen.linkcheck import link_ptx
    kernel, sig, threads, full = _rms_norm_kernel(dtype, hidden, striped=striped)
    with block_shape(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaExperimentalFeatureWarning)
        ptx = link_ptx(kernel, sig)
    body = ptx[ptx.index(".entry"):]
    pair = "f16x2" if dtype == "float16" else "bf16x2"
    assert full and len(re.findall(rf"cvt\.rn\.{pair}\.f32", body)) == hidden // threads // 2
    assert not re.search(r"\bshr\.[ub]64", body) and "call" not in body


@pytest.mark.parametrize("dtype", rms_norm.DTYPES)
def test_rms_norm_striped_moves_8_bytes_coalesced(dtype):
    # The sweep's striped variant: x and w as uint64 loads (4 of x, 4 of w a thread at 16
    # items), y as 4 uint64 stores, no local memory
    import re
    from coopgen.linkcheck import link_ptx
    kernel, sig, threads, full = _rms_norm_kernel(dtype, 4096, striped=True)
    assert full and _link(kernel, sig, threads).local_bytes == 0
    with block_shape(threads), warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaExperimentalFeatureWarning)
        ptx = link_ptx(kernel, sig)
    body = ptx[ptx.index(".entry"):]
    body = body[:body.index("\n}")]
    # 8 bytes: one 64-bit or two 32-bit lanes
    assert len(re.findall(r"ld\.global(?:\.nc)?\.(?:u64|v2\.[ub]32)", body)) == 8
    assert len(re.findall(r"st\.global\.(?:u64|v2\.[ub]32)", body)) == 4


def test_rms_norm_plan():
    assert rms_norm.plan(4096) == (256, 16) and rms_norm.plan(8192) == (512, 16)
    assert rms_norm.plan(12288) == (768, 16) and rms_norm.plan(1000) == (64, 16)
    assert rms_norm.plan(65536) == (1024, 64) and rms_norm.plan(32) == (32, 16)
    assert rms_norm.plan(8192, threads=512) == (512, 16)
    with pytest.raises(ValueError, match="rms_norm: hidden=0 must be positive"):
        rms_norm.plan(0)
    with pytest.raises(ValueError, match="rms_norm: threads=100 must be a multiple of 32 from "
                                         "32 to 1024"):
        rms_norm.plan(4096, threads=100)


def test_rms_norm_rejects_host_arrays():
    x = np.zeros((2, 64), np.float16)
    with pytest.raises(ValueError, match="rms_norm: x must be a device array .*not ndarray"):
        rms_norm.rms_norm(x, x[0])


def test_rms_norm_tolerance_counts_roundings():
    rel1, tiny1 = rms_norm.tolerance("bfloat16", 4096)
    rel2, tiny2 = rms_norm.tolerance("bfloat16", 4096, roundings=2)
    assert rel2 - rel1 == 2.0**-8 and tiny2 == 2 * tiny1
    assert rms_norm.worst_error(np.array([1.0 + rel1]), np.array([1.0]), "bfloat16",
                                4096) == pytest.approx(rel1 / (rel1 + tiny1))


def test_single_pass_scan_rejects_wide_types():
    with pytest.raises(ValueError, match="single_pass_scan: dtype=float64 is not supported"):
        sps.make_kernel(np.float64)


def test_mamba_rejects_mismatched_shapes():
    rng = np.random.default_rng()
    inputs = msc.random_inputs(rng, 2, 4, 8, 64)
    inputs["B"] = inputs["B"][:, :, :32]
    with pytest.raises(ValueError, match=r"selective_scan_fwd: B has shape \(2, 8, 32\).*"
                                         r"must be \(2, 8, 64\)"):
        msc.selective_scan_fwd(**inputs)
    inputs = msc.random_inputs(rng, 2, 4, 8, 64)
    with pytest.raises(ValueError, match="selective_scan_fwd: out must be a device array, not "
                                         "ndarray"):
        msc.selective_scan_fwd(**inputs, out=np.empty((2, 4, 64), np.float32))


def test_references_agree_with_a_direct_loop():
    # The numpy references themselves, against the definitions written as plain loops.
    rng = np.random.default_rng()
    x = rng.integers(-100, 100, 50, dtype=np.int32)
    want = [0]
    for v in x[:-1]:
        want.append(want[-1] + v)
    np.testing.assert_array_equal(sps.reference(x), want)
    inp = msc.random_inputs(rng, 1, 2, 3, 20)
    y, last = msc.reference(**inp, delta_softplus=True)
    inp = {k: v.astype(np.float64) for k, v in inp.items()}
    dt = np.log1p(np.exp(inp["delta"] + inp["delta_bias"][:, None]))
    for d in range(2):
        h = np.zeros(3)
        for t in range(20):
            h = np.exp(dt[0, d, t] * inp["A"][d]) * h + dt[0, d, t] * inp["B"][0, :, t] * \
                inp["u"][0, d, t]
            out = h @ inp["C"][0, :, t] + inp["D"][d] * inp["u"][0, d, t]
            z = inp["z"][0, d, t]
            np.testing.assert_allclose(y[0, d, t], out * z / (1 + np.exp(-z)), rtol=1e-9)
        np.testing.assert_allclose(last[0, d], h, rtol=1e-9)


@pytest.mark.parametrize("arch", [(8, 0), (9, 0)], ids=["sm_80", "sm_90"])
def test_sampling_kernels_link(arch):
    f32, i32, u64 = _ty(np.float32), _ty(np.int32), numba.typeof(np.uint64(0))
    n = numba.typeof(np.int32(0))
    with block_shape(sampling.THREADS), warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaExperimentalFeatureWarning)
        res = link_cubin(sampling.make_kernel(sampling.THREADS), (f32, n, i32, f32, u64, u64, i32),
                         arch=arch)
        soft = link_cubin(sampling.make_softmax_kernel(sampling.THREADS),
                          (f32, n, numba.typeof(np.float32(0)), f32), arch=arch)
    assert res.local_bytes == 0 and res.spill_stores == 0
    assert soft.local_bytes == 0


def test_sampling_reference_is_the_documented_rule():
    """admissible(): fewer than k tokens, and less than p of the mass, strictly above; ties
    at the edge are in (brute force over random rows with repeated values)."""
    rng = np.random.default_rng()
    for _ in range(20):
        vocab = int(rng.integers(2, 40))
        row = rng.choice([0.0, 0.05, 0.1, 0.2, 0.3], vocab)
        row = row / row.sum() if row.sum() else np.full(vocab, 1 / vocab)
        k, p = int(rng.integers(1, vocab + 2)), float(rng.uniform(0.05, 1.0))
        got = sampling.admissible(row[None], k, p)[0]
        for i in range(vocab):
            above = row > row[i]
            want = row[i] > 0 and above.sum() < k and (p >= 1 or row[above].sum() < p)
            assert got[i] == want, (row, k, p, i)


@pytest.mark.parametrize("dtype,hidden,threads", [("float16", 4096, 256),
                                                  ("bfloat16", 32000, 1024),
                                                  ("float32", 1000, 128)])
def test_softmax_links_in_registers(dtype, hidden, threads):
    from numba.cuda.typing.typeof import typeof  # knows ml_dtypes' bfloat16
    import ml_dtypes  # noqa: F401
    import softmax
    arr = typeof(np.empty(1, np.dtype(dtype)))
    kernel = softmax.make_kernel(dtype, softmax.items_for(hidden, threads))
    assert _link(kernel, (arr, arr, numba.typeof(np.int32(0))), threads).local_bytes == 0
    with pytest.raises(ValueError, match="rows of 40000 at 1024 threads need 40 elements"):
        softmax.items_for(40000, 1024)


@pytest.mark.parametrize("hinted", (False, True))
def test_streaming_cache_hints_links(hinted):
    """The streaming example's kernel links; the hinted one streams with ld.cs/st.cs."""
    import re

    import streaming_cache_hints as sch
    from coopgen.linkcheck import link_ptx

    sig = (_ty(np.float32), _ty(np.float32), _ty(np.float32))
    kernel = sch.make_kernel(hinted)
    res = _link(kernel, sig, sch.THREADS)
    assert res.local_bytes == 0
    with block_shape(sch.THREADS):
        ptx = link_ptx(kernel, sig)
    streams = re.search(r"\bld(\.global)?\.cs\.", ptx) and re.search(r"\bst(\.global)?\.cs\.", ptx)
    assert bool(streams) == hinted


@pytest.mark.parametrize("vectorized", (False, True))
def test_blocked_vectorized_links(vectorized):
    """The blocked-loads example links; CUB's vectorized direct loads and stores move 16-byte
    vectors (two of each for 8 float32 a thread), numba's element-by-element ones none."""
    import re

    import blocked_vectorized as bv
    from coopgen.linkcheck import link_ptx

    sig = (_ty(np.float32), _ty(np.float32))
    kernel = bv.make_kernel(vectorized)
    res = _link(kernel, sig, bv.THREADS)
    assert res.local_bytes == 0
    with block_shape(bv.THREADS):
        ptx = link_ptx(kernel, sig)
    loads = len(re.findall(r"\bld\.global(\.\w+)*\.v4\.", ptx))
    stores = len(re.findall(r"\bst\.global(\.\w+)*\.v4\.", ptx))
    assert (loads, stores) == ((2, 2) if vectorized else (0, 0))
