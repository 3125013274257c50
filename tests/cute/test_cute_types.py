"""Item types in CuTe DSL kernels without a GPU: what CuTe DSL 4.8.1 reports for a tensor of
unsigned items, how a kernel gets them typed right (cute.recast_tensor), what coopgen.cute makes
of a signed tensor beside unsigned fragments, and numpy constants of half-precision dtypes (an
operator's identity). The C++ types are read from the shims' source, as clang compiles it."""
import re

import cutlass
import cutlass.cute as cute
import numpy as np
import pytest
from cutlass.base_dsl.enums import AddressSpace
from cutlass.cute.runtime import make_ptr

from coopgen import block, warp
from coopgen.cute import call, clang
from coopgen.cute.describe import CuteSignednessWarning

THREADS, ITEMS = 128, 8


@pytest.fixture
def shim_sources(monkeypatch):
    """The source of every bundle clang is asked for while the test compiles."""
    seen = []
    compile_bitcode = clang.compile_bitcode

    def record(source, arch):
        seen.append(source)
        return compile_bitcode(source, arch)
    monkeypatch.setattr(clang, "compile_bitcode", record)
    return seen


def _pointer(cls):
    return make_ptr(cls, 0, AddressSpace.gmem, assumed_align=16)


def _launch(kernel, cls, recast: bool):
    """A launch of ``kernel`` on one tensor of ``cls`` items made from its pointer, typed with
    cute.recast_tensor when ``recast``."""
    def typed(x):
        return cute.recast_tensor(x, cls) if recast else x

    @cute.jit
    def launch(p: cute.Pointer):
        kernel(typed(cute.make_tensor(p, cute.make_layout(THREADS * ITEMS)))).launch(
            grid=(1, 1, 1), block=(THREADS, 1, 1))
    return launch


def _item_types(sources) -> set:
    return set(re.findall(r"using T = ([\w ]+);", "\n".join(sources)))


def test_cute_dsl_types_a_pointers_tensor_signed_and_recast_tensor_keeps_the_sign():
    """The premise (CuTe DSL 4.8.1): a tensor made from a Uint16 pointer reports Int16, in the
    @cute.jit function and in the kernel; cute.recast_tensor there carries Uint16 into the
    kernel, and what the kernel reads from it is Uint16. (When CuTe DSL keeps the sign, this
    fails: docs/cute.md's Limits row and coopgen.cute.describe.unsigned_tensors go.)"""
    seen = {}

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor):
        seen["kernel"] = (x.element_type, y.element_type, type(y[0]))

    @cute.jit
    def launch(p: cute.Pointer):
        x = cute.make_tensor(p, cute.make_layout(64))
        seen["jit"] = (p.dtype, x.element_type)
        kernel(x, cute.recast_tensor(x, cutlass.Uint16)).launch(grid=(1, 1, 1),
                                                                block=(32, 1, 1))
    cute.compile(launch, _pointer(cutlass.Uint16))
    assert seen["jit"] == (cutlass.Int16, cutlass.Int16)
    assert seen["kernel"] == (cutlass.Int16, cutlass.Uint16, cutlass.Uint16)


