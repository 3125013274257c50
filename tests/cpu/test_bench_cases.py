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

# Static shared memory of the nvcc-built kernels (ptxas -v): coopgen must not need more.
NATIVE_SMEM = {"sum": 44, "scan": 16912, "sort": 16912, "merge_sort": 16912, "histogram": 10304,
               "warp_sum": 0, "warp_scan": 16928, "sum_f64": 80, "sort_i64": 33808,
               "sort_i64_1024": 0, "coop_scan": 16912, "coop_sort": 16912}  # its storage is dynamic, in both builds


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
