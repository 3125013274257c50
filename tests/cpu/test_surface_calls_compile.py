"""Every kernel of tests/gpu/compat/surface_cases.py (cuda.coop's spellings on coopgen.block and
coopgen.warp) compiles and links for sm_90 without a GPU, with no local memory."""
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu" / "compat"))

import coopgen  # noqa: E402
from coopgen.linkcheck import link_cubin  # noqa: E402
from surface_cases import CASES  # noqa: E402

#: One specialisation per case keeps the suite fast; the GPU test sweeps dtypes and shapes.
SHAPES = {"exchange_in_place": (np.float32, (16, 8), 3), "two_phase": (np.int64, (8, 4, 4), 2),
          "warp_reductions_and_scans": (np.uint16, 64, 1)}


@pytest.mark.parametrize("name", list(CASES))
def test_surface_case_links_for_sm90(name):
    dtype, blk, ipt = SHAPES.get(name, (np.int32, 128, 4))
    case = CASES[name](np.random.default_rng(), dtype, blk, ipt)
    sig = tuple(numba.typeof(a) for a in case.args)
    with coopgen.block_shape(case.block):
        res = link_cubin(case.kernel, sig)
    assert res.local_bytes == 0 and res.spill_stores == 0
