"""coopgen.cute without a GPU: CuTe DSL kernels calling coopgen's primitives compile and link
to cubins for sm_90a and sm_100a, with the shims inlined (no calls) and the register fragments
kept in registers (no local memory); misuse is refused by name."""
import subprocess
import sys
from pathlib import Path

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from kernels import CASES, everything, kernel_with, misuse, pointer, python_operators

from coopgen import block, warp
from coopgen.cute import call, clang

ARCHS = ("sm_90a", "sm_100a")
EVERYTHING = ["BlockExchange::BlockedToStriped(const T (&)[ItemsPerThread], OutputT (&)[ItemsPerThread])",
              "BlockExchange::StripedToBlocked(const T (&)[ItemsPerThread], OutputT (&)[ItemsPerThread])",
              "BlockLoad::Load(RandomAccessIterator, T (&)[ItemsPerThread])",
              "BlockMergeSort::Sort(KeyT (&)[ItemsPerThread], CompareOp)",
              "BlockRadixSort::Sort(KeyT (&)[ItemsPerThread], int, int)",
              "BlockReduce::Reduce(T (&)[ITEMS_PER_THREAD], ReductionOp)",
              "BlockReduce::Sum(T (&)[ITEMS_PER_THREAD])",
              "BlockScan::ExclusiveSum(T (&)[ITEMS_PER_THREAD], T (&)[ITEMS_PER_THREAD])",
              "BlockScan::InclusiveScan(T (&)[ITEMS_PER_THREAD], T (&)[ITEMS_PER_THREAD], ScanOp)",
              "BlockStore::Store(OutputIteratorT, T (&)[ItemsPerThread])",
              "WarpReduce::Reduce(T, ReductionOp)", "WarpReduce::Sum(T)",
              "WarpScan::InclusiveSum(T, T &)"]


def compile_for(arch: str, launch, *args):
    return cute.compile[cute.GPUArch(arch), cute.KeepPTX, cute.KeepCUBIN](launch, *args)


@pytest.mark.parametrize("arch", ARCHS)
def test_every_first_class_primitive_links(arch):
    call.RESOLVED.clear()
    before = clang.compile_count() + clang.cache_hit_count()
    ptr = pointer(np.int32)
    compiled = compile_for(arch, everything(np.int32), ptr, ptr, ptr)
    assert sorted(set(call.RESOLVED)) == EVERYTHING
    # one clang translation unit for the whole kernel (compiled, or found in the cache)
    assert clang.compile_count() + clang.cache_hit_count() - before == 1
    ptx = compiled.artifacts.PTX
    assert f".target {arch}" in ptx
    assert "call.uni" not in ptx and "call " not in ptx  # every shim inlined
    assert ".local" not in ptx  # the fragments stay in registers
    assert compiled.artifacts.CUBIN[:4] == b"\x7fELF"


def test_import_coopgen_imports_no_cutlass():
    code = "import sys, coopgen; assert 'cutlass' not in sys.modules, 'cutlass imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fragments_of_two_dtypes_are_refused_by_name():
    def body(x):
        items = cute.make_rmem_tensor(4, cutlass.Int32)
        out = cute.make_rmem_tensor(4, cutlass.Float32)
        block.load(x, items)
        block.exclusive_sum(items, out)
    message = misuse(body)
    assert "block.exclusive_sum" in message and "float32" in message and "int32" in message


def test_fragments_of_two_lengths_are_refused_by_name():
    def body(x):
        items = cute.make_rmem_tensor(4, cutlass.Int32)
        out = cute.make_rmem_tensor(8, cutlass.Int32)
        block.load(x, items)
        block.inclusive_sum(items, out)
    message = misuse(body)
    assert "block.inclusive_sum" in message and "8" in message and "4" in message


