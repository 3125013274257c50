"""The pytest fixtures cuda.coop's new suite takes from the conftest files above its backends.

NVIDIA's ``tests/conftest.py`` also audits a conformance-evidence manifest of its own repository
(``support/coverage.py``, ``contracts/coverage.toml``) that a copy of the numba-cuda-mlir tests
lacks, so tools.coop_suite stops pytest's conftest lookup below it (``--confcutdir``) and loads
this plugin instead: the fixtures those tests request, the markers they set, and nothing more.
The conftest files of ``backends/numba_mlir`` and its ``runtime`` folder still load.
"""
from __future__ import annotations

import hashlib
import importlib
import os
import random
import types
from pathlib import Path

import pytest

#: The markers NVIDIA's tests set (its conftest registers them; an unknown one only warns).
MARKERS = (
    "backend_core", "backend_cutlass", "backend_numba_mlir", "contract", "unit", "compile",
    "runtime", "gpu", "stress", "qualification", "link", "docs", "examples", "packaging",
    "evidence_for(scenario, backend, evidence): the conformance cell a test earns",
)
#: Where the tests' repository keeps its ``examples`` package: tools.coop_suite sets it.
PACKAGE_ROOT_ENV = "COOPGEN_SUITE_PACKAGE_ROOT"
#: The compiler of the suite's kernels; with "numba_cuda" the ``numba_cuda_mlir`` stand-in is
#: imported first, before anything imports coopgen.
COMPILER_ENV = "COOPGEN_SUITE_COMPILER"
#: Mixed into every test's seed (NVIDIA's ``--coop-random-seed``).
SEED_ENV = "COOPGEN_SUITE_SEED"
#: The qualified namespace of each backend the tests name.
BACKEND_MODULES = {"numba_mlir": "cuda.coop.numba_mlir", "cutlass": "cuda.coop.cutlass"}


#: With "1", a launch links the kernel on the CPU (sm_90) as the launch would compile it, then
#: skips the test: the compile errors of a suite, without a GPU (tools.coop_suite --link-on-cpu).
LINK_ON_CPU_ENV = "COOPGEN_SUITE_LINK_ON_CPU"


def pytest_configure(config):
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    if os.environ.get(COMPILER_ENV) == "numba_cuda":
        importlib.import_module("numba_cuda_mlir")
    if os.environ.get(LINK_ON_CPU_ENV) == "1":
        _link_launches_on_cpu()


def _link_launches_on_cpu() -> None:
    """``kernel[grid, block](*args)`` of either compiler links on the CPU, then skips."""
    import numpy as np

    from coopgen.linkcheck import link_as_launched

    cuda = importlib.import_module("numba_cuda_mlir").cuda
    dispatcher = type(cuda.jit(lambda: None))
    cuda.is_available = lambda: True  # the modules that skip without a GPU collect
    # those reading the device's compute capability at import see the one linked for
    cuda.get_current_device = lambda: types.SimpleNamespace(compute_capability=(9, 0))
    # the arrays a test makes before its launch are host arrays (typed as the device's are)
    cuda.to_device = lambda array, *args, **kws: np.array(array)
    cuda.device_array = lambda shape, dtype=np.float64, *args, **kws: np.zeros(shape, dtype)
    cuda.device_array_like = lambda array, *args, **kws: np.zeros_like(array)

    def getitem(kernel, config):
        block = config[1] if isinstance(config, tuple) and len(config) > 1 else 1

        def launch(*args):
            link_as_launched(kernel, block, *args)
            pytest.skip("linked on the CPU")
        return launch

    dispatcher.__getitem__ = getitem
    dispatcher.configure = lambda kernel, grid, block, *args, **kws: getitem(kernel,
                                                                             (grid, block))


def package_root() -> Path:
    return Path(os.environ[PACKAGE_ROOT_ENV])


@pytest.fixture(scope="session")
def backend_prerequisite():
    """``check(backend, available, reason)``: skip the test when a prerequisite is missing."""
    def check(backend: str, available: bool, reason: str) -> None:
        # linking on the CPU needs no GPU (its launches skip after the link)
        if not available and os.environ.get(LINK_ON_CPU_ENV) != "1":
            pytest.skip(f"{backend}: {reason}")
    return check


@pytest.fixture
def deterministic_seed(request) -> int:
    """A seed fixed by the test's node id (and COOPGEN_SUITE_SEED), recorded on the report."""
    digest = hashlib.sha256(request.node.nodeid.encode()).digest()
    seed = int.from_bytes(digest[:8], "little") ^ int(os.environ.get(SEED_ENV, "0"), 0)
    request.node.user_properties.append(("seed", seed))
    return seed


@pytest.fixture
def python_rng(deterministic_seed) -> random.Random:
    return random.Random(deterministic_seed)


@pytest.fixture(autouse=True)
def deterministic_rng(deterministic_seed):
    """Seed Python's and NumPy's global generators for the test, restore them after it, and
    give the test its own NumPy generator."""
    import numpy as np

    saved = random.getstate(), np.random.get_state()
    random.seed(deterministic_seed)
    np.random.seed(deterministic_seed % 2**32)
    try:
        yield np.random.default_rng(deterministic_seed)
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])


@pytest.fixture
def numpy_rng(deterministic_rng):
    return deterministic_rng


@pytest.fixture
def scoped_env(monkeypatch):
    """``update(NAME=value, OTHER=None)``: set or remove variables until the test ends."""
    def update(**values) -> None:
        for name, value in values.items():
            if value is None:
                monkeypatch.delenv(name, raising=False)
            else:
                monkeypatch.setenv(name, os.fspath(value))
    return update


@pytest.fixture
def failure_artifact_dir(tmp_path) -> Path:
    folder = tmp_path / "artifacts"
    folder.mkdir()
    return folder


@pytest.fixture
def compiler_cache_dir(failure_artifact_dir, scoped_env) -> Path:
    folder = failure_artifact_dir / "compiler-cache"
    folder.mkdir()
    scoped_env(CUDA_CACHE_PATH=folder / "cuda", CUPY_CACHE_DIR=folder / "cupy",
               NUMBA_CACHE_DIR=folder / "numba")
    return folder


@pytest.fixture
def source_examples(monkeypatch) -> Path:
    """The tests' repository on ``sys.path`` for the test, so ``import examples...`` works."""
    monkeypatch.syspath_prepend(str(package_root()))
    return package_root() / "examples"


@pytest.fixture
def synchronize_backend():
    def synchronize(backend: str) -> None:
        if backend != "numba_mlir":
            raise ValueError(f"no synchronizer for backend {backend!r} here")
        importlib.import_module("numba_cuda_mlir.cuda").synchronize()
    return synchronize


@pytest.fixture
def optional_backend():
    def load(backend: str):
        if backend not in BACKEND_MODULES:
            raise ValueError(f"unknown cuda.coop backend {backend!r}")
        try:
            return importlib.import_module(BACKEND_MODULES[backend])
        except ImportError as error:
            pytest.skip(f"{backend} backend is unavailable: {error}")
    return load
