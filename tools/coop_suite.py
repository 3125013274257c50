"""Run cuda.coop's own test suite on coopgen, and count its results per file.

    python -m tools.coop_suite PATH/tests/coop [-n 16] [any pytest argument]

PATH/tests/coop is cuda.coop's test folder as its repository lays it out (python/cuda_cccl),
with its ``data/`` (Mamba's reference ``.npz``). Nothing of it is copied here: the runner puts
first on ``PYTHONPATH`` a folder holding a ``cuda/coop`` package that is ``coopgen.coop`` under
cuda.coop's name (its submodules too), so ``from cuda import coop`` in the tests, their helpers
and the child processes they start all get coopgen. It adds the one private name
test_block_scan.py imports at module level, ``cuda.coop.block._block_scan.ScanOp``, so that
file collects: the tests of ScanOp itself (``known_ops``) test cuda.coop's internals and fail.
Other tests import cuda.coop's private modules (``_nvrtc``, ``_rewrite``, ...), and fail or do
not collect; docs/coop.md lists them.

Two tests of test_block_scan.py (``simple6``, ``simple55``) import ``cffi``: install it too.
The exit status is pytest's; the table (passed / failed / errors / skipped per file) is printed
at the end and written to ``--table FILE`` when given (pytest's JUnit XML beside it).
"""
from __future__ import annotations

import argparse
import collections
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

#: The package ``cuda.coop`` the tests import: coopgen.coop, each of its submodules under the
#: same name, and the stand-in of cuda.coop's private ScanOp.
ALIAS_PACKAGE = '''\
import sys
import types

from coopgen import coop

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


def alias_folder(root: Path) -> Path:
    """A folder to put first on the path: ``cuda/coop/__init__.py`` naming coopgen.coop."""
    package = root / "cuda" / "coop"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text(ALIAS_PACKAGE)
    return root


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests", type=Path, help="cuda.coop's tests/coop folder")
    parser.add_argument("--table", type=Path, help="also write the per-file table here")
    args, pytest_args = parser.parse_known_args(argv)
    tests = args.tests.resolve()
    if not (tests / "helpers.py").is_file():
        parser.error(f"{tests} is not cuda.coop's tests/coop folder (no helpers.py)")
    with tempfile.TemporaryDirectory(prefix="coop-suite-") as tmp:
        junit = Path(tmp) / "junit.xml"
        env = dict(os.environ)
        # the alias first; the tests folder for its helpers; the tests' repository root (two
        # above) as the current folder, where a child process imports ``tests.coop.<file>``
        env["PYTHONPATH"] = os.pathsep.join(
            [str(alias_folder(Path(tmp) / "alias")), str(tests), env.get("PYTHONPATH", "")])
        cmd = [sys.executable, "-m", "pytest", str(tests), "-p", "no:cacheprovider",
               f"--junitxml={junit}", "-o", "junit_family=xunit1", *pytest_args]
        run = subprocess.Popen(cmd, cwd=tests.parent.parent, env=env)
        try:
            status = run.wait()
        except KeyboardInterrupt:  # pytest has it too: it still writes what it ran
            status = run.wait()
        if junit.is_file():
            text = format_table(counts_per_file(junit))
            print(text)
            if args.table:  # and pytest's own record beside it
                args.table.write_text(text + "\n")
                args.table.with_suffix(".xml").write_bytes(junit.read_bytes())
    return status


if __name__ == "__main__":
    sys.exit(main())
