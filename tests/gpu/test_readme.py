"""The README's kernel example runs as written."""
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu


def test_readme_example_runs(tmp_path):
    text = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    code = re.search(r"## A kernel\n\n```python\n(.*?)```", text, re.S).group(1)
    path = tmp_path / "readme_example.py"  # numba needs the source in a file
    path.write_text(code)
    exec(compile(code, str(path), "exec"), {"__name__": "readme_example"})
