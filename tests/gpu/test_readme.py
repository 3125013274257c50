"""The README's kernel example runs as written, its checks against numpy included."""
import re
from pathlib import Path

import pytest
from gpu_util import for_compiler

pytestmark = pytest.mark.gpu


def test_readme_example_runs(tmp_path):
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    found = re.search(r"## A kernel\n\n```python\n(.*?)```", text, re.S)
    assert found, "README.md: no python block right under '## A kernel'"
    code = for_compiler(found.group(1))
    # It must launch a kernel and check what came back, or running it proves nothing.
    assert "@cuda.jit" in code and "assert" in code
    path = tmp_path / "readme_example.py"  # numba needs the source in a file
    path.write_text(code)
    exec(compile(code, str(path), "exec"), {"__name__": "readme_example"})
