"""The numba-cuda-mlir backend over coopgen's core (tests/mlir/kernels.py): each kernel linked
for sm_90 on a CPU, and on a GPU checked against numpy for several dtypes on fresh inputs."""
import numpy as np
import pytest

pytest.importorskip("numba_cuda_mlir")

from coopgen import linkcheck  # noqa: E402
from coopgen.enums import BlockLoadAlgorithm, BlockStoreAlgorithm  # noqa: E402
from kernels import CASES, assert_matches, inputs  # noqa: E402

PARAMS = [(name, dt) for name, case in CASES.items() for dt in case[2]]
IDS = [f"{name}-{np.dtype(dt).name}" for name, dt in PARAMS]


@pytest.mark.parametrize("name", CASES)
def test_links_for_sm90_on_a_cpu(name):
    kernel, threads, dtypes, _, _ = CASES[name]
    x, outs, _ = inputs(name, dtypes[0], np.random.default_rng())
    r = linkcheck.link_as_launched(kernel, threads, x, *outs, arch=(9, 0))
    # 1024 threads x 16 int64 keys get 64 registers each: that one spills (as on numba-cuda)
    assert r.cubin and r.registers > 0 and (r.spill_stores == 0 or threads == 1024)


@pytest.mark.gpu
@pytest.mark.parametrize("name,dtype", PARAMS, ids=IDS)
def test_gives_numpys_answer_on_a_gpu(name, dtype):
    from numba_cuda_mlir import cuda
    if not cuda.is_available():
        pytest.skip("no CUDA GPU")
    kernel, threads, _, _, _ = CASES[name]
    x, outs, want = inputs(name, dtype, np.random.default_rng())
    d_outs = [cuda.to_device(o) for o in outs]
    kernel[3, threads](cuda.to_device(x), *d_outs)
    assert_matches(d_outs, want, dtype)


@pytest.mark.gpu
def test_both_compilers_in_one_process():
    """A numba-cuda kernel and a numba-cuda-mlir kernel calling the same primitive, launched
    one after the other: each compiled by its own backend."""
    numba_cuda = pytest.importorskip("numba.cuda")
    from numba_cuda_mlir import cuda as mlir_cuda
    if not numba_cuda.is_available():
        pytest.skip("no CUDA GPU")
    from coopgen import block, local

    def compiled_by(cuda):
        def body(d_in, d_out):
            items = local.array(4, d_in.dtype)
            base = cuda.blockIdx.x * 128 * 4
            block.load(d_in[base:], items)
            total = block.sum(items)
            if cuda.threadIdx.x == 0:
                d_out[cuda.blockIdx.x] = total
        return cuda.jit(body)

    x = np.random.default_rng().integers(-100, 100, 2 * 128 * 4).astype(np.int32)
    for cuda in (numba_cuda, mlir_cuda):
        kernel = compiled_by(cuda)
        d_out = cuda.to_device(np.zeros(2, np.int32))
        kernel[2, 128](cuda.to_device(x), d_out)
        np.testing.assert_array_equal(d_out.copy_to_host(), x.reshape(2, -1).sum(axis=1))


def test_storage_past_48kb_is_dynamic_and_reported_to_the_launch():
    """CUB's storage of a 1024-thread, 16-key int64 radix sort (132 KB) lives in dynamic shared
    memory; the compile tells numba-cuda-mlir's launch how much to add."""
    from coopgen.codegen.placement import dynamic_requirement
    kernel, threads, dtypes, _, _ = CASES["large_dynamic_shared"]
    x, outs, _ = inputs("large_dynamic_shared", dtypes[0], np.random.default_rng())
    r = linkcheck.link_as_launched(kernel, threads, x, *outs, arch=(9, 0))
    need = dynamic_requirement(r.cubin)
    assert need is not None and need[0] > 128 * 1024 and r.smem < 48 * 1024


