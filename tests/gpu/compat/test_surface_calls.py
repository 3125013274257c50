"""coopgen.block / coopgen.warp called with cuda.coop's spellings, on the GPU against numpy
(the kernels and answers are in surface_cases.py)."""
import numpy as np
import pytest
from gpu_util import cuda, launch, to_device, to_host

from surface_cases import CASES, PARAMS

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("dtype, blk, ipt", PARAMS,
                         ids=[f"{np.dtype(d).name}-{b}-ipt{i}" for d, b, i in PARAMS])
@pytest.mark.parametrize("name", list(CASES))
def test_surface_call(name, dtype, blk, ipt):
    case = CASES[name](np.random.default_rng(), dtype, blk, ipt)
    args = [to_device(a) if isinstance(a, np.ndarray) else a for a in case.args]
    launch(cuda.jit(case.kernel), 1, case.block, *args)
    case.check([to_host(a) if hasattr(a, "copy_to_host") else a for a in args])
