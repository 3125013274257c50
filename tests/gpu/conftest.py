"""GPU tests: every module here is marked ``gpu`` and skipped where no CUDA GPU is present."""
import pytest
from numba import cuda


@pytest.fixture(autouse=True)
def _needs_a_gpu():
    # Only tests under tests/gpu see this fixture. The kernels still build (lazily) at import,
    # so a machine without a GPU reports every test here as skipped, never as an error.
    if not cuda.is_available():
        pytest.skip("no CUDA GPU")
