"""cuda.coop's in-kernel forms on the numba-cuda-mlir backend (tests/mlir/kernels.py's
COOP_CASES): ``coop.ThreadData``, ``prim[ts](...)``, ``coop.TempStorage(...)`` made in the
kernel, two-phase objects called with it, enum members; Python operators on half, bfloat16,
complex and vector items (by value, or through pointers as cuda.coop's take them). Linked on a CPU for sm_90 (and sm_80), with their
errors in cuda.coop's words; on a GPU checked against numpy for several dtypes and block
shapes on fresh inputs."""
import numpy as np
import pytest

pytest.importorskip("numba_cuda_mlir")

from numba_cuda_mlir import cuda  # noqa: E402
from numba_cuda_mlir.numba_cuda.core.errors import TypingError  # noqa: E402

from coopgen import coop, linkcheck  # noqa: E402
from coopgen.model.errors import CoopgenError  # noqa: E402
from kernels import COOP_CASES, GRID, assert_matches, coop_inputs, dtype_name  # noqa: E402

RUN = [(name, block, dt) for name, case in COOP_CASES.items() for block in case[1]
       for dt in case[2]]
#: every dtype on the first block shape, the last on the others
LINKED = [(n, b, d) for n, b, d in RUN if b == COOP_CASES[n][1][0] or d == COOP_CASES[n][2][-1]]


def _id(block) -> str:
    return "x".join(map(str, np.atleast_1d(block)))


@pytest.mark.parametrize("name,block,dtype", LINKED,
                         ids=[f"{n}-{_id(b)}-{dtype_name(d)}" for n, b, d in LINKED])
def test_links_for_sm90_without_local_memory(name, block, dtype):
    kernel, x, outs, _ = coop_inputs(name, dtype, block, np.random.default_rng())
    r = linkcheck.link_as_launched(kernel, block, x, *outs, arch=(9, 0))
    assert r.cubin and r.registers > 0 and r.local_bytes == 0 and r.spill_stores == 0


@pytest.mark.parametrize("name", ["thread_data_scan", "getitem_storage", "half_reduce_python_op",
                                  "complex_sort_through_pointers"])
def test_links_for_sm80(name):
    block = COOP_CASES[name][1][-1]
    kernel, x, outs, _ = coop_inputs(name, COOP_CASES[name][2][0], block,
                                     np.random.default_rng())
    r = linkcheck.link_as_launched(kernel, block, x, *outs, arch=(8, 0))
    assert r.cubin and r.local_bytes == 0


def _link(fn, *args, block=128):
    return linkcheck.link_as_launched(cuda.jit(fn), block, *args, arch=(9, 0))


I32 = np.zeros(3 * 128 * 4, np.int32)
F32 = I32.astype(np.float32)


def stored_as_float(d_in, d_out):
    items = coop.ThreadData(4)
    coop.block.load(d_in, items)
    coop.block.store(d_out, items)


def exchanged_into_float(d_in, d_out):
    items = coop.ThreadData(4)
    out = cuda.local.array(4, np.float32)
    coop.block.load(d_in, items, 4)
    coop.block.exchange(items, out, 4,
                        block_exchange_type=coop.block.BlockExchangeType.StripedToBlocked)
    coop.block.store(d_out, out)


@pytest.mark.parametrize("kernel", [stored_as_float, exchanged_into_float])
def test_a_thread_datas_uses_must_agree_on_its_dtype(kernel):
    with pytest.raises(TypingError, match=r"has dtype float32, but the ThreadData passed as "
                                          r"\w+ holds int32.*consistent dtype for ThreadData"):
        _link(kernel, I32, F32)
    _link(stored_as_given, I32, F32)  # a dtype given is the user's choice: CUB converts


def stored_as_given(d_in, d_out):
    items = coop.ThreadData(4, dtype=np.int32)
    coop.block.load(d_in, items)
    coop.block.store(d_out, items)


def storage_given_twice(d_in, d_out):
    ts = coop.TempStorage()
    items = coop.ThreadData(4)
    coop.block.load[ts](d_in, items, temp_storage=ts)


