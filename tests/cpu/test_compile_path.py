"""CPU tests of the runtime compile path: NVRTC -> LTO-IR cache -> shim calls
-> compile_all -> nvJitLink cubin. No GPU needed.

NVRTC compiles that include CUB cost ~0.8 s each (~0.15 s with NVRTC's
in-process PCH), so all tests share one module-level cache directory and
are written to need only three CUB compiles in total.
"""

import math

import numpy as np
import pytest
from numba import cuda
from numba.cuda import types

import shim_intrinsic as sc
from coopgen import linkcheck
from coopgen.codegen import nvrtc
from coopgen.codegen.bundle import Shim, ShimBundle
from coopgen.lower.bundle import LinkedShimBundle

SIG = (types.int32[::1], types.int32[::1])

REDUCE = Shim(
    "coopgen_test_block_reduce_sum_i32_128",
    r"""
COOPGEN_SHIM void coopgen_test_block_reduce_sum_i32_128(int x, int* out)
{
  using BR = cub::BlockReduce<int, 128>;
  __shared__ typename BR::TempStorage storage;
  *out = BR(storage).Sum(x);
}
""",
    ("cub/block/block_reduce.cuh",),
)

SCAN = Shim(
    "coopgen_test_block_scan_exsum_i32_128",
    r"""
COOPGEN_SHIM void coopgen_test_block_scan_exsum_i32_128(int x, int* out)
{
  using BS = cub::BlockScan<int, 128>;
  __shared__ typename BS::TempStorage storage;
  BS(storage).ExclusiveSum(x, *out);
}
""",
    ("cub/block/block_scan.cuh",),
)

# No CUB: exercises pointer + by-value + two output parameters.
PAIR = Shim(
    "coopgen_test_load_pair_i32",
    r"""
COOPGEN_SHIM void coopgen_test_load_pair_i32(const int* data, long long i,
                                             int* first, int* second)
{
  *first = data[i];
  *second = data[i + 1];
}
""",
)

block_sum = sc.shim_call(REDUCE, [sc.val(types.int32), sc.out(types.int32)])
block_exsum = sc.shim_call(SCAN, [sc.val(types.int32), sc.out(types.int32)])
load_pair = sc.shim_call(
    PAIR, [sc.ptr(types.int32), sc.val(types.int64), sc.out(types.int32), sc.out(types.int32)]
)
SYMBOLS = {REDUCE.symbol, SCAN.symbol, PAIR.symbol}


def two_shims(a, b):
    t = cuda.threadIdx.x
    s = block_sum(a[t])
    cuda.syncthreads()
    s2 = block_sum(a[t] + 1)  # same shim again: deduplicated in the bundle
    e = block_exsum(a[t])
    x, y = load_pair(b, 1)
    if t == 0:
        b[0] = s + s2 + x + y
    a[t] = e


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("ltoir-cache")


@pytest.fixture
def cache(shared_cache, monkeypatch):
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(shared_cache))
    monkeypatch.delenv("COOPGEN_DISABLE_CACHE", raising=False)
    monkeypatch.delenv("COOPGEN_DUMP_SHIMS", raising=False)
    nvrtc.reset_counters()
    return shared_cache


@pytest.fixture
def warm(cache):
    """The cache holds the bundle of `two_shims` (compiles it if run alone)."""
    for b in _bundles(linkcheck.compile_kernel_pieces(two_shims, SIG)):
        b.data
    nvrtc.reset_counters()
    return cache


def _bundles(pieces):
    return [p for p in pieces if isinstance(p, ShimBundle)]


# ---------------------------------------------------------------- nvrtc.py

TINY = 'extern "C" __device__ void coopgen_tiny(int* o, int x) { *o = x + 1; }\n'


def test_compile_ltoir_cache_and_dump(tmp_path, monkeypatch):
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(tmp_path / "c"))
    monkeypatch.setenv("COOPGEN_DUMP_SHIMS", str(tmp_path / "dump"))
    monkeypatch.delenv("COOPGEN_DISABLE_CACHE", raising=False)
    nvrtc.reset_counters()

    a = nvrtc.compile_ltoir(TINY, include_dirs=[], arch="sm_90")
    assert a and nvrtc.compile_count() == 1 and nvrtc.cache_hit_count() == 0
    b = nvrtc.compile_ltoir(TINY, include_dirs=[], arch="sm_90")
    assert b == a and nvrtc.compile_count() == 1 and nvrtc.cache_hit_count() == 1

    cached = list((tmp_path / "c" / "ltoir").glob("*.ltoir"))
    dumped = list((tmp_path / "dump").glob("*.cu"))
    assert len(cached) == 1 and [p.stem for p in dumped] == [cached[0].stem]
    assert dumped[0].read_text(encoding="utf-8") == TINY
    assert not list((tmp_path / "c" / "ltoir").glob(".tmp-*"))  # atomic write cleaned up

    # different arch / options -> different key
    nvrtc.compile_ltoir(TINY, include_dirs=[], arch="sm_80")
    assert nvrtc.compile_count() == 2

    monkeypatch.setenv("COOPGEN_DISABLE_CACHE", "1")
    nvrtc.compile_ltoir(TINY, include_dirs=[], arch="sm_90")
    assert nvrtc.compile_count() == 3


