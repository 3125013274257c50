"""cuda.coop's run-time preconditions on the GPU: a valid_items outside the group's tile, or a
rotation outside the block, traps the kernel (a launch failure, never a read past the tile);
values inside the range give numpy's answer. Each trap runs in its own process: a trap poisons
the CUDA context."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from gpu_util import COMPILER

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import numpy as np
from {module} import cuda
from coopgen import coop

@cuda.jit
def load(source, destination, valid_items):
    items = coop.ThreadData(4, dtype=np.int32)
    coop.load(coop.this_block(), source, items, valid_items=valid_items, oob_default=-1)
    coop.store(coop.this_block(), destination, items)

@cuda.jit
def logical_warp_sum(source, output, valid_items):
    t = cuda.threadIdx.x
    output[t] = coop.sum(coop.this_warp().group_by(8), source[t], valid_items=valid_items)

@cuda.jit
def rotate(source, output, distance):
    t = cuda.threadIdx.x
    output[t] = coop.shuffle(coop.this_block(), source[t], mode="rotate", distance=distance)

source = np.arange(256, dtype=np.int32) + 1
output = np.zeros(256, dtype=np.int32)
{call}[1, 64](source, output, np.int64({value}))
cuda.synchronize()
if "{call}" == "load":
    want = np.where(np.arange(256) < {value}, source, -1)
    assert (output == want).all(), output
elif "{call}" == "rotate":
    assert (output[:64] == np.roll(source[:64], -{value})).all(), output[:64]
else:
    lanes = np.arange(64) % 8 == 0
    want = source[:64].reshape(8, 8)[:, :{value}].sum(axis=1)
    assert (output[:64][lanes] == want).all(), output[:64][lanes]
print("answered")
"""


def _run(call: str, value: int) -> subprocess.CompletedProcess:
    code = textwrap.dedent(SCRIPT.format(module=COMPILER, call=call, value=value))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, env=env,
                          encoding="utf-8", errors="replace", timeout=300)


@pytest.mark.parametrize("call,value", [("load", -1), ("load", 257), ("rotate", 0),
                                        ("rotate", 64), ("rotate", 1 << 40),
                                        ("logical_warp_sum", 9), ("logical_warp_sum", -3)])
def test_out_of_range_traps(call, value):
    run = _run(call, value)
    output = run.stdout + run.stderr
    assert run.returncode != 0 and "answered" not in output, output
    assert "CUDA_ERROR_ILLEGAL_INSTRUCTION" in output or "CUDA_ERROR_LAUNCH_FAILED" in output, \
        output


@pytest.mark.parametrize("call,value", [("load", 0), ("load", 256), ("load", 77),
                                        ("rotate", 1), ("rotate", 63),
                                        ("logical_warp_sum", 8), ("logical_warp_sum", 3)])
def test_in_range_answers(call, value):
    run = _run(call, value)
    assert run.returncode == 0 and "answered" in run.stdout, run.stdout + run.stderr


RUN_LENGTH_SCRIPT = """
import numpy as np
from {module} import cuda
from group_cases import run_length_checked

case = {case!r}
into = case in ("capacity", "relative_capacity", "fits")
offset_dtype = np.uint64 if case in ("sum_overflow64", "sum_max64") else np.uint32
kernel = run_length_checked(cuda, into, offset_dtype)

lengths = np.zeros(64, dtype=np.int64 if case == "negative_length" else np.uint64)
lengths[:6] = {{  # two runs a thread: positions 2 and 3 are thread 1's
    "negative_length": [3, -1, 4, 0, 0, 0],
    "interior_zero": [3, 2, 0, 4, 0, 0],  # within thread 1
    "interior_zero_across_threads": [3, 2, 4, 0, 0, 1],  # thread 1's zero, thread 2's run
    "sum_overflow32": [2**32 - 1, 1, 0, 0, 0, 0],
    "value_overflow32": [2**32, 1, 0, 0, 0, 0],
    "sum_overflow64": [2**63, 2**63, 0, 0, 0, 0],
    "sum_max64": [2**63, 2**63 - 1, 0, 0, 0, 0],
}}.get(case, [3, 2, 4, 0, 0, 0])
size = 9 if case == "fits" else 8 if case == "capacity" else 64
output = cuda.to_device(np.full(size, -1, dtype=np.int32))
relative = cuda.to_device(np.zeros(8 if case == "relative_capacity" else 64, offset_dtype))
kernel[1, 32](cuda.to_device(np.arange(64, dtype=np.int32) + 1), cuda.to_device(lengths),
              output, relative, np.int64(-1 if case == "negative_offset" else 0))
cuda.synchronize()
if into or case == "padding":
    want = np.repeat(np.arange(3) + 1, [3, 2, 4])
    assert (output.copy_to_host()[:9] == want).all(), output.copy_to_host()
print("answered")
"""


def _run_length(case: str) -> subprocess.CompletedProcess:
    code = textwrap.dedent(RUN_LENGTH_SCRIPT.format(module=COMPILER, case=case))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), str(ROOT / "tests" / "gpu"), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, env=env,
                          encoding="utf-8", errors="replace", timeout=300)


@pytest.mark.parametrize("case", ["negative_length", "interior_zero",
                                  "interior_zero_across_threads", "sum_overflow32",
                                  "value_overflow32", "sum_overflow64", "negative_offset",
                                  "capacity", "relative_capacity"])
def test_run_length_decoding_of_bad_runs_traps(case):
    """cuda.coop's run-length preconditions: no negative or interior empty run, lengths and
    their sum within the decoded offsets' type, a window or destination offset not negative,
    a destination (and relative offsets) holding every decoded item."""
    run = _run_length(case)
    output = run.stdout + run.stderr
    assert run.returncode != 0 and "answered" not in output, output
    assert "CUDA_ERROR_ILLEGAL_INSTRUCTION" in output or "CUDA_ERROR_LAUNCH_FAILED" in output, \
        output


@pytest.mark.parametrize("case", ["padding", "sum_max64", "fits"])
def test_run_length_decoding_at_the_limits_answers(case):
    """Zero-length padding after the runs, a sum of exactly 2**64 - 1 in uint64 offsets, a
    destination of exactly the decoded size: decoded, no trap."""
    run = _run_length(case)
    assert run.returncode == 0 and "answered" in run.stdout, run.stdout + run.stderr
