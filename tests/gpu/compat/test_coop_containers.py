"""``from coopgen import coop``: containers, kernel-argument sizes, in-kernel TempStorage,
ThreadData and two-phase factories, on the GPU against numpy (kernels in coop_kernels.py and
conform_kernels.py)."""
import numpy as np
import pytest
from numba import cuda

from coop_kernels import (CASES, case_copy_sized_by_argument, copy_sized_by_argument)
from coop_util import assert_no_local_memory
from conform_kernels import CASES as TWO_PHASE_CASES

pytestmark = pytest.mark.gpu


def run(case):
    dev = [cuda.to_device(a) if isinstance(a, np.ndarray) else a for a in case.args]
    case.kernel[case.grid, case.block, 0, case.sharedmem](*dev)
    cuda.synchronize()
    case.check([d.copy_to_host() if hasattr(d, "copy_to_host") else d for d in dev])


@pytest.mark.parametrize("make_case", CASES + TWO_PHASE_CASES, ids=lambda c: c.__name__[5:])
def test_case(make_case):
    case = make_case(np.random.default_rng())
    run(case)
    assert_no_local_memory(case.kernel)


def test_kernel_is_specialised_per_argument_value():
    rng = np.random.default_rng()
    for ipt, dtype in ((4, np.int32), (8, np.int32), (2, np.int64), (4, np.int32)):
        run(case_copy_sized_by_argument(rng, ipt, dtype))
    assert_no_local_memory(copy_sized_by_argument)
