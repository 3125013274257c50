"""Randomized differential suite, CI-sized: configurations drawn from the generated specs
(tools/fuzz), run in batched kernels and compared with numpy.

The draw changes every day (the seed is the date) unless COOPGEN_FUZZ_SEED fixes it; every
xdist worker draws the same configurations. COOPGEN_FUZZ_CONFIGS sets how many (default 120).
A failure prints one line per configuration with the command that reproduces it. The full
driver: ``python -m tools.fuzz --configs 10000 --workers 16``.
"""
import datetime
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: tools/

from tools.fuzz import runner, space  # noqa: E402

pytestmark = pytest.mark.gpu

SEED = int(os.environ.get("COOPGEN_FUZZ_SEED") or
           datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d"))
#: Under numba-cuda-mlir, as ``python -m tools.fuzz --backend mlir``: no half or complex items.
DTYPES = [*space.ALL_DTYPES, "record"] if runner.compiler() == "numba_cuda_mlir" else None
CONFIGS = space.draw(int(os.environ.get("COOPGEN_FUZZ_CONFIGS", "120")), SEED, dtypes=DTYPES)
BATCHES = runner.batches_of(CONFIGS, 6)


@pytest.mark.parametrize("batch", BATCHES, ids=[
    f"{i}-{'x'.join(map(str, b[0].block))}" for i, b in enumerate(BATCHES)])
def test_matches_numpy(batch):
    if os.environ.get("COOPGEN_GPU_TESTS_LINK_ON_CPU") == "1":  # see gpu_util.py
        bad = [r.line() for r in runner.run_batch(batch, compile_only=True)
               if r.status != "compiled"]
        assert not bad, "\n".join(bad)
        pytest.skip("linked on the CPU")
    results = runner.run_batch(batch)
    bad = [r.line() for r in results if r.status != "ok"]
    assert not bad, f"seed {SEED}:\n" + "\n".join(bad)


#: Configurations that once failed (``--repro`` lines), run on every compiler.
REGRESSIONS = [
    # numba-cuda-mlir: a record array's length counted bytes, so the group call's copy of
    # the keys ran past both arrays (odd item counts kept the loop; it faulted)
    '{"cls":"BlockMergeSort","sig":"Sort(KeyT (&)[ItemsPerThread], CompareOp)","surface":"group",'
    '"dtype":"record","value_dtype":"","block":[32],"ipt":13,"tkw":[],"op":"py_rec_less",'
    '"omit":[],"warp":0,"seed":1803394410,"storage":"implicit","ctor":""}',
    '{"cls":"BlockMergeSort","sig":"Sort(KeyT (&)[ItemsPerThread], CompareOp)","surface":"group",'
    '"dtype":"record","value_dtype":"","block":[8,4],"ipt":13,"tkw":[],"op":"py_rec_less",'
    '"omit":[],"warp":0,"seed":787058733,"storage":"shared","ctor":""}',
    '{"cls":"BlockMergeSort","sig":"Sort(KeyT (&)[ItemsPerThread], CompareOp)","surface":"group",'
    '"dtype":"record","value_dtype":"","block":[32],"ipt":11,"tkw":[],"op":"py_rec_less",'
    '"omit":[],"warp":0,"seed":501094675,"storage":"implicit","ctor":""}',
]


@pytest.mark.parametrize("line", REGRESSIONS, ids=range(len(REGRESSIONS)))
def test_a_configuration_that_failed_matches_numpy(line):
    test_matches_numpy([space.Config.from_json(line)])