def test_without_a_static_block_shape_threads_per_block_is_asked_for():
    def body(x):
        items = cute.make_rmem_tensor(4, cutlass.Int32)
        block.load(x, items)

    @cute.kernel
    def kernel(x: cute.Tensor):
        body(x)

    @cute.jit
    def launch(p: cute.Pointer, threads: cutlass.Int32):
        kernel(cute.make_tensor(p, cute.make_layout(512))).launch(grid=(1, 1, 1),
                                                                  block=(threads, 1, 1))
    with pytest.raises(Exception) as info:
        cute.compile(launch, pointer(np.int32), cutlass.Int32(128))
    assert "threads_per_block" in str(info.value)


def test_a_strided_shared_tensor_is_refused():
    def body(x):
        smem = cutlass.memory.SmemAllocator()
        shared = smem.allocate_tensor(cutlass.Int32, cute.make_layout((4, 128), stride=(128, 1)),
                                      16)
        items = cute.make_rmem_tensor(4, cutlass.Int32)
        block.load(x, items)
        block.store(shared, items)
    message = misuse(body)
    assert "block.store" in message and "contiguous" in message


def test_an_operator_of_the_wrong_arity_is_refused_by_name():
    def body(x):
        items = cute.make_rmem_tensor(4, cutlass.Int32)
        block.load(x, items)
        block.reduce(items, binary_op=lambda a: a)
    message = misuse(body)
    assert "block.reduce" in message and "takes 1 argument" in message


@pytest.mark.parametrize("arch", ARCHS)
def test_python_operators_link_inlined(arch):
    """Plain Python and cutlass functions as scan, comparison and reduction operators: traced
    into the module's functions that the shims call, all inlined."""
    call.RESOLVED.clear()
    ptr = pointer(np.int32)
    compiled = compile_for(arch, python_operators(np.int32, 128, 4)[0], ptr, ptr, ptr)
    assert {"BlockMergeSort::Sort(KeyT (&)[ItemsPerThread], CompareOp)",
            "BlockScan::InclusiveScan(T (&)[ITEMS_PER_THREAD], T (&)[ITEMS_PER_THREAD], ScanOp)",
            "BlockReduce::Reduce(T (&)[ITEMS_PER_THREAD], ReductionOp)",
            "WarpReduce::Reduce(T, ReductionOp)"} <= set(call.RESOLVED)
    ptx = compiled.artifacts.PTX
    assert "call.uni" not in ptx and ".local" not in ptx


def test_python_operators_of_one_bytecode_keep_their_own_bodies():
    """Two lambdas differing only in the function they call (cutlass.max, cutlass.min) are two
    traced functions: the scan takes the minimum and the reduction the maximum (one symbol for
    both made the GPU's min scan a max scan)."""
    high, low = (lambda a, b: cutlass.max(a, b)), (lambda a, b: cutlass.min(a, b))

    def body(x):
        items = cute.make_rmem_tensor(4, cutlass.Int32)
        block.load(x, items)
        x[1] = warp.reduce(items[0], high)
        block.inclusive_scan(items, items, scan_op=low)
        block.store(x, items)
    ptx = cute.compile[cute.KeepPTX](kernel_with(body), pointer(np.int32)).artifacts.PTX
    assert "min.s32" in ptx and "max.s32" in ptx


def test_the_readme_kernel_links_for_each_arch(capsys):
    from cute_sort_tiles import link
    link(ARCHS)
    out = capsys.readouterr().out
    assert all(f"{arch}: compiled and linked" in out for arch in ARCHS), out


@pytest.mark.parametrize("dtype,threads,items", ((np.int32, 128, 4), (np.int64, 256, 8)),
                         ids=("int32-128x4", "int64-256x8"))
@pytest.mark.parametrize("name", sorted(CASES))
def test_each_gpu_case_links(name, dtype, threads, items):
    """What the GPU tests run compiles and links here: the narrowest and the widest of their
    configurations (an explicit storage sized for the one may not fit the other)."""
    launch, _ = CASES[name](dtype, threads, items)
    ptr = pointer(dtype)
    ptx = compile_for("sm_90a", launch, ptr, ptr, ptr).artifacts.PTX
    assert "call.uni" not in ptx and ".local" not in ptx


