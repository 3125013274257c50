"""The supported numba-cuda / numba / numpy ranges: declared once (pyproject.toml), checked at
``import coopgen``, and their lowest ends are what CI's lowest-versions job installs."""
import importlib.metadata
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from coopgen import versions

ROOT = Path(__file__).resolve().parents[2]
DECLARED = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]


def test_this_environment_is_supported():
    assert versions.unsupported(DECLARED) == []


def test_an_unsupported_release_is_named_with_its_range():
    found = {"numba-cuda": "0.29.0", "numba": "0.68.1", "numpy": "2.5.0"}
    problems = versions.unsupported(DECLARED, installed=found.__getitem__)
    assert [(Requirement(r).name, v) for r, v in problems] == [("numba-cuda", "0.29.0"),
                                                               ("numpy", "2.5.0")]


def test_a_missing_package_is_reported():
    def installed(name):
        raise importlib.metadata.PackageNotFoundError(name)
    assert {v for _, v in versions.unsupported(DECLARED, installed=installed)} == {None}


def test_check_raises_one_import_error_naming_each(monkeypatch):
    monkeypatch.setattr(versions, "unsupported",
                        lambda: [("numba-cuda<0.31,>=0.30.0", "0.29.0")])
    with pytest.raises(ImportError, match=r"numba-cuda<0.31,>=0.30.0 \(found 0.29.0\).*"
                                          r"pip install 'numba-cuda<0.31,>=0.30.0'"):
        versions.check()


def test_ci_lowest_versions_are_the_declared_lower_bounds():
    lowest = {}
    for line in (ROOT / ".ci" / "lowest.txt").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, version = line.split("==")
            lowest[name.strip()] = version.strip()
    for line in DECLARED:
        req = Requirement(line)
        floors = [s.version for s in req.specifier if s.operator == ">="]
        if floors:
            assert req.name in lowest, f"{req.name}: no lowest version in .ci/lowest.txt"
            assert Version(lowest[req.name]) == Version(floors[0]), (req.name, lowest, floors)
