"""A launched kernel's shims are compiled for the device it launches on, and the numbers are
right; the ahead-of-time compile of the same kernel for that arch is what the CPU suite links."""
import numpy as np
import pytest
from gpu_util import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)

from coopgen import block, local
from coopgen.codegen import nvrtc
from coopgen.codegen.bundle import ShimBundle

pytestmark = pytest.mark.gpu


@cuda.jit
def _tile_sums(d_in, d_out):
    items = local.array(4, d_in.dtype)
    base = cuda.blockIdx.x * cuda.blockDim.x * 4
    block.load(d_in[base:], items, algorithm="striped")
    total = block.sum(items)
    if cuda.threadIdx.x == 0:
        d_out[cuda.blockIdx.x] = total


def test_shims_compile_for_the_launching_device():
    major, minor = cuda.get_current_device().compute_capability
    x = np.random.default_rng().integers(-1000, 1000, 6 * 128 * 4, dtype=np.int32)
    out = cuda.device_array(6, np.int32)
    _tile_sums[6, 128](cuda.to_device(x), out)
    assert (out.copy_to_host() == x.reshape(6, -1).sum(axis=1)).all()
    (kernel,) = _tile_sums.overloads.values()
    bundles = [f for f in kernel.library._linking_files if isinstance(f, ShimBundle)]
    assert [b.arch for b in bundles] == [f"compute_{major}{minor}"]
    assert nvrtc.default_arch() == f"sm_{major}{minor}"  # host-side sizes use it too
