"""Runtime behaviour that needs no GPU: two-phase sizes, two-phase calls, compile-time errors."""
import re

import numpy as np
import pytest
from numba import cuda
from numba.core.errors import TypingError
from numba.cuda.core.errors import TypingError as CudaTypingError
from numba.cuda import types

from coopgen import block, local, shared, warp
from coopgen.codegen import nvrtc
from coopgen import block_shape as coopgen_block_shape
from coopgen.linkcheck import link_cubin, link_ptx

I32 = types.int32[::1]


def compile_only(kernel, sig=(I32, I32)):
    return cuda.compile_all(kernel, sig, device=False, abi="numba", cc=(9, 0), output="ltoir")


@pytest.mark.parametrize("obj, expected", [
    (lambda: block.BlockReduce(np.int32, threads_per_block=128), (24, 4)),
    (lambda: block.BlockScan(np.int32, threads_per_block=128), (672, 16)),
    (lambda: block.BlockRadixSort(np.int32, threads_per_block=128, items_per_thread=4), (4640, 16)),
    (lambda: block.BlockRadixSort(np.uint32, threads_per_block=256, items_per_thread=16),
     (16896, 16)),
    (lambda: block.BlockLoad(np.int32, threads_per_block=128, items_per_thread=4,
                             algorithm="warp_transpose"), (2048, 16)),
    (lambda: block.sum(np.int32, 128, items_per_thread=4), (24, 4)),
], ids=["reduce", "scan", "radix_sort", "radix_sort_u32_256x16", "load_warp_transpose", "sum"])
def test_two_phase_temp_storage_matches_nvcc(obj, expected):
    o = obj()
    assert (o.temp_storage_bytes, o.temp_storage_alignment) == expected


sorter = block.BlockRadixSort(np.int32, threads_per_block=128, items_per_thread=4)
summer = block.sum(np.int32, 128, items_per_thread=4)


def test_two_phase_objects_link_with_one_nvrtc_compile(monkeypatch, tmp_path):
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(tmp_path))

    def k(d_in, d_out):
        items = local.array(4, np.int32)
        for i in range(4):
            items[i] = d_in[cuda.threadIdx.x * 4 + i]
        sorter.Sort(items)
        total = summer(items)
        d_out[cuda.threadIdx.x] = items[0] + total

    before = nvrtc.compile_count()
    res = link_cubin(k, (I32, I32))
    assert nvrtc.compile_count() - before == 1
    assert res.local_bytes == 0 and res.spill_stores == 0
    # One union for all block primitives: the sort's storage, not the sum of both.
    assert 4640 <= res.smem < 4640 + 24 + 64


def test_disk_cache_makes_the_second_compile_free(monkeypatch, tmp_path):
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(tmp_path))

    def k(d_in, d_out):
        d_out[0] = block.sum(d_in[cuda.threadIdx.x], threads_per_block=64)

    link_cubin(k, (I32, I32))
    before = nvrtc.compile_count()
    link_cubin(k, (I32, I32))
    assert nvrtc.compile_count() == before


def _error(kernel, sig=(I32, I32)):
    with pytest.raises((TypingError, CudaTypingError)) as e:
        compile_only(kernel, sig)
    return str(e.value)


def test_error_items_per_thread_disagrees_with_array():
    def k(d_in, d_out):
        items = local.array(16, np.int32)
        block.load(d_in, items, items_per_thread=8, threads_per_block=128)
    msg = _error(k)
    assert "block.load: items_per_thread=8 disagrees with array 'dst_items' (16 items)" in msg


def test_error_dtype_mismatch_between_arrays():
    def k(d_in, d_out):
        a = local.array(4, np.int32)
        b = local.array(4, np.float32)
        block.exclusive_sum(a, b, threads_per_block=128)
    msg = _error(k)
    assert "block.exclusive_sum: parameter 'output' has dtype float32, but T is already int32" in msg


def test_error_unsupported_dtype():
    def k(d_in, d_out):
        block.sum(d_in, threads_per_block=128)
    msg = _error(k, (types.NPDatetime("ns")[::1], I32))
    assert "block.sum" in msg and "unsupported dtype datetime64[ns]" in msg


def test_error_too_many_threads():
    def k(d_in, d_out):
        block.sum(d_in[0], threads_per_block=(64, 32))
    assert "threads_per_block=(64, 32, 1) has 2048 threads; CUDA allows at most 1024" in _error(k)


def test_error_logical_warp_size():
    def k(d_in, d_out):
        d_out[0] = warp.sum(d_in[0], logical_warp_threads=64)
    assert ("warp.sum: logical_warp_threads=64 is not allowed; it takes an integer from 1 to 32"
            in _error(k))


def test_error_unknown_algorithm():
    def k(d_in, d_out):
        items = local.array(4, np.int32)
        block.load(d_in, items, algorithm="bogus", threads_per_block=128)
    msg = _error(k)
    assert "block.load: unknown algorithm='bogus'; allowed: 'direct', 'striped'" in msg
    assert "'warp_transpose'" in msg


def test_error_missing_required_argument():
    def k(d_in, d_out):
        items = local.array(4, np.int32)
        d_out[0] = block.reduce(items, threads_per_block=128)
    assert "block.reduce: missing required argument 'reduction_op'" in _error(k)


@cuda.jit(device=True)
def unary(a):
    return a


