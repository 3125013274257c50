"""``coop.gpu_dataclass`` instances of numbers as kernel arguments on the GPU: two instances of
one class through one kernel, each answer against numpy (COOPGEN_COMPILER picks the compiler)."""
import numpy as np
import pytest
from gpu_dataclass_kernels import kernel, traits, want
from gpu_util import cuda

pytestmark = pytest.mark.gpu


def test_dataclass_fields_reach_the_kernel():
    rng = np.random.default_rng()
    k = kernel(cuda)
    values = rng.standard_normal(1000)
    for _ in range(2):
        t = traits(rng)
        out = cuda.device_array_like(values)
        k[4, 256](cuda.to_device(values), out, t)
        np.testing.assert_allclose(out.copy_to_host(), want(values, t))