def test_objects_made_in_the_kernel_link():
    """block.histogram's object (init, composite) and a faithful BlockRadixSort object."""
    call.RESOLVED.clear()
    launch, _ = CASES["histogram"](np.int32, 128, 4)
    ptr = pointer(np.int32)
    compile_for("sm_90a", launch, ptr, ptr, ptr)
    assert {"BlockHistogram::BlockHistogram()", "BlockHistogram::InitHistogram(CounterT[Bins])",
            "BlockHistogram::Composite(T (&)[ItemsPerThread], CounterT[Bins])",
            "BlockRadixSort::BlockRadixSort()",
            "BlockRadixSort::Sort(KeyT (&)[ItemsPerThread], int, int)"} <= set(call.RESOLVED)


@cute.jit
def bigger(a, b):
    r = a
    if b > a:  # a branch on traced values: a @cute.jit operator
        r = b
    return r


TWO_PHASE_SUM = block.sum(np.int32, 128, 4)


def test_coop_calls_two_phase_objects_and_jit_operators_link():
    """cuda.coop's namespace (coopgen.coop), an object made on the host and called in the
    kernel, and a @cute.jit operator with a branch, in one kernel."""
    from coopgen import coop

    def body(x):
        items = cute.make_rmem_tensor(4, cutlass.Int32)
        coop.block.load(x, items)
        x[0] = coop.block.sum(items) + TWO_PHASE_SUM(items) + coop.block.reduce(items, bigger) \
            + coop.warp.sum(items[0])
    call.RESOLVED.clear()
    ptx = cute.compile[cute.KeepPTX](kernel_with(body), pointer(np.int32)).artifacts.PTX
    assert set(call.RESOLVED) == {"BlockLoad::Load(RandomAccessIterator, T (&)[ItemsPerThread])",
                                  "BlockReduce::Reduce(T (&)[ITEMS_PER_THREAD], ReductionOp)",
                                  "BlockReduce::Sum(T (&)[ITEMS_PER_THREAD])",
                                  "WarpReduce::Sum(T)"}
    assert "call.uni" not in ptx and ".local" not in ptx


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("scope", ("block", "warp"))
def test_every_bound_overload_links(scope, arch, tmp_path):
    """tests/cpu/smoke.py's call of every bound overload, written for CuTe DSL (smoke_cute.py),
    one kernel per scope: each call resolves to the overload it was written for and the kernel
    links. The overloads left out are those docs/cute.md lists as not bound yet."""
    import smoke_cute
    from coopgen.model import registry
    classes = [c for c in registry.package().CLASSES if c.scope == scope]
    launch, covered, src = smoke_cute.build(classes, scope, tmp_path)
    call.RESOLVED.clear()
    ptr = pointer(np.int32)
    compiled = compile_for(arch, launch, ptr, ptr, cutlass.Int32(5))
    assert set(call.RESOLVED) == set(covered), src
    assert compiled.artifacts.CUBIN[:4] == b"\x7fELF"
    unbound = [m for c in classes for m in (*c.methods, *c.constructors)
               if not smoke_cute.bound(m)]
    assert len(covered) + len(unbound) == sum(len(c.methods) + len(c.constructors)
                                             for c in classes)


def test_a_missing_clang_is_named(monkeypatch):
    monkeypatch.setenv("COOPGEN_CLANG", "/nonexistent/clang++")
    clang.clang_command.cache_clear()
    try:
        with pytest.raises(clang.ClangError, match="COOPGEN_CLANG"):
            clang.clang_command()
    finally:
        clang.clang_command.cache_clear()


def test_a_kernel_compiled_again_runs_no_clang():
    """The bitcode is cached on disk by its source, clang, options and headers."""
    from cute_sort_tiles import sort_tiles
    ptr = pointer(np.int32)
    compile_for("sm_90a", sort_tiles(np.int32, 64, 2, 2), ptr, ptr, ptr)
    compiled, hits = clang.compile_count(), clang.cache_hit_count()
    compile_for("sm_90a", sort_tiles(np.int32, 64, 2, 2), ptr, ptr, ptr)
    assert clang.compile_count() == compiled and clang.cache_hit_count() == hits + 1