def storage_sized_at_run_time(d_in, d_out):
    ts = coop.TempStorage(d_in[0])
    items = coop.ThreadData(4)
    coop.block.load(d_in, items, temp_storage=ts)


def storage_too_small(d_in, d_out):
    ts = coop.TempStorage(16)
    items = coop.ThreadData(4)
    coop.block.load(d_in, items, 4, "transpose", temp_storage=ts)


def thread_data_never_passed(d_in, d_out):
    items = coop.ThreadData(4)
    items[0] = 1


def thread_data_sized_at_run_time(d_in, d_out, items_per_thread):
    items = coop.ThreadData(d_in[0])
    coop.block.load(d_in, items, items_per_thread)


def thread_data_three_arguments(d_in, d_out):
    coop.block.load(d_in, coop.ThreadData(4, np.int32, 2))


@pytest.mark.parametrize("kernel,words", [
    (storage_given_twice, "cannot use both getitem temp_storage syntax and temp_storage keyword"),
    (storage_sized_at_run_time, r"TempStorage: argument 1 must be known when the kernel "
                                r"compiles \(a constant or a global: numba-cuda-mlir's "
                                r"planners see no kernel arguments\)"),
    (storage_too_small, r"holds 16 bytes, but the TempStorage of cub::BlockLoad<int, 128, 4, "
                        r"cub::BLOCK_LOAD_TRANSPOSE.*size_in_bytes is smaller than required"),
    (thread_data_never_passed, "never passed to a primitive, so its dtype cannot be inferred"),
    (thread_data_three_arguments, r"coop.ThreadData: takes \(items_per_thread, dtype=None\)"),
    (thread_data_sized_at_run_time, r"coop.ThreadData: items_per_thread must be known when the "
                                    r"kernel compiles.*got a value computed at run time"),
])
def test_errors_at_compile_time_in_cuda_coops_words(kernel, words):
    with pytest.raises((TypingError, CoopgenError), match=words):
        _link(kernel, I32, I32, *[4] * (kernel is thread_data_sized_at_run_time))


@pytest.mark.gpu
@pytest.mark.parametrize("name,block,dtype", RUN,
                         ids=[f"{n}-{_id(b)}-{dtype_name(d)}" for n, b, d in RUN])
def test_gives_numpys_answer_on_a_gpu(name, block, dtype):
    if not cuda.is_available():
        pytest.skip("no CUDA GPU")
    kernel, x, outs, want = coop_inputs(name, dtype, block, np.random.default_rng())
    d_outs = [cuda.to_device(o) for o in outs]
    kernel[GRID, block](cuda.to_device(x), *d_outs)
    assert_matches(d_outs, want, x.dtype)


@cuda.jit(device=True)
def neither(a, b):
    return a.no_such_field > b


def sort_complex_with_neither(d_in, d_out):
    items = coop.ThreadData(3)
    coop.block.load(d_in, items, 3)
    coop.block.merge_sort_keys(items, 3, neither)


def test_an_operator_fitting_neither_form_is_refused_naming_both():
    x = np.zeros(3 * 128 * 3, np.complex128)
    with pytest.raises(TypingError, match=r"(?s)compare_op=neither must work as a CompareOp "
                                          r"\(complex128\*, complex128\*\).*no_such_field"):
        _link(sort_complex_with_neither, x, x)


SORT = coop.block.make_radix_sort_keys(np.int32, 128, 4)


def sort_passed_as_an_argument(d_in, d_out, sort):
    items = coop.local.array(4, d_in.dtype)
    coop.block.load(d_in, items)
    sort(items)


def test_a_two_phase_object_as_a_kernel_argument_is_refused_by_name():
    with pytest.raises(CoopgenError, match="block.radix_sort_keys: the two-phase object passed "
                                           "as the kernel argument 'sort' cannot be a kernel "
                                           "argument on numba-cuda-mlir"):
        _link(sort_passed_as_an_argument, I32, I32, SORT)
