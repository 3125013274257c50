"""cuda.coop's group-first API (``coop.sum(coop.this_block(), x)``) on the GPU, against numpy:
every group call across dtypes and 1-, 2- and 3-D blocks, on the compiler COOPGEN_COMPILER
names (tests/gpu/group_cases.py holds the kernels)."""
import numpy as np
import pytest
from gpu_util import block_id, cuda, dtype_id, launch, nthreads, rng_for, to_device, to_host
from group_cases import CASES, GRID, check, cluster_queries, want_cluster_queries

pytestmark = pytest.mark.gpu

PARAMS = [pytest.param(case, dt, block, id=f"{case.name}-{dtype_id(dt)}-{block_id(block)}")
          for case in CASES for dt in case.dtypes for block in case.blocks]


def _run(case, dtype, block):
    threads = nthreads(block)
    args = case.inputs(dtype, threads, rng_for(case.name, dtype_id(dtype), block))
    kernel = case.make(cuda, **case.params)
    d_args = [to_device(a) for a in args]
    launch(kernel, GRID, block, *d_args)
    return args, [to_host(d) for d in d_args[len(args) - case.outputs:]], threads


@pytest.mark.parametrize("case, dtype, block", PARAMS)
def test_group_call(case, dtype, block):
    args, outs, threads = _run(case, dtype, block)
    check(case, dtype, args, outs, threads)


def test_cluster_queries_and_sync():
    """this_cluster()'s rank, count, is_member and sync in clusters of two blocks (sm_90; a
    launch with ``cluster=``, which numba-cuda-mlir's dispatcher takes)."""
    if cuda.get_current_device().compute_capability < (9, 0):
        pytest.skip("thread-block clusters need sm_90")
    kernel = cluster_queries(cuda)
    try:
        configured = kernel.configure((4, 1, 1), (64, 1, 1), cluster=(2, 1, 1))
    except TypeError:
        pytest.skip("this compiler's dispatcher launches no clusters (no configure(cluster=))")
    out = to_device(np.zeros(5 * 4 * 64, np.int64))
    configured(out)
    np.testing.assert_array_equal(to_host(out), want_cluster_queries(4, 64, 2))