def _example(name: str):
    """examples/<name>.py loaded with numba-cuda-mlir as its compiler (examples/_compiler.py
    reads COOPGEN_COMPILER; here its module is stood in for, so that numba-cuda's copy of the
    example, which other tests import, stays)."""
    import importlib
    import importlib.util
    import sys
    import types as pytypes
    from pathlib import Path
    path = Path(__file__).resolve().parents[2] / "examples" / f"{name}.py"
    chosen = pytypes.ModuleType("_compiler")
    chosen.cuda = importlib.import_module("numba_cuda_mlir.cuda")
    chosen.libdevice = importlib.import_module("numba_cuda_mlir.cuda.libdevice")
    saved = sys.modules.get("_compiler")
    sys.modules["_compiler"] = chosen
    try:
        spec = importlib.util.spec_from_file_location(f"{name}_mlir", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        if saved is None:
            del sys.modules["_compiler"]
        else:
            sys.modules["_compiler"] = saved


def _ty(dtype, ndim=1):
    from numba_cuda_mlir.numba_cuda.typing.typeof import typeof
    return typeof(np.empty((1,) * ndim, dtype))


@pytest.mark.parametrize("dtype", (np.int32, np.float32))
def test_single_pass_scan_example_links(dtype):
    sps = _example("single_pass_scan")
    op = sps.add if dtype == np.int32 else sps.maximum
    sig = (_ty(dtype), _ty(dtype), _ty(np.int64), _ty(np.int64), _ty(dtype, 0).dtype)
    with linkcheck.launch_config_on_cpu(sps.make_kernel(dtype, op), sps.THREADS):
        r = linkcheck.link_cubin(sps.make_kernel(dtype, op), sig)
    assert r.local_bytes == 0 and r.registers <= 64


def test_mamba_selective_scan_example_links():
    msc = _example("mamba_selective_scan")
    kernel = msc.make_kernel(True, True)
    sig = tuple(_ty(np.float32, n) for n in (3, 3, 2, 3, 3, 1, 3, 1, 3, 3))
    with linkcheck.launch_config_on_cpu(kernel, msc.THREADS):
        r = linkcheck.link_cubin(kernel, sig)
    assert r.local_bytes == 0 and r.smem <= 8976


def test_a_device_function_not_inlined_needs_threads_per_block():
    from numba_cuda_mlir import cuda

    from numba_cuda_mlir.numba_cuda.core.errors import TypingError

    from coopgen import block, local

    @cuda.jit(device=True, inline="never")
    def tile_sum(d_in, d_out):
        items = local.array(4, d_in.dtype)
        block.load(d_in, items)
        d_out[0] = block.sum(items)

    @cuda.jit
    def k(d_in, d_out):
        tile_sum(d_in, d_out)

    x = np.zeros(512, np.int32)
    with pytest.raises(TypingError, match="block.load: called in the device function .*"
                                          "without threads_per_block="):
        linkcheck.link_as_launched(k, 128, x, x, arch=(9, 0))


def test_a_method_called_with_a_literal_number_links():
    """``rld.RunLengthDecode(decoded, 0)``: numba-cuda-mlir types a method's arguments as
    literals; the 0 goes to the shim as its constant."""
    from numba_cuda_mlir import cuda

    from coopgen import block, local

    @cuda.jit
    def k(d_values, d_lengths, d_out):
        t = cuda.threadIdx.x
        values = local.array(2, np.int32)
        lengths = local.array(2, np.int32)
        for i in range(2):
            values[i] = d_values[t * 2 + i]
            lengths[i] = d_lengths[t * 2 + i]
        total = local.array(1, np.uint32)
        rld = block.BlockRunLengthDecode(values, lengths, total, decoded_items_per_thread=4)
        decoded = local.array(4, np.int32)
        rld.RunLengthDecode(decoded, 0)
        for i in range(4):
            d_out[t * 4 + i] = decoded[i]

    x = np.zeros(512, np.int32)
    assert linkcheck.link_as_launched(k, 128, x, x, x, arch=(9, 0)).cubin


def test_bfloat16_items_link():
    """numba-cuda-mlir names bfloat16 by its C type (__nv_bfloat16); coopgen's tables by
    bfloat16."""
    ml_dtypes = pytest.importorskip("ml_dtypes")
    from numba_cuda_mlir import cuda

    from coopgen import block, local

    @cuda.jit
    def k(d_in, d_out):
        items = local.array(4, d_in.dtype)
        block.load(d_in, items)
        total = block.sum(items)
        if cuda.threadIdx.x == 0:
            d_out[0] = total

    x = np.zeros(512, ml_dtypes.bfloat16)
    assert linkcheck.link_as_launched(k, 128, x, x, arch=(9, 0)).cubin


def test_vector_items_in_a_shared_array_link():
    """``coop.block.make_load(cuda.float32x2, ...)`` with both backends installed (numba-cuda's
    dtype reader fails on numba-cuda-mlir's vector types), over a shared array of them (its
    bytes: lanes x lane)."""
    from numba_cuda_mlir import cuda

    from coopgen import coop, local, shared

    vec = cuda.float32x2
    load = coop.block.make_load(vec, 64, 2, "striped")

    @cuda.jit
    def k(d_in, d_out):
        tile = shared.array(128, vec)
        items = local.array(2, vec)
        t = cuda.threadIdx.x
        for j in range(2):
            tile[t + j * 64] = vec(d_in[2 * (t + j * 64)], d_in[2 * (t + j * 64) + 1])
        cuda.syncthreads()
        load(tile, items)
        for j in range(2):
            d_out[2 * (t * 2 + j)] = items[j].x
            d_out[2 * (t * 2 + j) + 1] = items[j].y

    x = np.zeros(256, np.float32)
    assert linkcheck.link_as_launched(k, 64, x, x, arch=(9, 0)).cubin


STORE_ALGORITHM = BlockStoreAlgorithm.WARP_TRANSPOSE  # a global member, as kernels read it


def test_enum_members_are_read_as_their_names():
    """``BlockLoadAlgorithm.TRANSPOSE`` and friends: numba-cuda-mlir types a member as a
    run-time int; coopgen's planner passes its name, so the call picks what it names."""
    from numba_cuda_mlir import cuda

    from coopgen import block, local
    from coopgen.mlir import typing

    @cuda.jit
    def k(d_in, d_out):
        items = local.array(4, d_in.dtype)
        block.load(d_in, items, 4, BlockLoadAlgorithm.TRANSPOSE)
        block.exchange(items, None, 4,
                       block_exchange_type=block.BlockExchangeType.BlockedToStriped)
        block.store(d_out, items, algorithm=STORE_ALGORITHM)

    x = np.zeros(512, np.int32)
    typing.RESOLVED.clear()
    assert linkcheck.link_as_launched(k, 128, x, x, arch=(9, 0)).cubin
    assert any(r.startswith("BlockExchange::BlockedToStriped(") for r in typing.RESOLVED)


def test_compiled_by_default_to_ltoir_and_reporting_dynamic_storage_before_the_launch():
    """cuda.jit's default (lto unset): the shim bundle makes numba-cuda-mlir compile the kernel
    to LTO-IR and link everything in one LTO step, as coopgen's kernels need (inlined shims, one
    register budget); linked as PTX beside them, a 512-thread radix sort does not link. Storage
    past 48 KB is reported while compiling (the launch reads it), from NVRTC's name for the
    need symbol: the LTO-IR may be compressed; the linked cubin agrees."""
    from numba_cuda_mlir.compiler import _compile_and_optimize
    from coopgen.codegen.placement import dynamic_requirement, launch_bytes
    from coopgen.mlir import linkcheck as mlir_linkcheck
    from numba_cuda_mlir.numba_cuda.typing.typeof import Purpose, typeof
    kernel, threads, dtypes, _, _ = CASES["large_dynamic_shared"]
    x, outs, _ = inputs("large_dynamic_shared", dtypes[0], np.random.default_rng())
    sig = tuple(typeof(a, Purpose.argument) for a in (x, *outs))
    with linkcheck.launch_config_on_cpu(kernel, threads, (x, *outs)), \
            mlir_linkcheck._device_cc((9, 0)):
        cres = _compile_and_optimize(kernel.py_func, sig, {"chip": "sm_90"})
    assert cres.metadata["link_plan"].compile_new_inputs_as_ltoir
    need = dynamic_requirement(cres.metadata["cubin"])
    assert need is not None and need[0] > 128 * 1024
    assert cres.metadata["required_dynamic_shared_memory"] == launch_bytes(0, need)


def test_an_unsigned_constant_past_the_signed_range_is_passed_as_its_bits():
    """An exclusive scan with '&' over uint64 starts from 2**64 - 1, which the call passes as a
    constant: MLIR takes integer attributes as signed (it raised std::bad_cast)."""
    from numba_cuda_mlir import cuda
    from coopgen import block, local

    @cuda.jit
    def and_scan(d_in, d_out):
        items = local.array(11, np.uint64)
        base = (cuda.blockIdx.x * 32 + cuda.threadIdx.x) * 11
        for i in range(11):
            items[i] = d_in[base + i]
        block.scan(items, items, scan_op="&", mode="exclusive", algorithm="raking")
        for i in range(11):
            d_out[base + i] = items[i]

    x = np.random.default_rng().integers(0, 2**63, 32 * 11, dtype=np.uint64)
    assert linkcheck.link_as_launched(and_scan, 32, x, x.copy()).cubin


def test_a_record_result_gets_room_for_its_bytes():
    """A record is a pointer to its bytes in numba-cuda-mlir: the slot a primitive writes a
    record result into must hold the record (8 bytes here), not a pointer to one (the value
    read back was then the record's bytes taken as an address)."""
    from numba_cuda_mlir import cuda
    from numba_cuda_mlir.compiler import _compile_and_optimize
    from numba_cuda_mlir.numba_cuda.typing.typeof import Purpose, typeof
    from coopgen import block, local
    from coopgen.mlir import linkcheck as mlir_linkcheck

    rec = np.dtype([("a", np.int32), ("b", np.float32)], align=True)

    @cuda.jit(device=True)
    def add_rec(x, y, out):
        out.a = x.a + y.a
        out.b = x.b + y.b

    @cuda.jit
    def total_of(d_in, d_total):
        items = local.array(2, rec)
        block.load(d_in, items)
        total = block.reduce(items, binary_op=add_rec)
        if cuda.threadIdx.x == 0:
            d_total[0] = total

    x = np.zeros(64, rec)
    sig = tuple(typeof(a, Purpose.argument) for a in (x, x[:1]))
    with linkcheck.launch_config_on_cpu(total_of, 32, (x, x[:1])), \
            mlir_linkcheck._device_cc((9, 0)):
        cres = _compile_and_optimize(total_of.py_func, sig, {"chip": "sm_90"})
    text = cres.metadata["mlir_module_str"]
    slots = [line for line in text.splitlines() if "llvm.alloca" in line]
    assert any("x i8" in line and "alignment = 4" in line for line in slots), slots
    assert not any("x !llvm.ptr" in line for line in slots), slots


def test_record_arrays_count_records():
    """coopgen's local and shared record arrays hold bytes, but their shape, size and len()
    count records, as a kernel argument's do (they counted bytes: a loop over range(len(a))
    of 13 8-byte records ran 104 times, the copy a group call makes ran past both arrays)."""
    import re

    from numba_cuda_mlir import cuda
    from numba_cuda_mlir.numba_cuda.typing.typeof import Purpose, typeof
    from coopgen import local, shared

    rec = np.dtype([("a", np.int32), ("b", np.float32)], align=True)

    @cuda.jit
    def sizes(out):
        a = local.array(13, rec)
        s = shared.array((3, 5), rec)
        t = local.array((2, 7), rec)
        out[0] = a.shape[0] * 10000 + a.size * 100 + len(a)
        out[1] = s.shape[0] * 10000 + s.shape[1] * 100 + s.size
        out[2] = t.shape[0] * 10000 + t.shape[1] * 100 + t.size

    out = np.zeros(3, np.int64)
    with linkcheck.launch_config_on_cpu(sizes, 32, (out,)):
        ptx = linkcheck.link_ptx(sizes, (typeof(out, Purpose.argument),))
    constants = {int(v) for v in re.findall(r"mov\.u64\s+%rd\d+, (\d+);", ptx)}
    assert {131313, 30515, 20714} <= constants, sorted(constants)


def test_a_warps_64_bit_sums_shuffle_both_halves():
    """numba-cuda-mlir 0.6.0 shuffles only the low 32 bits of an int64 (truncated, then sign
    extended), so the warp sums of run-length decoding's preconditions lost the high halves: the
    runs 2**63 + 2**63 summed to 0 and did not trap. Each int64 now crosses as two 32-bit
    halves: three sums of a warp, five steps each, two shuffles a step."""
    import re

    from numba_cuda_mlir import cuda
    from numba_cuda_mlir.numba_cuda.typing.typeof import Purpose, typeof
    from coopgen import coop

    @cuda.jit
    def decode(values, lengths, output):
        block = coop.this_block()
        runs, sizes = coop.ThreadData(1), coop.ThreadData(1)
        coop.load(block, values, runs)
        coop.load(block, lengths, sizes)
        decoded = coop.run_length_decode(block, runs, sizes, decoded_items_per_thread=2,
                                         decoded_window_offset=0, decoded_offset_dtype=np.uint64)
        coop.store(block, output, decoded)

    args = (np.arange(32, dtype=np.int32), np.zeros(32, np.uint64), np.zeros(64, np.int32))
    with linkcheck.launch_config_on_cpu(decode, 32, args):
        ptx = linkcheck.link_ptx(decode, tuple(typeof(a, Purpose.argument) for a in args))
    assert len(re.findall(r"\bshfl\.sync\.down\.b32\b", ptx)) == 3 * 5 * 2


@pytest.mark.parametrize("dtype", ("float16", "bfloat16"))
def test_rms_norm_example_links_with_its_pair_conversions(dtype):
    # the full-row kernel reads and writes its elements through PAIR_SOURCE's CUDA C++ under
    # numba-cuda-mlir too: linked in, inlined (no call left), nothing in local memory
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")  # numpy's bfloat16 (the coopgen[bf16] extra)
    rms = _example("rms_norm")
    kernel = rms.make_kernel(dtype, 32, True, threads=256)
    vec = _ty(rms.VECTOR_BITS)
    sig = (vec, vec, vec, _ty(np.int32, 0).dtype, _ty(np.float32, 0).dtype)
    with linkcheck.launch_config_on_cpu(kernel, 256):
        r = linkcheck.link_cubin(kernel, sig)
    assert r.local_bytes == 0 and r.registers <= 64
    assert b"rms_f16_pair" not in r.cubin and b"rms_bf16_pair" not in r.cubin
