"""The documentation: the site builds with warnings as errors, every fenced block of README.md and
of the hand-written pages names its language, and every Python block runs its host code and
compiles and links each kernel it launches, for sm_90 without a GPU (tools/docs_code.py says
how blocks are read; tests/gpu/test_docs_examples.py runs them on a GPU, checks included)."""
import ast
import importlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from coopgen.generator import headers
from coopgen.generator.headers import tomllib  # tomli on Python 3.10

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # the repository root: tools/
from tools import docs_code  # noqa: E402

PAGES = sorted((ROOT / "docs").glob("*.md"))  # hand-written; docs/api/ is generated
README = (ROOT / "README.md").read_text(encoding="utf-8")
#: The module a compiler's ``cuda`` is; None: a block's kernels cannot be linked here yet.
CUDA_MODULES = {"numba": "numba.cuda", "numba_cuda_mlir": "numba_cuda_mlir.cuda", "host": None,
                "cute": None}


def test_pages_and_nav_agree():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert PAGES and all(f": {p.name}" in nav for p in PAGES)
    for entry in headers.load_lock():
        assert f"api/{entry.cccl}/index.md" in nav


def test_site_builds_strict(tmp_path):
    if shutil.which("mkdocs") is None and subprocess.run(
            [sys.executable, "-c", "import mkdocs"]).returncode:
        pytest.skip("mkdocs is not installed (pip install -e '.[dev]')")
    out = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir",
                          str(tmp_path / "site")], cwd=ROOT, capture_output=True, encoding="utf-8", errors="replace")
    assert out.returncode == 0, out.stderr[-4000:]
    assert (tmp_path / "site" / "api" / "3.0.1" / "block_scan" / "index.html").is_file()
    assert (tmp_path / "site" / "changelog" / "index.html").is_file()


def test_every_fence_names_its_language():
    assert docs_code.problems() == []


def test_the_checks_see_every_python_block():
    # Only Python blocks a note marks as not run escape, and the notes stay few.
    python = [b for b in docs_code.all_blocks() if b.language == "python"]
    skipped = [b for b in python if not b.runs]
    # not run: three fragments of pytorch.md
    assert len(python) >= 25 and len(skipped) <= 4, [(b.page, b.line) for b in skipped]
    assert all(b.not_run.strip() for b in skipped)


def test_readme_is_a_front_door():
    assert len(README.splitlines()) <= 150
    # one kernel per compiler, each of which the CPU suite links (below) and the GPU suite runs
    readme = [b for b in docs_code.blocks(ROOT / "README.md") if b.runs]
    assert {"numba", "numba_cuda_mlir"} <= {b.compiler for b in readme}
    assert "<!-- cute kernel -->" in README or "cute" in {b.compiler for b in readme}


def test_start_here_pages_open_with_code_that_runs():
    """Each page the README's "start here" table sends a reader to exists, and its first
    example is a block the CPU suite links and the GPU suite runs."""
    table = README.split("## Start here", 1)[1].split("\n## ", 1)[0]
    table = re.sub(r"<!--.*?-->", "", table, flags=re.S)  # rows not switched on yet
    targets = re.findall(r"\]\((docs/[\w.-]+\.md)\)", table)
    assert len(targets) >= 4, table
    for target in targets:
        first = next(b for b in docs_code.blocks(ROOT / target) if b.language == "python")
        assert first.runs, f"{target}: its first Python block is marked not run"


def _shell_lines():
    for b in docs_code.all_blocks():
        if b.language == "bash":
            for line in b.code.replace("\\\n", " ").splitlines():  # continued lines joined
                yield f"{b.page}:{b.line}", line.split("  #", 1)[0].strip()


def _sources(line: str) -> list[Path]:
    """The repository files whose options a shell line uses: coopgen's CLI, a script, a module."""
    found = [ROOT / "generator" / "cli.py"] if re.match(r"(\S+=\S+ )*coopgen ", line) else []
    found += [ROOT / m for m in re.findall(r"(?:^|\s)((?:tools|examples)/[\w/.-]+\.py)", line)]
    for module in re.findall(r"-m (tools(?:\.\w+)+)", line):
        path = ROOT / module.replace(".", "/")
        found += sorted(path.glob("*.py")) if path.is_dir() else [path.with_suffix(".py")]
    return found


def test_shell_blocks_name_what_exists():
    """Shell blocks are not run, but what they name is checked against the repository: coopgen's
    subcommands, the scripts and modules and the options given to them, paths, and extras."""
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
                 ["optional-dependencies"])
    cli = (ROOT / "generator" / "cli.py").read_text(encoding="utf-8")
    commands = set(re.findall(r'add_parser\("([\w-]+)"', cli))
    bad, checked = [], 0
    for where, line in _shell_lines():
        for sub in re.findall(r"(?:^|\s)coopgen ([a-z][\w-]*)", line):
            checked += 1
            if sub not in commands:
                bad.append(f"{where}: coopgen has no subcommand {sub!r}: {line}")
        for path in re.findall(r"(?:^|\s)((?:tools|examples|tests|\.ci)/[\w/.-]*\w)", line):
            checked += 1
            if not (ROOT / path).exists():
                bad.append(f"{where}: no {path} in the repository: {line}")
        for extra in re.findall(r"(?:coopgen|\.)\[([\w,-]+)\]", line):
            checked += 1
            bad += [f"{where}: no extra {e!r} in pyproject.toml" for e in extra.split(",")
                    if e not in extras]
        sources = _sources(line)
        text = "".join(p.read_text(encoding="utf-8") for p in sources if p.is_file())
        for option in re.findall(r"(?:^|\s)(--[a-z][\w-]*)", line) if sources else ():
            checked += 1
            if f'"{option}"' not in text:
                bad.append(f"{where}: {option} is not an option of {sources[0].name}: {line}")
    assert checked >= 30 and not bad, "\n".join(bad)