def test_host_calls_in_a_cute_program_make_two_phase_objects():
    """With cutlass imported but no kernel traced, calls are the host's (two-phase objects)."""
    assert "cutlass" in sys.modules
    assert block.BlockReduce(np.int32, threads_per_block=128).temp_storage_bytes == 24
    obj = block.sum(np.int32, 128, 4)
    assert obj.fixed and obj.temp_storage_bytes == 24


def test_a_cuda_home_toolkit_compiles(monkeypatch, tmp_path):
    """With CUDA_HOME set (a toolkit's folder: include/ and bin/), clang compiles the shims
    against it, with coopgen's prelude found all the same."""
    from cute_sort_tiles import sort_tiles
    wheels = clang.cuda_root()  # the wheels' headers, as a toolkit folder lays them out
    home = tmp_path / "cuda"
    (home / "bin").mkdir(parents=True)
    (home / "include").symlink_to(Path(wheels) / "include", target_is_directory=True)
    monkeypatch.setenv("CUDA_HOME", str(home))
    clang.cuda_root.cache_clear()
    try:
        assert clang.cuda_root() == str(home)
        ptr = pointer(np.int32)
        compiled = compile_for("sm_90a", sort_tiles(np.int32, 64, 2, 2), ptr, ptr, ptr)
        assert compiled.artifacts.CUBIN[:4] == b"\x7fELF"
    finally:
        clang.cuda_root.cache_clear()


def _docs_blocks():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: tools/
    from tools import docs_code
    return [pytest.param(b, id=ident) for ident, b in docs_code.runnable() if b.compiler == "cute"]


@pytest.mark.parametrize("block", _docs_blocks())
def test_docs_blocks_link(block, tmp_path, monkeypatch):
    """Each CuTe DSL block of the docs, run up to its last ``cute.compile`` (which links it for
    CUTE_DSL_ARCH without a GPU); tests/gpu/test_docs_examples.py runs it whole on a GPU."""
    import ast
    monkeypatch.setenv("CUTE_DSL_ARCH", "sm_90a")
    tree = ast.parse(block.code)
    last = max(i for i, s in enumerate(tree.body) if "cute.compile" in ast.unparse(s))
    tree.body = tree.body[:last + 1]
    path = tmp_path / "docs_example.py"  # CuTe DSL reads a kernel's source from its file
    path.write_text(block.code, encoding="utf-8")
    scope = {"__name__": "docs_example"}
    exec(compile(tree, str(path), "exec"), scope)  # noqa: S102
    from cutlass.base_dsl.jit_executor import JitCompiledFunction
    assert any(isinstance(v, JitCompiledFunction) for v in scope.values()), sorted(scope)


def test_numba_and_cute_kernels_side_by_side_in_one_process():
    """coopgen[cute] beside numba-cuda, in one process: a numba kernel, then a CuTe DSL kernel,
    then a numba kernel again, each calling block.load and block.sum, each linked for sm_90
    (numba-cuda-mlir's side-by-side run is in tests/mlir: CI installs it in another venv)."""
    import numba
    from numba import cuda

    from coopgen import block_shape, local
    from coopgen.linkcheck import link_cubin

    def numba_sum(d_in, d_out):
        items = local.array(4, numba.int32)
        block.load(d_in, items)
        d_out[0] = block.sum(items)

    def cute_sum(x):
        items = cute.make_rmem_tensor(4, cutlass.Int32)
        block.load(x, items)
        x[0] = block.sum(items)

    signature = (numba.int32[::1], numba.int32[::1])
    with block_shape(128):
        before = link_cubin(cuda.jit(numba_sum), signature)
    compiled = cute.compile[cute.GPUArch("sm_90a"), cute.KeepPTX, cute.KeepCUBIN](
        kernel_with(cute_sum), pointer(np.int32))
    with block_shape(128):
        after = link_cubin(cuda.jit(numba_sum), signature)
    assert compiled.artifacts.CUBIN[:4] == b"\x7fELF" and "call.uni" not in compiled.artifacts.PTX
    for linked in (before, after):
        assert linked.cubin[:4] == b"\x7fELF" and linked.local_bytes == 0