def test_error_operator_arity():
    def k(d_in, d_out):
        d_out[0] = block.reduce(d_in[0], binary_op=unary, threads_per_block=128)
    assert "block.reduce: reduction_op=unary takes 1 argument(s); a ReductionOp takes 2" in _error(k)


def test_error_unknown_builtin_operator_and_selector():
    def k(d_in, d_out):
        d_out[0] = block.reduce(d_in[0], binary_op="avg", threads_per_block=128)
    assert "unknown reduction_op='avg'; built-ins: '+'" in _error(k)

    def k2(d_in, d_out):
        a = local.array(4, np.int32)
        block.exchange(a, a, block_exchange_type="sideways", threads_per_block=128)
    assert "block.exchange: unknown block_exchange_type='sideways'; allowed: 'StripedToBlocked'" in _error(k2)


def test_error_non_constant_template_keyword():
    def k(d_in, d_out):
        d_out[0] = block.sum(d_in[0], threads_per_block=d_in[1])
    assert "block.sum: threads_per_block= must be a compile-time constant" in _error(k)


def test_error_temp_storage_too_small():
    def k(d_in, d_out):
        ts = shared.array(16, np.uint8)
        d_out[0] = block.sum(d_in[0], temp_storage=ts, threads_per_block=128)
    need = block.BlockReduce(np.int32, threads_per_block=128).temp_storage_bytes
    assert (f"block.sum: temp_storage=shared.array(uint8, (16,)) holds 16 bytes, but the "
            f"TempStorage of cub::BlockReduce<int, 128") in _error(k)
    assert f"needs {need} bytes" in _error(k)


def test_error_logical_warp_size_not_power_of_two():
    def k(d_in, d_out):
        items = local.array(4, np.int32)
        warp.load(d_in, items, logical_warp_threads=24, threads_per_block=96)
    assert ("warp.load: logical_warp_threads=24 is not allowed; WarpLoad needs a power of two"
            in _error(k))


def test_no_simd_assert_path_for_int_and_float_reductions():
    """CCCL 3.0.1 picks a SIMD ThreadReduce ending in assert(false) for int/float min/max/plus
    unless cuda_fp16.h/cuda_bf16.h were included first; every coopgen compile includes them."""
    src = """#include <cub/block/block_reduce.cuh>
extern "C" __global__ void k(const int* in, int* out) {
  using P = cub::BlockReduce<int, 128>;
  __shared__ typename P::TempStorage ts;
  int items[4];
  for (int i = 0; i < 4; ++i) items[i] = in[threadIdx.x * 4 + i];
  out[threadIdx.x] = P(ts).Reduce(items, ::cuda::maximum<>{});
}
"""
    assert "__assertfail" not in nvrtc.compile_ptx(src)


def test_parent_object_with_implicit_storage_links():
    def k(d_in, d_out):
        x = d_in[cuda.threadIdx.x]
        scan = warp.WarpScan(dtype=np.int32, threads_per_block=64)
        d_out[cuda.threadIdx.x] = scan.ExclusiveSum(x) + scan.InclusiveSum(x)

    res = link_cubin(k, (I32, I32))
    assert res.local_bytes == 0


def test_methods_receive_the_constructed_object():
    from coopgen.linkcheck import link_ptx

    def k(d_in, d_out):
        scan = block.BlockScan(dtype=np.int32, threads_per_block=64)
        d_out[cuda.threadIdx.x] = scan.InclusiveSum(d_in[cuda.threadIdx.x])

    assert "trap;" not in link_ptx(k, (I32, I32))


def test_object_factories_link_without_traps():
    from coopgen.linkcheck import link_ptx

    def hist(d_in, d_out):
        items = local.array(4, np.int32)
        bins = shared.array(16, np.int32)
        h = block.histogram(items, bins)
        h.init()
        h.composite(items)
        d_out[0] = bins[0]

    def rle(d_in, d_out):
        values = local.array(2, np.int32)
        lengths = local.array(2, np.int32)
        total = local.array(1, np.uint32)
        rld = block.run_length(values, lengths, decoded_items_per_thread=4, total_decoded_size=total)
        decoded = local.array(4, np.int32)
        rld.decode(decoded, 0)
        d_out[0] = decoded[0]

    with coopgen_block_shape(64):
        for k in (hist, rle):
            assert "trap;" not in link_ptx(k, (I32, I32))


def test_error_unknown_object_method():
    def k(d_in, d_out):
        items = local.array(4, np.int32)
        bins = shared.array(16, np.int32)
        h = block.histogram(items, bins, threads_per_block=64)
        h.reset()
    assert "BlockHistogram object has no method 'reset'; methods: init, histogram, composite" \
        in _error(k)


def test_numba_shared_bytes_are_aligned_as_temp_storage():
    """numba's cuda.shared.array(n, uint8) is 1-byte aligned by itself; as temp storage it is
    given the 16 bytes any CUB TempStorage needs."""
    def k(d_in, d_out):
        ts = cuda.shared.array(4096, np.uint8)
        d_out[0] = block.sum(d_in[0], temp_storage=ts, threads_per_block=128)
    ptx = link_ptx(k, (I32, I32))
    assert re.search(r"\.shared \.align 16 \.b8 _cudapy_smem_\d+\[4096\]", ptx), ptx


def test_error_histogram_bins_disagree():
    def k(d_in, d_out):
        items = local.array(4, np.int32)
        bins = shared.array(16, np.int32)
        block.BlockHistogram.Composite(items, bins, bins=32, threads_per_block=128)
    assert "bins=32 disagrees with array 'histogram' (16 items)" in _error(k)
