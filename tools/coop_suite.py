"""Run cuda.coop's own test suites on coopgen, and count their results per file.

    python -m tools.coop_suite PATH/tests/coop [-n 16] [any pytest argument]
    python -m tools.coop_suite SUITE [--compiler numba_cuda|numba_cuda_mlir] [pytest arguments]

Two suites, told apart by their layout:

- **cuda.coop's suite** (``PATH/tests/coop``, its repository's ``python/cuda_cccl``, with its
  ``helpers.py`` and ``data/``): kernels written for numba-cuda, calls as ``coop.block.*`` and
  ``coop.warp.*``.
- **the new cuda-coop package's suite** (NVIDIA/cccl ``python/cuda_coop/tests``): the runtime
  tests of its numba-cuda-mlir backend, ``tests/backends/numba_mlir/runtime``, group-first calls
  (``coop.sum(coop.this_block(), x)``) under ``cuda.coop`` and the qualified namespace
  ``cuda.coop.numba_mlir``. SUITE is a copy's root (holding ``python/cuda_coop/tests``), its
  ``tests`` folder, or any folder or file below it (run alone). The tests write
  ``from numba_cuda_mlir import cuda``: ``--compiler numba_cuda_mlir`` (the default) runs them so;
  ``--compiler numba_cuda`` runs the same files with kernels compiled by numba-cuda, through a
  ``numba_cuda_mlir`` stand-in whose names are numba-cuda's (``cuda`` is ``numba.cuda``,
  ``types`` ``numba.cuda.types``, ``numba_cuda.X`` ``numba.cuda.X``; numba-cuda-mlir's own
  machinery, ``_mlir``, ``models``, ``lowering_utilities``, has no counterpart and fails to
  import). NVIDIA's ``tests/conftest.py`` audits a manifest of its repository that a copy lacks:
  the runner loads ``tools/coop_suite_fixtures.py`` in its place.

Nothing of a suite is copied into coopgen: the runner puts first on ``PYTHONPATH`` a folder holding
a ``cuda/coop`` package that is ``coopgen.coop`` under cuda.coop's name (its submodules too:
``cuda.coop.numba_mlir`` is ``coopgen.coop.numba_mlir``), so ``from cuda import coop`` in the
tests, their helpers and the child processes they start all get coopgen. It adds the one private
name test_block_scan.py of the old suite imports at module level,
``cuda.coop.block._block_scan.ScanOp``, so that file collects: the tests of ScanOp itself
(``known_ops``) test cuda.coop's internals and fail. Other tests import cuda.coop's private
modules (``_nvrtc``, ``_rewrite``, ``cuda.coop.numba_mlir._block``, ...), and fail or do not
collect; docs/coop.md lists them.

Two tests of the old test_block_scan.py (``simple6``, ``simple55``) import ``cffi``: install it.
The exit status is pytest's; the table (passed / failed / errors / skipped per file) is printed
at the end and written to ``--table FILE`` when given (pytest's JUnit XML beside it).
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from tools.coop_suite_fixtures import COMPILER_ENV, PACKAGE_ROOT_ENV

#: The package ``cuda.coop`` the tests import: coopgen.coop, each of its submodules under the
#: same name (``coopgen.coop.numba_mlir``, the qualified namespace, when coopgen has it), and
#: the stand-in of cuda.coop's private ScanOp.
ALIAS_PACKAGE = '''\
import importlib
import sys
import types

from coopgen import coop

try:  # the qualified namespace, by its name: cuda.coop.numba_mlir
    importlib.import_module("coopgen.coop.numba_mlir")
except ModuleNotFoundError as error:
    if error.name not in ("coopgen.coop.numba_mlir", "coopgen.coop"):
        raise

for name, module in list(sys.modules.items()):
    if name.startswith("coopgen.coop."):
        sys.modules["cuda.coop" + name[len("coopgen.coop"):]] = module


class ScanOp:
    """cuda.coop's private scan-operator classifier: not part of the API coopgen follows."""

    def __init__(self, op):
        raise NotImplementedError("cuda.coop.block._block_scan.ScanOp is private to cuda.coop")


