"""GPU tests: every module here is marked ``gpu`` and skipped where no CUDA GPU is present.

With COOPGEN_COMPILER=numba_cuda_mlir the kernels are numba-cuda-mlir's (coopgen's mlir
backend); the tests that need what that backend lacks are skipped, each with its reason
(NUMBA_CUDA_ONLY). With COOPGEN_GPU_TESTS_LINK_ON_CPU=1 no GPU is needed (see gpu_util.py)."""
from fnmatch import fnmatch
from pathlib import Path

import pytest
from gpu_util import LINK_ON_CPU, MLIR, cuda

HERE = Path(__file__).resolve().parent

_STATIC_PAST_48_KB = ("CUB storage past 48 KB beside the kernel's own dynamic shared memory: "
                      "the mlir backend keeps it static")
_LAUNCH_CONFIG = "asserts on numba-cuda's launch configuration (sharedmem, pre_launch_callbacks)"
#: Tests ("path below tests/gpu/::name" patterns) that only numba-cuda runs, and what the
#: numba-cuda-mlir backend or its compiler lacks for them (docs/numba-cuda-mlir.md's table).
NUMBA_CUDA_ONLY = {
    "test_kernel_cache.py::*": "cache=True (numba-cuda-mlir caches no launch-specialised kernel)",
    "test_sampling.py::*": "examples/sampling.py is written with numba-cuda's cuda",
    "test_device_arch.py::*": "reads the shims' arch from numba-cuda's kernel library",
    "test_docs_examples.py::test_example_runs[[]inference-1[]]":
        "cuda.compile_all (numba-cuda-mlir 0.6.0: not implemented)",
    "test_docs_examples.py::test_example_runs[[]pytorch-*":
        "examples/fast_launch.py's Launcher drives numba-cuda's dispatcher",
    "test_large_shared.py::test_the_launch_dynamic_memory_stays_the_users*": _STATIC_PAST_48_KB,
    "test_one_kernel_many_specializations.py::*-user-bytes-used[]]": _STATIC_PAST_48_KB,
    "test_large_shared.py::test_shared_array_above_48_kb*":
        "coopgen.shared.array past 48 KB (a static array under the mlir backend)",
    "test_large_shared.py::test_the_launch_reports_its_dynamic_shared_memory": _LAUNCH_CONFIG,
    "test_large_shared.py::test_storages_below_the_limit_together_above_it": _LAUNCH_CONFIG,
    "test_large_shared.py::*past_the_device_opt_in*":
        "the clear error past the device's opt-in limit comes from numba-cuda's launch hook",
    "compat/test_coop_containers.py::*":
        "cuda.coop's kernels in compat/*_kernels.py are numba-cuda's: numba's types and "
        "extension API (numba.int32, numba.cuda.extending registrations), coop.gpu_dataclass, "
        "two-phase objects and sizes as kernel arguments",
}


def numba_cuda_only_reason(test: str):
    """The reason ``test`` ("path below tests/gpu/::name") is numba-cuda's only, or None."""
    return next((why for pattern, why in NUMBA_CUDA_ONLY.items() if fnmatch(test, pattern)), None)


def pytest_collection_modifyitems(config, items):
    if not MLIR:
        return
    for item in items:
        if not item.path.is_relative_to(HERE):  # collected beside tests/gpu (tests/mlir)
            continue
        reason = numba_cuda_only_reason(f"{item.path.relative_to(HERE).as_posix()}::{item.name}")
        if reason:
            item.add_marker(pytest.mark.skip(reason=f"numba-cuda only: {reason}"))


@pytest.fixture(autouse=True)
def _needs_a_gpu():
    # Only tests under tests/gpu see this fixture. The kernels still build (lazily) at import,
    # so a machine without a GPU reports every test here as skipped, never as an error.
    if not LINK_ON_CPU and not cuda.is_available():
        pytest.skip("no CUDA GPU")
