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