def test_cache_dir_defaults(monkeypatch, tmp_path):
    monkeypatch.delenv("COOPGEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("COOPGEN_DISABLE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert nvrtc.cache_dir() == tmp_path / "coopgen" / "ltoir"
    monkeypatch.setenv("COOPGEN_DISABLE_CACHE", "1")
    assert nvrtc.cache_dir() is None


def test_nvrtc_error_carries_log(tmp_path, monkeypatch):
    monkeypatch.setenv("COOPGEN_DISABLE_CACHE", "1")
    with pytest.raises(nvrtc.NvrtcError) as ei:
        nvrtc.compile_ltoir("__device__ int f() { return undefined_thing; }", include_dirs=[])
    assert "undefined_thing" in ei.value.log
    assert isinstance(ei.value, RuntimeError)


def test_options():
    opts = nvrtc.base_options("sm_90", ["/inc"])
    assert opts == [
        "-std=c++17",
        "--relocatable-device-code=true",
        "-dlto",
        "-arch=compute_90",
        "-I/inc",
    ]
    assert nvrtc.base_options("compute_90a", [])[3] == "-arch=compute_90a"


# ------------------------------------------------- shimcall + linkcheck


def test_kernel_with_two_shims_one_nvrtc_compile(cache):
    res = linkcheck.link_cubin(two_shims, SIG, arch=(9, 0))
    # all three shims (one used twice) went into a single NVRTC compile
    assert nvrtc.compile_count() == 1
    assert res.cubin[:4] == b"\x7fELF"
    assert len(res.entries) == 1
    # shims were inlined by LTO: the kernel is the only function reported
    assert list(res.functions) == res.entries
    k = res.kernel
    assert k.local_bytes == 0 and res.local_bytes == 0
    assert res.spill_stores == 0 and res.spill_loads == 0
    assert k.registers > 0
    assert k.smem > 0  # the shims' static __shared__ TempStorage
    # warm cache: a fresh compile of the same kernel does no NVRTC work
    nvrtc.reset_counters()
    pieces = linkcheck.compile_kernel_pieces(two_shims, SIG)
    (bundle,) = _bundles(pieces)
    assert {s.symbol for s in bundle.shims} == SYMBOLS
    assert bundle.data[:4]  # materialise
    assert nvrtc.compile_count() == 0 and nvrtc.cache_hit_count() == 1


def test_unused_variable_bloat_goes_with_optimize_unused_variables(warm):
    # libcu++/CUB static constexpr members come out as weak __device__
    # variables (gmem) unless nvJitLink may drop unreferenced variables.
    plain = linkcheck.link_cubin(two_shims, SIG)
    lean = linkcheck.link_cubin(two_shims, SIG, optimize_unused_variables=True)
    assert nvrtc.compile_count() == 0
    assert lean.gmem == 0 and lean.local_bytes == 0
    assert len(lean.cubin) <= len(plain.cubin)



def test_same_shim_in_two_bundles_links(warm):
    # A @cuda.jit(device=True) function or a non-inlined @overload has its own
    # code library, hence its own bundle, which numba copies into the kernel's
    # linking files; both bundles may define the same shim. (Building that
    # via numba needs a GPU, since device functions are compiled for the
    # current device; here the second bundle is made by hand.)
    pieces = linkcheck.compile_kernel_pieces(two_shims, SIG)
    extra = LinkedShimBundle("compute_90", name="other-library")
    extra.add(REDUCE)
    res = linkcheck.link_pieces(pieces + [extra])
    assert res.local_bytes == 0 and list(res.functions) == res.entries
    assert nvrtc.compile_count() <= 1  # the reduce-only bundle (maybe cached)


@cuda.jit(device=True, inline="always")
def _inlined_helper(x):
    return block_sum(x)


def test_inline_always_device_function_shares_kernel_bundle(warm):
    # inline="always" inlines the helper's IR into the kernel before lowering,
    # so its shim lands in the kernel's bundle: still one NVRTC compile.
    def kernel(a, b):
        t = cuda.threadIdx.x
        s = _inlined_helper(a[t])
        cuda.syncthreads()
        e = block_exsum(a[t])
        x, y = load_pair(b, 1)
        if t == 0:
            b[0] = s + x + y
        a[t] = e

    pieces = linkcheck.compile_kernel_pieces(kernel, SIG)
    (bundle,) = _bundles(pieces)
    assert {s.symbol for s in bundle.shims} == SYMBOLS
    res = linkcheck.link_pieces(pieces)
    assert res.local_bytes == 0
    assert nvrtc.compile_count() == 0  # same shim set as two_shims: cached


def test_shim_call_typing_errors():
    def bad(a, b):
        block_sum(a)  # array where a scalar is expected

    def strided(a, b):
        load_pair(a[::2], 0)  # only the data pointer would be passed

    # numba re-raises as numba.core.errors.TypingError
    with pytest.raises(Exception, match="expected a scalar"):
        linkcheck.compile_kernel_pieces(bad, SIG)
    with pytest.raises(Exception, match="C-contiguous"):
        linkcheck.compile_kernel_pieces(strided, SIG)
    with pytest.raises(TypeError):
        sc.shim_call(REDUCE, [sc.val(types.boolean)])


def test_bundle_rejects_conflicting_symbol():
    b = ShimBundle("compute_90")
    b.add(REDUCE)
    b.add(REDUCE)  # identical: deduplicated
    assert len(b.shims) == 1
    with pytest.raises(ValueError):
        b.add(Shim(REDUCE.symbol, "different body"))


def _storage_sites(a, b):
    b[0] = a[0]  # first use: nothing ran before it
    if a[1] > 0:
        b[1] = a[1]  # second use, on one branch
    for i in range(a[2]):
        b[2] = a[i]  # a use in a loop: it may follow itself


def test_storage_barriers_follow_the_control_flow():
    """A block-storage use waits at a barrier only when another use with a non-empty
    TempStorage may have run before it: the first use of a kernel and uses of empty storage
    (direct loads) need none; a use in a loop always does."""
    from numba.cuda.compiler import run_frontend

    func_ir = run_frontend(_storage_sites)
    cfg = func_ir.blocks
    labels = sorted(cfg)
    from coopgen.lower.bundle import runs_once
    loop_label = next(lbl for lbl in labels if not runs_once((func_ir, lbl)))
    b = LinkedShimBundle("sm_90")

    def use(name, storage, label):
        b.add(Shim(f"s_{name}", f"void s_{name}() {{}}", block_storage=storage),
              site=(func_ir, label))

    use("first", "Big", labels[0])
    use("empty", "Empty", labels[0])
    use("branch", "Big2", labels[1])
    use("loop", "Big3", loop_label)
    lines = {ln.split()[3]: ln for ln in b._storage_barriers(b.shims)}
    assert lines["coopgen_barrier_s_first"].endswith("sizeof(Big) > 1 && (false);\n")
    assert "(sizeof(Big) > 1)" in lines["coopgen_barrier_s_empty"]  # Empty > 1 is false anyway
    assert "sizeof(Big) > 1 || sizeof(Empty) > 1" in lines["coopgen_barrier_s_branch"]
    assert "Big3" not in lines["coopgen_barrier_s_branch"]
    assert "sizeof(Big3) > 1" in lines["coopgen_barrier_s_loop"].split("&&")[1]
    unknown = LinkedShimBundle("sm_90")
    unknown.add(Shim("s_x", "void s_x() {}", block_storage="X"), site=None)
    assert "&& (sizeof(X) > 1)" in unknown._storage_barriers(unknown.shims)[0]


def test_link_check_compiles_a_kernel_as_its_launch_does_fastmath_included():
    # a dispatcher's fastmath reaches the link check as it reaches its launch: its divisions
    # and square roots become the approximate, flush-to-zero instructions
    def kernel(a, b):
        t = cuda.threadIdx.x
        b[t] = np.int32(1e6 * math.sqrt(np.float32(a[t]) / np.float32(b[t] + 1)))
    exact, fast = cuda.jit(kernel), cuda.jit(fastmath=True)(kernel)
    ptx = {name: linkcheck.link_ptx(k, SIG) for name, k in (("exact", exact), ("fast", fast))}
    assert "sqrt.approx.ftz.f32" in ptx["fast"] and "div.approx.ftz.f32" in ptx["fast"]
    assert "sqrt.rn.f32" in ptx["exact"] and "div.rn.f32" in ptx["exact"]
