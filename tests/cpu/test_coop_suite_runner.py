"""tools/coop_suite.py on the new cuda-coop suite's layout: where it finds the tests, the names
its alias folder serves (cuda.coop.numba_mlir, and numba-cuda under numba_cuda_mlir's names for
``--compiler numba_cuda``), and a whole run counted per file, on a small suite of the same
layout (NVIDIA's tests need a GPU)."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tools import coop_suite

RUNTIME = Path("python", "cuda_coop", "tests", "backends", "numba_mlir", "runtime")


def probe(folder: Path, code: str) -> str:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder),
                                                       os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                         capture_output=True, encoding="utf-8", errors="replace")
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text), encoding="utf-8")


def test_alias_serves_the_qualified_namespace_by_its_coopgen_name(tmp_path):
    """cuda.coop.numba_mlir is whatever module coopgen.coop.numba_mlir names (registered as
    coopgen registers coopgen.coop: a module by that name, and coopgen.coop's attribute)."""
    folder = coop_suite.alias_folder(tmp_path)
    out = probe(folder, """
        import sys, types
        import coopgen.coop
        qualified = types.ModuleType("coopgen.coop.numba_mlir")
        sys.modules[qualified.__name__] = coopgen.coop.numba_mlir = qualified
        import cuda.coop.numba_mlir as numba_coop
        from cuda import coop
        print(numba_coop is qualified, coop is coopgen.coop)
    """)
    assert out == "True True"


def test_numba_cuda_standin_is_numba_cuda_and_hides_the_mlir_backend(tmp_path):
    folder = coop_suite.alias_folder(tmp_path, "numba_cuda")
    out = probe(folder, """
        import importlib.metadata, sys
        import numba_cuda_mlir.cuda as cuda
        from numba_cuda_mlir import types
        import numba_cuda_mlir.numba_cuda.core.errors as errors
        import numba.cuda, numba.cuda.types, numba.cuda.core.errors
        try:
            importlib.metadata.version("numba-cuda-mlir")
            hidden = False
        except importlib.metadata.PackageNotFoundError:
            hidden = True
        from cuda import coop
        print(cuda is numba.cuda, types is numba.cuda.types,
              errors.NumbaPerformanceWarning is numba.cuda.core.errors.NumbaPerformanceWarning,
              hidden, "coopgen.mlir.backend" in sys.modules)
        # numba-cuda-mlir's own machinery (the suite's support module registers a type with it)
        # is inert: its registrations give back what they decorate; other modules stay unknown.
        from numba.cuda.extending import models
        from numba_cuda_mlir.models import StructModel, register_model
        from numba_cuda_mlir.extending import lowering_registry
        import numba_cuda_mlir._mlir.ir

        class Point:
            pass

        print(register_model(Point)(Point) is Point, StructModel is models.StructModel,
              lowering_registry.lower("Point", 1)(len) is len)
        try:
            import numba_cuda_mlir.no_such_module
        except ModuleNotFoundError as error:
            print(error.name)
    """)
    assert out.splitlines() == ["True True True True False", "True True True",
                                "numba_cuda_mlir.no_such_module"]


def test_a_kernel_written_for_numba_cuda_mlir_compiles_with_numba_cuda(tmp_path):
    """The suite's spelling (``from numba_cuda_mlir import cuda``) reaches coopgen's numba-cuda
    backend through the stand-in: the kernel links for sm_90."""
    folder = coop_suite.alias_folder(tmp_path, "numba_cuda")
    out = probe(folder, """
        import numpy as np
        from numba_cuda_mlir import cuda
        from cuda import coop
        from coopgen.linkcheck import link_as_launched

        @cuda.jit
        def kernel(d):
            d[cuda.threadIdx.x] = coop.warp.sum(d[cuda.threadIdx.x])

        link_as_launched(kernel, 32, np.zeros(32, np.int32))
        print(type(kernel).__module__.split(".")[0])
    """)
    assert out == "numba"


@pytest.mark.parametrize("where", ["root", "tests", "runtime", "file"])
def test_suite_is_found_from_any_folder_of_a_copy(tmp_path, where):
    runtime = tmp_path / RUNTIME
    write(runtime, {"test_x.py": "", "sub/test_y.py": ""})
    tests = tmp_path / "python" / "cuda_coop" / "tests"
    given = {"root": tmp_path, "tests": tests, "runtime": runtime,
             "file": runtime / "test_x.py"}[where]
    suite = coop_suite.find_suite(given)
    assert (suite.kind, suite.tests, suite.cwd) == ("new", tests, tests.parent)
    assert suite.select == ((runtime,) if where in ("root", "tests") else (given,))


def test_old_suite_and_other_folders(tmp_path):
    write(tmp_path / "tests" / "coop", {"helpers.py": ""})
    suite = coop_suite.find_suite(tmp_path / "tests" / "coop")
    assert (suite.kind, suite.cwd) == ("old", tmp_path)
    with pytest.raises(ValueError, match="neither cuda.coop's tests/coop folder"):
        coop_suite.find_suite(tmp_path / "tests")


SUITE = {
    # NVIDIA's root conftest audits its repository: the runner must not load it
    "conftest.py": "raise RuntimeError('the root conftest must not load')\n",
    "__init__.py": "", "backends/__init__.py": "", "backends/numba_mlir/__init__.py": "",
    "backends/numba_mlir/runtime/__init__.py": "", "backends/numba_mlir/support/__init__.py": "",
    "backends/numba_mlir/conftest.py": """
        import pytest

        @pytest.fixture
        def backend_name(backend_prerequisite):
            backend_prerequisite("numba_mlir", True, "always there")
            return "numba_mlir"
    """,
    "backends/numba_mlir/support/helper.py": "VALUE = 7\n",
    "backends/numba_mlir/runtime/test_names.py": """
        import os
        import pytest

        cuda = pytest.importorskip("numba_cuda_mlir.cuda")
        from cuda import coop

        from ..support.helper import VALUE

        pytestmark = pytest.mark.filterwarnings(
            "ignore::numba_cuda_mlir.numba_cuda.core.errors.NumbaPerformanceWarning")

        def test_compiler(backend_name, numpy_rng, deterministic_seed):
            import importlib
            want = {"numba_cuda": "numba.cuda", "numba_cuda_mlir": "numba_cuda_mlir.cuda"}
            compiler = os.environ["COOPGEN_SUITE_COMPILER"]
            assert cuda is importlib.import_module(want[compiler]), cuda
            assert VALUE == 7 and backend_name == "numba_mlir"

        def test_examples_are_importable(source_examples):
            from examples import sample
            assert sample.ANSWER == 42

        @pytest.mark.parametrize("n", [1, 2])
        def test_fails(n):
            assert n == 0

        def test_skips():
            pytest.skip("not here")
    """,
    "backends/numba_mlir/runtime/test_broken.py": "import cuda.coop._no_such_private\n",
    "../examples/__init__.py": "",
    "../examples/sample.py": "ANSWER = 42\n",
}


@pytest.mark.parametrize("compiler", ["numba_cuda", "numba_cuda_mlir"])
def test_run_counts_each_file_on_each_compiler(tmp_path, compiler, capsys):
    pytest.importorskip({"numba_cuda": "numba.cuda", "numba_cuda_mlir": "numba_cuda_mlir"}[compiler])
    tests = tmp_path / "python" / "cuda_coop" / "tests"
    write(tests, SUITE)
    table = tmp_path / "table.txt"
    status = coop_suite.main([str(tmp_path), "--compiler", compiler, "--table", str(table),
                              "-q"])
    assert status == 1  # failures
    rows = {line.split()[0]: line.split()[1:] for line in table.read_text(encoding="utf-8").splitlines()[1:]}
    assert rows["test_names.py"] == ["2", "2", "0", "1"]
    assert rows["test_broken.py"] == ["0", "0", "1", "0"]
    assert rows["total"] == ["2", "2", "1", "1"]
    assert f"kernels compiled by {compiler}" in capsys.readouterr().out


def test_a_compiler_not_installed_is_named(tmp_path, monkeypatch, capsys):
    write(tmp_path / "python" / "cuda_coop" / "tests", SUITE)
    real = coop_suite.importlib.util.find_spec
    monkeypatch.setattr(coop_suite.importlib.util, "find_spec",
                        lambda name, *a: None if name == "numba_cuda_mlir" else real(name, *a))
    with pytest.raises(SystemExit):
        coop_suite.main([str(tmp_path), "--compiler", "numba_cuda_mlir"])
    assert "numba_cuda_mlir is not installed" in capsys.readouterr().err


def test_old_suite_takes_no_other_compiler(tmp_path):
    write(tmp_path / "tests" / "coop", {"helpers.py": ""})
    with pytest.raises(SystemExit):
        coop_suite.main([str(tmp_path / "tests" / "coop"), "--compiler", "numba_cuda_mlir"])
