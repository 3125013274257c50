"""CuTe DSL backend tests: skipped where nvidia-cutlass-dsl is not installed; kernels.py is the
kernels they share. CuTe DSL compiles without a GPU once given an arch (kernels.py sets
CUTE_DSL_ARCH)."""
import sys
from pathlib import Path

import pytest

pytest.importorskip("cutlass", reason="nvidia-cutlass-dsl is not installed (coopgen[cute])")
sys.path.insert(0, str(Path(__file__).parent))  # kernels.py
