"""cuda.coop's group-first API (``coop.sum(coop.this_block(), x)``) on the GPU, against numpy:
every group call across dtypes and 1-, 2- and 3-D blocks, on the compiler COOPGEN_COMPILER
names (tests/gpu/group_cases.py holds the kernels)."""
import numpy as np
import pytest
from gpu_util import block_id, cuda, dtype_id, launch, nthreads, rng_for, to_device, to_host
from group_cases import CASES, GRID, ITEMS, cluster_queries, want_cluster_queries

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


def _compare(got, want, dtype):
    if want is None:
        return
    want = np.asarray(want, dtype=object)
    defined = np.array([w is not None for w in want])
    g, w = np.asarray(got)[defined], want[defined].astype(np.asarray(got).dtype)
    if np.dtype(dtype).kind == "f" and np.asarray(got).dtype.kind == "f":
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-3)
    else:
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("case, dtype, block", PARAMS)
def test_group_call(case, dtype, block):
    args, outs, threads = _run(case, dtype, block)
    if case.name.startswith("topk"):
        x = args[0].reshape(GRID, threads * ITEMS)
        got = outs[0].reshape(GRID, threads * ITEMS)[:, :16]
        big = case.params["largest"]
        want = np.sort(x, axis=1)[:, ::-1][:, :16] if big else np.sort(x, axis=1)[:, :16]
        np.testing.assert_array_equal(np.sort(got, axis=1), np.sort(want, axis=1))
        return
    wants = case.want(args, threads)
    for got, want in zip(outs, wants):
        _compare(got, want, dtype)
    if case.name.startswith("sort_2"):  # pairs: each value is the index of its key
        keys, values = outs
        np.testing.assert_array_equal(args[0][values.reshape(GRID, -1) + np.arange(GRID)[:, None]
                                              * threads * ITEMS].reshape(-1), keys)


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
