"""The package layout DESIGN.md asks for: a plain install gives a working `from coopgen import block`."""
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_lists_every_generated_package():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = {p for p in cfg["packages"] if p.startswith("coopgen._generated.")}
    on_disk = {f"coopgen._generated.{d.name}" for d in (ROOT / "bindings" / "_generated").iterdir()
               if (d / "__init__.py").is_file()}
    assert listed == on_disk
    assert cfg["package-dir"] == {"coopgen": "bindings", "coopgen.generator": "generator"}
    assert not (ROOT / "coopgen").exists()  # would shadow the installed package


def test_plain_install_imports(tmp_path):
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "--target", str(target), str(ROOT)], check=True, capture_output=True)
    code = ("import coopgen, coopgen.generator.cli; from coopgen import block, warp; "
            "assert coopgen.__file__.startswith(%r); print(len(block.__all__))" % str(target))
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, check=True,
                         capture_output=True, text=True, env={"PYTHONPATH": str(target)})
    assert int(out.stdout) > 20