def test_journeys_start_with_code_and_end_with_limits():
    """The pages of the nav's "Start here" section open with code (before their first section)
    and close with a "Limits" section."""
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    section = nav.split("  - Start here:\n", 1)[1].split("\n  - ", 1)[0]
    journeys = re.findall(r": (\S+\.md)$", section, re.M)
    assert len(journeys) >= 5, journeys
    for page in journeys:
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        first_section = text.find("\n## ")
        assert -1 < text.find("\n```") < first_section, f"{page}: no code before its first section"
        assert re.findall(r"^## (.+)$", text, re.M)[-1] == "Limits", f"{page}: no closing Limits"


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
    """Compile and link the kernel for sm_90 as this launch would (block shape, argument types
    and values), with no GPU: by the backend of the kernel's compiler."""
    from coopgen.linkcheck import link_as_launched
    torch_launcher = sys.modules.get("coopgen.torch.launcher")
    if torch_launcher is not None and isinstance(kernel, torch_launcher.Launcher):
        kernel, args = kernel.kernel, _as_the_launcher_passes(kernel, args)
    result = link_as_launched(kernel, block, *args, arch=(9, 0))
    assert result.cubin


def _as_the_launcher_passes(launcher, args) -> list:
    """A coopgen.torch launch's arguments as its first launch hands them to numba, with host
    arrays for the (CPU) tensors: its views and scalar types applied."""
    out = []
    for i, a in enumerate(args):
        if hasattr(a, "numpy"):
            a = a.numpy()
            view = launcher.views.get(i)
            a = a if view is None else a.reshape(-1) if view == "flat" else \
                a.reshape(-1).view(np.dtype(view))
        elif i in launcher.scalars and type(a) in (int, float):
            a = launcher.scalars[i](a)
        out.append(a)
    return out


class _OnTheHost(ast.NodeTransformer):
    """A PyTorch block on a CPU build of PyTorch: its tensors made in host memory
    (``device="cuda"`` -> ``"cpu"``), and nothing from its first use of ``torch.cuda`` on
    (streams, synchronization: they need a GPU)."""

    def visit_keyword(self, node):
        if node.arg == "device" and isinstance(node.value, ast.Constant) and \
                node.value.value == "cuda":
            node.value = ast.Constant("cpu")
        return node

    def visit_Module(self, node):
        self.generic_visit(node)
        uses_gpu = [i for i, stmt in enumerate(node.body) if any(
            isinstance(n, ast.Attribute) and n.attr == "cuda" and isinstance(n.value, ast.Name)
            and n.value.id == "torch" for n in ast.walk(stmt))]
        if uses_gpu:
            node.body = node.body[:uses_gpu[0]]
        return node


@pytest.mark.parametrize("block", [pytest.param(b, id=ident) for ident, b in docs_code.runnable()])
def test_example_compiles(block, tmp_path, monkeypatch):
    if block.needs_torch:  # linked from CPU tensors; tests/gpu/test_docs_examples.py runs it
        pytest.importorskip("torch", reason="PyTorch is not installed")
    if block.compiler == "numba_cuda_mlir":
        pytest.importorskip("numba_cuda_mlir", reason="numba-cuda-mlir is not installed")
    elif block.compiler == "cute":
        pytest.skip("a CuTe DSL block: tests/cute/test_cute_backend.py links it (coopgen[cute])")
    if CUDA_MODULES[block.compiler]:
        cuda = importlib.import_module(CUDA_MODULES[block.compiler])
        # Host arrays stand in for device arrays: same types, no GPU.
        monkeypatch.setattr(cuda, "to_device", lambda a, *_, **__: np.asarray(a))
        monkeypatch.setattr(cuda, "device_array_like", lambda a, *_, **__: np.empty_like(a))
        monkeypatch.setattr(cuda, "device_array",
                            lambda shape, dtype=np.float64, *_, **__: np.empty(shape, dtype))
    tree = ast.parse(block.code)
    if block.needs_torch:
        tree = _OnTheHost().visit(tree)
    tree = _up_to_last_launch(ast.fix_missing_locations(_Launches().visit(tree)))
    if block.needs_torch:
        assert any(isinstance(n, ast.Name) and n.id == "_launch" for n in ast.walk(tree)), \
            "a PyTorch block whose kernels launch only after it uses torch.cuda links nothing here"
    path = tmp_path / "example.py"  # numba reads kernels' source from a file
    path.write_text(block.code, encoding="utf-8")
    exec(compile(tree, str(path), "exec"), {"__name__": "docs_example", "_launch": _launch})
