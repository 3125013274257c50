"""CuTe DSL backend tests: skipped where nvidia-cutlass-dsl is not installed; kernels.py is the
kernels they share. CuTe DSL compiles without a GPU once given an arch (kernels.py sets
CUTE_DSL_ARCH)."""
import os
import sys
import tempfile
from pathlib import Path

import pytest

# where cute.KeepPTX/KeepCUBIN write their files (else the working directory): a folder of this
# process's own, set before cutlass is imported. The files are named by the launch function
# and its argument types, so pytest-xdist's workers (which inherit the controller's environment)
# would otherwise read each other's kernels.
os.environ["CUTE_DSL_DUMP_DIR"] = tempfile.mkdtemp(prefix="coopgen-cute-dumps-")

pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed (coopgen[cute])")
sys.path.insert(0, str(Path(__file__).parent))  # kernels.py


@pytest.fixture(scope="module")
def device():
    """The GPU's cuda.core device, current (the GPU tests skip without one)."""
    from cuda.core import Device
    try:
        dev = Device(0)  # Device() would query a current context first: sanitizer noise
        dev.set_current()
    except Exception as e:  # noqa: BLE001 (no driver, no device)
        pytest.skip(f"no CUDA GPU ({e})")
    return dev
