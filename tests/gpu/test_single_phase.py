"""cuda.coop.numba_mlir's single-phase calls in the forms NVIDIA's suite uses (positional tile
items and valid counts, dtype keywords, ``offset=``, two-phase radix calls, qualified
``radix_rank_keys``) on the GPU, against numpy (tests/gpu/single_phase_cases.py holds them)."""
import numpy as np
import pytest
from gpu_util import cuda, launch, to_device, to_host
from single_phase_cases import CASES, THREADS

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_single_phase_call(case):
    args = case.inputs(np.random.default_rng(7))
    wants = case.want(args)
    d_args = [to_device(a) if isinstance(a, np.ndarray) else a for a in args]
    launch(case.make(cuda), 1, THREADS, *d_args)
    for index, want in wants.items():
        got = np.asarray(to_host(d_args[index]))
        want = np.asarray(want, dtype=object)
        defined = np.array([w is not None for w in want])
        np.testing.assert_array_equal(got[defined], want[defined].astype(got.dtype),
                                      err_msg=f"{case.name}: argument {index}")
