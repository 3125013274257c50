"""The benchmark's coopgen kernels (tools/bench/cases.py) compile and link for sm_90 on the CPU,
with as many registers and as much shared memory as budgeted, so the GPU benchmark cannot rot
unnoticed between GPU runs."""
import sys
from pathlib import Path

import numpy as np
import pytest

from coopgen.linkcheck import link_as_launched

sys.path.insert(0, str(Path(__file__).parents[2] / "tools" / "bench"))
import cases  # noqa: E402

NATIVE_SMEM = cases.NATIVE_SMEM


#: What the numba-cuda-mlir backend does not do yet (docs/numba-cuda-mlir.md)
MLIR_LIMITS = {
    "sort_i64_1024": "its shims keep 64-bit shared-memory pointers: 1024 threads' 64 registers "
                     "spill",
}


@pytest.mark.parametrize("compiler", ("numba", "numba_cuda_mlir"))
@pytest.mark.parametrize("name", list(cases.CASES))
def test_bench_kernel_links(name, compiler, monkeypatch, request):
    if compiler != "numba":
        pytest.importorskip(compiler)
    monkeypatch.setenv("COOPGEN_COMPILER", compiler)  # the compiler the kernels are made for
    if compiler != "numba" and name in MLIR_LIMITS:  # runs, and must still fail
        request.applymarker(pytest.mark.xfail(reason=MLIR_LIMITS[name], strict=True))
    case = cases.CASES[name]
    args = (np.empty(1, cases.INPUT_DTYPE.get(name, case.dtype)), np.empty(1, case.dtype),
            *case.extra_args)
    res = link_as_launched(case.make(), case.threads, *args)
    assert res.local_bytes == 0
    assert res.smem <= NATIVE_SMEM[name]