_private = types.ModuleType("cuda.coop.block._block_scan")
_private.ScanOp = ScanOp
sys.modules[_private.__name__] = _private
sys.modules[__name__] = coop
'''

#: ``numba_cuda_mlir`` for ``--compiler numba_cuda``: the names the suite imports from it, as
#: numba-cuda's. coopgen picks a kernel's backend by its compiler, and loads the backend of each
#: compiler installed: this run has numba-cuda's only, so the stand-in hides numba-cuda-mlir's
#: distribution from coopgen's look-up (importlib.metadata) before coopgen is imported.
NUMBA_CUDA_MLIR_STANDIN = '''\
"""numba-cuda under numba-cuda-mlir's names (tools.coop_suite --compiler numba_cuda)."""
import importlib
import importlib.abc
import importlib.metadata
import importlib.util
import sys

#: numba_cuda_mlir's module -> numba-cuda's (a prefix maps its submodules too).
MODULES = {
    "numba_cuda_mlir.cuda": "numba.cuda",
    "numba_cuda_mlir.types": "numba.cuda.types",
    "numba_cuda_mlir.numba_cuda": "numba.cuda",
    "numba_cuda_mlir.extending": "numba.cuda.extending",
}
HIDDEN = "numba-cuda-mlir"


#: numba-cuda-mlir's own machinery (MLIR data models, lowering registry, MLIR bindings), which
#: the suite's support module imports to register a user type for numba-cuda-mlir beside
#: numba-cuda: here modules whose registrations do nothing (numba-cuda's are the ones used).
INERT = ("numba_cuda_mlir.models", "numba_cuda_mlir._mlir", "numba_cuda_mlir._mlir.ir",
         "numba_cuda_mlir._mlir.dialects", "numba_cuda_mlir._mlir.dialects.llvm",
         "numba_cuda_mlir.lowering_utilities")


class _Inert:
    """Any attribute; called or used as a decorator, it gives back what it decorates."""

    def __init__(self, name):
        self.__name__ = name

    def __getattr__(self, name):
        return _Inert(f"{self.__name__}.{name}")

    def __call__(self, *args, **kws):
        if len(args) == 1 and callable(args[0]) and not kws:
            return args[0]
        return _Inert(self.__name__)


def inert_module(fullname):
    import types as _types
    from numba.cuda.extending import models
    module = _types.ModuleType(fullname)
    module.__getattr__ = lambda name: _Inert(f"{fullname}.{name}")
    if fullname == "numba_cuda_mlir.models":
        module.StructModel = models.StructModel
        module.register_model = lambda *a, **k: (lambda cls: cls)
    return module


def target(fullname):
    if fullname in INERT:
        return fullname
    for name, other in MODULES.items():
        if fullname == name or fullname.startswith(name + "."):
            return other + fullname[len(name):]
    return None


