"""cuda.coop's group-first calls in CuTe DSL kernels on a GPU: the twins of numba's group
kernels (group_kernels.py) give numba's numpy answers (tests/gpu/group_cases.py's inputs and
references, compared as tests/gpu/test_group_api.py compares them), over each case's dtypes
and its 1-D and 2-D blocks. Skipped without a GPU."""
import numpy as np
import pytest
from group_kernels import CASES, kernel_of, launcher, nthreads, pointers
from kernels import DeviceArray

from group_cases import check  # noqa: I001 (tests/gpu: on the path once group_kernels is)

import cutlass.cute as cute

pytestmark = pytest.mark.gpu

PARAMS = [pytest.param(case, dt, block, id=f"{case.name}-{np.dtype(dt).name}-"
                       f"{'x'.join(map(str, block)) if isinstance(block, tuple) else block}")
          for case in CASES for dt in case.dtypes for block in case.blocks
          if not isinstance(block, tuple) or len(block) <= 2]


def _seed(*params) -> int:
    import zlib
    return zlib.crc32(repr(params).encode())


@pytest.mark.parametrize("case, dtype, block", PARAMS)
def test_group_call_gives_numbas_answer(device, case, dtype, block):
    threads = nthreads(block)
    args = case.inputs(dtype, threads, np.random.default_rng(_seed(case.name, dtype, block)))
    bufs = [DeviceArray(device, a) for a in args]
    compiled = cute.compile(launcher(kernel_of(case, dtype), args, block), *pointers(args))
    compiled(*pointers(args, [b.address for b in bufs]))
    device.sync()
    outs = [b.get() for b in bufs[len(args) - case.outputs:]]
    check(case, dtype, args, outs, threads)