@pytest.mark.parametrize("recast", (True, False), ids=("recast", "as-made"))
def test_values_read_from_a_tensor_reach_coopgen_with_its_type(recast, shim_sources):
    """A warp max and a Python max scan of a value the kernel reads from the tensor: unsigned
    short when the tensor was typed Uint16, short (CuTe DSL's type, ordering the top half of
    the values below zero) when not: what the differential run's 107 mismatches were."""
    def py_max(a, b):
        return cutlass.select_(a > b, a, b)

    @cute.kernel
    def kernel(x: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        x[tid] = warp.reduce(x[tid], "max") + warp.inclusive_scan(x[tid], py_max)
    cute.compile(_launch(kernel, cutlass.Uint16, recast), _pointer(cutlass.Uint16))
    assert _item_types(shim_sources) == {"unsigned short" if recast else "short"}


def test_a_signed_tensor_beside_unsigned_fragments_is_read_unsigned_with_a_warning(
        shim_sources):
    """A vectorized block load and store (CUB's take a pointer to the items' own type) between
    a tensor CuTe DSL types Int32 and Uint32 fragments of 8 items: they compile (the tensor read
    as Uint32, which changes no bit), and the warning says what coopgen cannot fix."""
    call.RESOLVED.clear()

    @cute.kernel
    def kernel(x: cute.Tensor):
        items = cute.make_rmem_tensor(ITEMS, cutlass.Uint32)
        block.load(x, items, algorithm="vectorize")
        block.store(x, items, algorithm="vectorize")
    with pytest.warns(CuteSignednessWarning) as caught:
        cute.compile(_launch(kernel, cutlass.Uint32, False), _pointer(cutlass.Uint32))
    text = str(caught[0].message)
    assert text.startswith("block.load: a global tensor of Int32 items with register "
                           "fragments of Uint32: read as Uint32")
    assert "cute.recast_tensor(x, cutlass.Uint32)" in text
    source = "\n".join(shim_sources)
    assert "unsigned int* block_src_it" in source or "unsigned int* block_itr" in source
    assert not re.search(r"(?<!unsigned )int\* block_", source)
    assert {"BlockLoad::Load(RandomAccessIterator, T (&)[ItemsPerThread])",
            "BlockStore::Store(OutputIteratorT, T (&)[ItemsPerThread])"} <= set(call.RESOLVED)


def test_a_recast_tensor_beside_unsigned_fragments_warns_nothing(recwarn):
    @cute.kernel
    def kernel(x: cute.Tensor):
        items = cute.make_rmem_tensor(ITEMS, cutlass.Uint32)
        block.load(x, items, algorithm="vectorize")
        block.store(x, items, algorithm="vectorize")
    cute.compile(_launch(kernel, cutlass.Uint32, True), _pointer(cutlass.Uint32))
    assert not [w for w in recwarn if w.category is CuteSignednessWarning]


@pytest.mark.parametrize("dtype", (cutlass.BFloat16, cutlass.Float16),
                         ids=("bfloat16", "float16"))
def test_a_half_precision_max_scan_starts_from_its_identity(dtype, shim_sources):
    """An exclusive max scan of arrays with the block aggregate and no initial value: coopgen
    passes the operator's identity, the dtype's lowest value, as a numpy constant (for
    bfloat16, ml_dtypes' scalar, which is no np.floating: the overload was not found)."""
    pytest.importorskip("ml_dtypes")
    call.RESOLVED.clear()

    @cute.kernel
    def kernel(x: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        items = cute.make_rmem_tensor(ITEMS, dtype)
        total = cute.make_rmem_tensor(1, dtype)
        block.load(x, items)
        block.exclusive_scan(items, items, scan_op="max", block_aggregate=total)
        block.store(x, items)
        if tid == 0:
            x[0] = total[0]
    cute.compile(_launch(kernel, dtype, True), _pointer(dtype))
    assert "BlockScan::ExclusiveScan(T (&)[ITEMS_PER_THREAD], T (&)[ITEMS_PER_THREAD], T, " \
           "ScanOp, T &)" in call.RESOLVED
    assert len(shim_sources) == 1


def test_numpy_constants_of_every_number_dtype_are_described_as_their_dtype():
    from coopgen.cute.describe import NUMBERS, constant, describe
    from coopgen.types import desc
    ml_dtypes = pytest.importorskip("ml_dtypes")
    for name in NUMBERS:
        value = (ml_dtypes.bfloat16 if name == "bfloat16" else np.dtype(name).type)(1)
        for d in (constant(value), describe(value)):
            assert d == desc.Literal(value.item(), desc.Scalar(name)), (name, d)


def test_the_gpu_cases_descending_reference_holds_for_unsigned_zeros():
    """The Python operators GPU case's numpy reference (a descending sort, min-scanned): it
    was -sort(-x), which puts an unsigned 0 (-0 is 0) first: the case's failure on uint32 at
    256 x 8 on the GPU (tiles holding zeros), whose kernel was right."""
    from kernels import GRID, python_operators
    _, want = python_operators(np.uint32, 128, 4)
    x = (np.arange(GRID * 128 * 4) % 1000).astype(np.uint32)  # zeros in every tile
    y, _ = want(x)
    descending = [sorted(t.tolist(), reverse=True) for t in x.reshape(GRID, -1)]
    np.testing.assert_array_equal(y, np.array(descending, np.uint32).reshape(-1))
