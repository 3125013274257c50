"""Every Python block of README.md and of the documentation site's hand-written pages runs as
written, its checks against numpy included (tools/docs_code.py says how blocks are read;
tests/cpu/test_docs_site.py links their kernels without a GPU). Blocks written for numba-cuda
run under COOPGEN_COMPILER's compiler; blocks written for another compiler, or needing PyTorch,
are skipped where it is not installed."""
import sys

import pytest
from gpu_util import ROOT, for_compiler

sys.path.insert(0, str(ROOT))  # the repository root: tools/
from tools import docs_code  # noqa: E402

pytestmark = pytest.mark.gpu
#: What a block written for each compiler needs installed (numba-cuda is coopgen's own).
NEEDS = {"numba_cuda_mlir": "numba_cuda_mlir", "cute": "cutlass"}


@pytest.mark.parametrize("block", [pytest.param(b, id=ident) for ident, b in docs_code.runnable()])
def test_example_runs(block, tmp_path):
    if block.compiler in NEEDS:
        pytest.importorskip(NEEDS[block.compiler])
    if block.needs_torch:
        pytest.importorskip("torch")
    code = for_compiler(block.code)
    path = tmp_path / "docs_example.py"  # numba needs the source in a file
    path.write_text(code, encoding="utf-8")
    exec(compile(code, str(path), "exec"), {"__name__": "docs_example"})
