"""The supported numba-cuda / numba / numpy ranges: declared once (pyproject.toml), checked at
``import coopgen``, and their lowest ends are what CI's lowest-versions job installs."""
import importlib.metadata
from coopgen.generator.headers import tomllib  # tomli on Python 3.10
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from coopgen import versions

ROOT = Path(__file__).resolve().parents[2]
DECLARED = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]


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


PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _pins(name: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / ".ci" / name).read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            package, version = line.split("==")
            pins[package.strip()] = version.strip()
    return pins


@pytest.mark.parametrize("lowest, extra", [("lowest.txt", "cu13"), ("lowest-cu12.txt", "cu12")])
def test_ci_lowest_versions_are_the_declared_lower_bounds(lowest, extra):
    """Each toolchain's lowest file pins every range's floor: the highest floor that the base
    requirements and the toolchain's extra declare for a package."""
    floors: dict[str, Version] = {}
    for line in DECLARED + PROJECT["optional-dependencies"][extra]:
        req = Requirement(line)
        for spec in req.specifier:
            if spec.operator == ">=":
                floors[req.name] = max(floors.get(req.name, Version(spec.version)),
                                       Version(spec.version))
    pins = _pins(lowest)
    for name, floor in floors.items():
        assert name in pins, f"{name}: no lowest version in .ci/{lowest}"
        assert Version(pins[name]) == floor, (lowest, name, pins[name], str(floor))


def test_the_toolchain_extras_narrow_the_bare_install():
    """A bare install's toolchain range spans both majors and each extra narrows it to one, so
    that [cu12] never meets a CUDA 13 pin of the base (pip would find no solution)."""
    base = {Requirement(r).name: Requirement(r) for r in DECLARED}
    for extra, major in (("cu12", 12), ("cu13", 13)):
        for line in PROJECT["optional-dependencies"][extra]:
            req = Requirement(line)
            if req.name in ("cuda-toolkit", "cuda-bindings"):
                assert all(v.major == major for v in map(Version, (
                    s.version for s in req.specifier if s.operator == ">="))), line
                floor = next(Version(s.version) for s in req.specifier if s.operator == ">=")
                assert base[req.name].specifier.contains(floor), (line, base[req.name])
        assert f"numba-cuda[{extra}]" in PROJECT["optional-dependencies"][extra]
