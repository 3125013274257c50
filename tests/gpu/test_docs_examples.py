"""Every Python example on the documentation site's hand-written pages runs as written, its
checks against numpy included (tests/cpu/test_docs_site.py compiles them without a GPU)."""
import re
from pathlib import Path

import pytest
from gpu_util import for_compiler

pytestmark = pytest.mark.gpu

PAGES = sorted((Path(__file__).resolve().parents[2] / "docs").glob("*.md"))
EXAMPLES = [pytest.param(code, id=f"{page.stem}-{i}") for page in PAGES
            for i, code in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S))]


@pytest.mark.parametrize("code", EXAMPLES)
def test_example_runs(code, tmp_path):
    code = for_compiler(code)
    path = tmp_path / "docs_example.py"  # numba needs the source in a file
    path.write_text(code)
    exec(compile(code, str(path), "exec"), {"__name__": "docs_example"})
