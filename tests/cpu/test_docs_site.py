"""The documentation site: it builds with warnings as errors, and every Python example on the
hand-written pages compiles and links for sm_90 without a GPU (tests/gpu/test_docs_examples.py
runs them on a GPU, checks included)."""
import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import cuda

import coopgen
from coopgen.generator import headers
from coopgen.linkcheck import link_cubin

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted((ROOT / "docs").glob("*.md"))  # hand-written; docs/api/ is generated


def python_examples():
    for page in PAGES:
        blocks = re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)
        for i, code in enumerate(blocks):
            yield pytest.param(code, id=f"{page.stem}-{i}")


def test_pages_and_nav_agree():
    nav = (ROOT / "mkdocs.yml").read_text()
    assert PAGES and all(f": {p.name}" in nav for p in PAGES)
    for entry in headers.load_lock():
        assert f"api/{entry.cccl}/index.md" in nav


def test_site_builds_strict(tmp_path):
    if shutil.which("mkdocs") is None and subprocess.run(
            [sys.executable, "-c", "import mkdocs"]).returncode:
        pytest.skip("mkdocs is not installed (pip install -e '.[dev]')")
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                          str(tmp_path / "site")], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-4000:]
    assert (tmp_path / "site" / "api" / "3.0.1" / "block_scan" / "index.html").is_file()


class _Launches(ast.NodeTransformer):
    """``kernel[grid, block](args)`` -> ``_launch(kernel, block, args)``."""

    def visit_Call(self, node):
        self.generic_visit(node)
        f = node.func
        if isinstance(f, ast.Subscript) and isinstance(f.slice, ast.Tuple) and \
                len(f.slice.elts) == 2:
            return ast.Call(ast.Name("_launch", ast.Load()),
                            [f.value, f.slice.elts[1]] + node.args, node.keywords)
        return node


def _up_to_last_launch(tree: ast.Module) -> ast.Module:
    """Without the statements after the last launch: they check results a GPU computes."""
    launches = [i for i, stmt in enumerate(tree.body)
                if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and
                       n.func.id == "_launch" for n in ast.walk(stmt))]
    if launches:
        tree.body = tree.body[:launches[-1] + 1]
    return tree


def _launch(kernel, block, *args):
    """Compile and link the kernel for sm_90 as this launch would (block shape and argument
    types), with no GPU."""
    from numba import typeof

    with coopgen.block_shape(block):
        link_cubin(kernel, tuple(typeof(a) for a in args))


@pytest.mark.parametrize("code", python_examples())
def test_example_compiles(code, tmp_path, monkeypatch, capsys):
    # Host arrays stand in for device arrays: same numba types, no GPU.
    monkeypatch.setattr(cuda, "to_device", lambda a, *_, **__: np.asarray(a))
    monkeypatch.setattr(cuda, "device_array_like", lambda a, *_, **__: np.empty_like(a))
    monkeypatch.setattr(cuda, "device_array",
                        lambda shape, dtype=np.float64, *_, **__: np.empty(shape, dtype))
    tree = _up_to_last_launch(ast.fix_missing_locations(_Launches().visit(ast.parse(code))))
    path = tmp_path / "example.py"  # numba reads kernels' source from a file
    path.write_text(code)
    exec(compile(tree, str(path), "exec"), {"__name__": "docs_example", "_launch": _launch})
