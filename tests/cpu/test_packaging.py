"""The package layout DESIGN.md asks for: a plain install gives a working `from coopgen import block`."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import coopgen
from coopgen.generator.headers import tomllib  # tomli on Python 3.10

ROOT = Path(__file__).resolve().parents[2]


def test_layout():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert cfg["package-dir"] == {"coopgen": "bindings", "coopgen.generator": "generator"}
    assert "packages" not in cfg  # setup.py finds them, the lock entries' packages among them
    assert not (ROOT / "coopgen").exists()  # would shadow the installed package


@pytest.fixture(scope="module")
def plain_install(tmp_path_factory):
    """coopgen installed with a plain (non-editable) `pip install`, outside any checkout."""
    import fcntl
    import tempfile

    target = tmp_path_factory.mktemp("site")
    # pip builds in the checkout (build/, *.egg-info, the shipped headers): one build at a
    # time, whichever test worker gets here first
    with open(Path(tempfile.gettempdir()) / "coopgen-plain-install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                              "--target", str(target), str(ROOT)], capture_output=True,
                             encoding="utf-8", errors="replace")
    assert out.returncode == 0, out.stderr[-3000:]
    return target


def _run(target, *args, cwd):
    env = {"PYTHONPATH": str(target), "PATH": os.environ.get("PATH", ""),
           "HOME": os.environ.get("HOME", str(cwd))}
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, encoding="utf-8", errors="replace",
                          env=env)


def test_plain_install_imports(plain_install, tmp_path):
    code = ("import coopgen, coopgen.generator.cli; from coopgen import block, warp; "
            "assert coopgen.__file__.startswith(%r); print(len(block.__all__))" % str(plain_install))
    out = _run(plain_install, "-c", code, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) > 20


def test_plain_install_ships_every_lock_entry(plain_install):
    from coopgen.generator.headers import load_lock

    for entry in load_lock():
        pkg = plain_install / "coopgen" / "_generated" / entry.tag
        assert (pkg / "__init__.py").is_file() and (pkg / "cub_api.json").is_file(), entry.cccl
        assert (pkg / "block_reduce.py").is_file()


def test_the_build_ships_the_default_entrys_headers():
    """setup.py copies the default lock entry's headers into the package from the wheel that
    [build-system] requires; a runtime dependency on that wheel would fight the toolkit's CCCL."""
    from coopgen.generator.headers import load_lock
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    default = load_lock()[0]
    assert default.wheel in pyproject["build-system"]["requires"]
    assert not any(r.startswith("nvidia-cuda-cccl") for r in pyproject["project"]["dependencies"])


def test_plain_install_ships_headers_and_types(plain_install):
    from coopgen.generator.headers import load_lock
    entry = load_lock()[0]
    shipped = plain_install / "coopgen" / "_cccl" / entry.cccl
    assert (shipped / "DIGEST").read_text(encoding="utf-8").strip() == entry.headers_digest
    assert (shipped / "cub" / "block" / "block_reduce.cuh").is_file()
    assert (plain_install / "coopgen" / "py.typed").is_file()


def test_packaged_lock_is_the_checkouts():
    assert (ROOT / "bindings" / "_generated" / "cub_headers.lock").read_text(encoding="utf-8") == \
        (ROOT / "cub_headers.lock").read_text(encoding="utf-8")


def test_cli_works_from_a_plain_install(plain_install, tmp_path):
    """coverage, diff and doctor read what the package ships; only generate needs a checkout."""
    cli = ("-m", "coopgen.generator.cli")
    out = _run(plain_install, *cli, "coverage", "--json", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report and "BlockReduce" in json.dumps(report)
    out = _run(plain_install, *cli, "diff", "3.0.1", "3.5.0", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "WarpReduceBatched" in out.stdout
    out = _run(plain_install, *cli, "doctor", cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    from coopgen.generator.headers import load_lock
    assert f"CCCL {load_lock()[0].cccl}: headers OK (shipped with coopgen" in out.stdout
    out = _run(plain_install, *cli, "--version", cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.strip() == f"coopgen {coopgen.__version__}"
    out = _run(plain_install, *cli, "generate", cwd=tmp_path)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "checkout" in lines[0], out.stderr
