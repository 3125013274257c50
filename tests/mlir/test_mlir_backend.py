"""The numba-cuda-mlir backend over coopgen's core (tests/mlir/kernels.py): each kernel linked
for sm_90 on a CPU, and on a GPU checked against numpy for several dtypes on fresh inputs."""
import numpy as np
import pytest

pytest.importorskip("numba_cuda_mlir")

from coopgen import linkcheck  # noqa: E402
from kernels import CASES, inputs  # noqa: E402

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
    for d, w in zip(d_outs, want):
        got = d.copy_to_host()
        if np.dtype(dtype).kind == "f":
            np.testing.assert_allclose(got, w, rtol=1e-5)
        else:
            np.testing.assert_array_equal(got, w)


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