class _StandIn(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``numba_cuda_mlir.X`` as numba-cuda's module (the same object, two names), and
    answers importlib.metadata that numba-cuda-mlir is not installed."""

    def find_spec(self, fullname, path=None, target_module=None):
        if target(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):
        if spec.name in INERT:
            return inert_module(spec.name)
        module = importlib.import_module(target(spec.name))
        if spec.name == "numba_cuda_mlir.extending" and not hasattr(module, "lowering_registry"):
            module.lowering_registry = _Inert("numba_cuda_mlir.extending.lowering_registry")
        return module

    def exec_module(self, module):
        pass

    def find_distributions(self, context=importlib.metadata.DistributionFinder.Context()):
        if context.name and context.name.replace("_", "-").lower() == HIDDEN:
            raise importlib.metadata.PackageNotFoundError(context.name)
        return iter(())


if not any(isinstance(finder, _StandIn) for finder in sys.meta_path):
    sys.meta_path.insert(0, _StandIn())
if "coopgen" in sys.modules and "coopgen.mlir.backend" in sys.modules:
    raise ImportError("coopgen was imported with numba-cuda-mlir's backend before the "
                      "numba_cuda_mlir stand-in of tools.coop_suite --compiler numba_cuda")

from numba import cuda  # noqa: E402
from numba.cuda import types  # noqa: E402
'''

#: The options the new suite runs under (not the pytest settings of whatever holds the copy).
PYTEST_INI = "[pytest]\n"
COMPILERS = ("numba_cuda", "numba_cuda_mlir")
PLUGIN = Path(__file__).with_name("coop_suite_fixtures.py")
#: The folder of the new suite's runtime tests, below its ``tests`` folder.
RUNTIME = Path("backends", "numba_mlir", "runtime")


def alias_folder(root: Path, compiler: str | None = None) -> Path:
    """A folder to put first on the path: ``cuda/coop/__init__.py`` naming coopgen.coop, the
    new suite's fixtures plugin and options, and with ``compiler="numba_cuda"`` the
    ``numba_cuda_mlir`` stand-in."""
    package = root / "cuda" / "coop"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(ALIAS_PACKAGE, encoding="utf-8")
    shutil.copyfile(PLUGIN, root / PLUGIN.name)
    (root / "pytest.ini").write_text(PYTEST_INI, encoding="utf-8")
    if compiler == "numba_cuda":
        standin = root / "numba_cuda_mlir"
        standin.mkdir(exist_ok=True)
        (standin / "__init__.py").write_text(NUMBA_CUDA_MLIR_STANDIN, encoding="utf-8")
    return root


@dataclasses.dataclass(frozen=True)
class Suite:
    """Where a suite is: ``kind`` "old" or "new"; the folder pytest runs in (``cwd``, the
    tests' repository: ``python/cuda_cccl`` or ``python/cuda_coop``), the paths it collects,
    and the folder holding the tests' helpers (old) or the tests (new)."""
    kind: str
    tests: Path
    cwd: Path
    select: tuple[Path, ...]


def find_suite(path: Path) -> Suite:
    path = path.resolve()
    if (path / "helpers.py").is_file():
        return Suite("old", path, path.parent.parent, (path,))
    for tests in (path / "python" / "cuda_coop" / "tests", path / "tests", path,
                  *path.parents):
        if (tests / RUNTIME).is_dir():
            select = path if tests in path.parents else tests / RUNTIME
            return Suite("new", tests, tests.parent, (select,))
    raise ValueError(f"{path} is neither cuda.coop's tests/coop folder (no helpers.py) nor in a "
                     f"copy of cuda-coop's tests (no python/cuda_coop/tests/{RUNTIME.as_posix()})")


def pytest_command(suite: Suite, junit: Path, alias: Path, pytest_args) -> list[str]:
    cmd = [sys.executable, "-m", "pytest", *map(str, suite.select), "-p", "no:cacheprovider",
           f"--junitxml={junit}", "-o", "junit_family=xunit1"]
    if suite.kind == "new":  # its options, its fixtures, the conftest files below backends/
        cmd += ["-c", str(alias / "pytest.ini"), f"--rootdir={suite.cwd}",
                "--continue-on-collection-errors",
                f"--confcutdir={suite.tests / 'backends'}", "-p", PLUGIN.stem]
    return cmd + list(pytest_args)


def suite_environment(suite: Suite, alias: Path, compiler: str | None) -> dict[str, str]:
    env = dict(os.environ)
    # the alias first; the old suite's folder for its helpers (its repository root, two above,
    # is the current folder, where a child process imports ``tests.coop.<file>``); the new
    # suite's repository is the current folder, where ``tests`` and ``examples`` are packages
    first = [str(alias)] + ([str(suite.tests)] if suite.kind == "old" else [])
    env["PYTHONPATH"] = os.pathsep.join([*first, env.get("PYTHONPATH", "")])
    if suite.kind == "new":
        env[PACKAGE_ROOT_ENV] = str(suite.cwd)
        env[COMPILER_ENV] = compiler
    return env


def counts_per_file(junit: Path) -> dict[str, collections.Counter]:
    """{test file: Counter(passed, failed, errors, skipped)} from pytest's JUnit XML."""
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for case in ET.parse(junit).iter("testcase"):
        name = (case.get("classname") or case.get("name") or "").split(".")  # or an import
        module = Path(case.get("file") or "").stem or next(
            (part for part in name if part.startswith("test_")), ".".join(name))
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed", "error": "errors"}.get(child.tag, child.tag)
        table[module + ".py"][outcome] += 1
    return dict(sorted(table.items()))


def format_table(table: dict[str, collections.Counter]) -> str:
    cols = ("passed", "failed", "errors", "skipped")
    width = max([len("file"), *map(len, table)])
    lines = [f"{'file':<{width}} " + " ".join(f"{c:>7}" for c in cols)]
    total: collections.Counter = collections.Counter()
    for name, counts in table.items():
        total.update(counts)
        lines.append(f"{name:<{width}} " + " ".join(f"{counts[c]:>7}" for c in cols))
    lines.append(f"{'total':<{width}} " + " ".join(f"{total[c]:>7}" for c in cols))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0], allow_abbrev=False)
    parser.add_argument("tests", type=Path,
                        help="cuda.coop's tests/coop folder, or a copy of cuda-coop's tests")
    parser.add_argument("--compiler", choices=COMPILERS,
                        help="the compiler of the new suite's kernels (default: numba_cuda_mlir, "
                             "as they are written); the old suite's are numba-cuda's")
    parser.add_argument("--table", type=Path, help="also write the per-file table here")
    parser.add_argument("--link-on-cpu", action="store_true",
                        help="the new suite without a GPU: each launch links its kernel for "
                             "sm_90 on the CPU, then the test is skipped (compile errors fail)")
    args, pytest_args = parser.parse_known_args(argv)
    try:
        suite = find_suite(args.tests)
    except ValueError as error:
        parser.error(str(error))
    if suite.kind == "old" and args.compiler not in (None, "numba_cuda"):
        parser.error("cuda.coop's tests/coop kernels are numba-cuda's: --compiler numba_cuda only")
    compiler = args.compiler or ("numba_cuda_mlir" if suite.kind == "new" else "numba_cuda")
    module = {"numba_cuda": "numba.cuda", "numba_cuda_mlir": "numba_cuda_mlir"}[compiler]
    if importlib.util.find_spec(module.split(".")[0]) is None:
        parser.error(f"--compiler {compiler}: {module.split('.')[0]} is not installed here "
                     f"(pip install {compiler.replace('_', '-')})")
    with tempfile.TemporaryDirectory(prefix="coop-suite-") as tmp:
        junit = Path(tmp) / "junit.xml"
        # the old suite's kernels are numba-cuda's: no stand-in, numba-cuda-mlir may sit beside it
        alias = alias_folder(Path(tmp) / "alias", compiler if suite.kind == "new" else None)
        env = suite_environment(suite, alias, compiler)
        if args.link_on_cpu:
            env["COOPGEN_SUITE_LINK_ON_CPU"] = "1"
        run = subprocess.Popen(pytest_command(suite, junit, alias, pytest_args), cwd=suite.cwd,
                               env=env)
        try:
            status = run.wait()
        except KeyboardInterrupt:  # pytest has it too: it still writes what it ran
            status = run.wait()
        if junit.is_file():
            text = format_table(counts_per_file(junit))
            print(f"{suite.kind} suite, kernels compiled by {compiler}")
            print(text)
            if args.table:  # and pytest's own record beside it
                args.table.write_text(text + "\n", encoding="utf-8")
                args.table.with_suffix(".xml").write_bytes(junit.read_bytes())
    return status


if __name__ == "__main__":
    sys.exit(main())
