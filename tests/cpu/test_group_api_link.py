"""Every group call of cuda.coop's group-first API links for sm_90 under each numba compiler
installed: one kernel per case of tests/gpu/group_cases.py, at the case's last block shape (3-D
where the case has one)."""
import importlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from group_cases import CASES, cluster_queries  # noqa: E402

COMPILERS = [c for c in ("numba", "numba_cuda_mlir") if importlib.util.find_spec(c)]


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_group_call_links(case, compiler):
    from coopgen.linkcheck import link_as_launched
    cuda = importlib.import_module(compiler).cuda
    dtype, block = case.dtypes[0], case.blocks[-1]
    threads = int(np.prod(block))
    args = case.inputs(dtype, threads, np.random.default_rng(0))
    res = link_as_launched(case.make(cuda, **case.params), block, *args)
    assert res.kernel.local_bytes == 0 and res.kernel.spill_stores == 0


@pytest.mark.parametrize("compiler", COMPILERS)
def test_cluster_queries_link_to_its_registers(compiler):
    """this_cluster()'s queries and sync (PTX's %cluster_ctarank, %cluster_nctarank and
    barrier.cluster, sm_90) compile and link."""
    from coopgen.linkcheck import link_as_launched
    cuda = importlib.import_module(compiler).cuda
    res = link_as_launched(cluster_queries(cuda), 64, np.zeros(5 * 64, np.int64))
    assert res.kernel.local_bytes == 0 and res.kernel.spill_stores == 0


@pytest.mark.parametrize("compiler", COMPILERS)
def test_thread_data_sized_by_a_kernel_argument_compiles_per_value(compiler):
    """cuda.coop's examples size ThreadData by a kernel argument: each value the launch passes
    compiles its own kernel (numba's literal dispatch), with the items the value says."""
    from coopgen import coop
    from coopgen.linkcheck import link_as_launched
    cuda = importlib.import_module(compiler).cuda

    @cuda.jit
    def tile_sum(source, output, items_per_thread):
        block = coop.this_block()
        items = coop.ThreadData(items_per_thread)
        scratch = cuda.local.array(items_per_thread, dtype=np.int32)
        coop.load(block, source, items)
        total = coop.sum(block, items)
        scanned = coop.exclusive_sum(block, items)
        for i in range(items_per_thread):
            scratch[i] = scanned[i] + total
        coop.store(block, output, scratch)

    cubins = set()
    for items_per_thread in (1, 3):
        source = np.arange(64 * items_per_thread, dtype=np.int32)
        res = link_as_launched(tile_sum, 64, source, np.zeros_like(source), items_per_thread)
        assert res.kernel.local_bytes == 0 and res.kernel.spill_stores == 0
        cubins.add(res.cubin)
    assert len(cubins) == 2  # one kernel per value


def _trap_kernels(cuda, coop):
    @cuda.jit
    def load_then_store(source, destination, valid_items):
        items = coop.ThreadData(4, dtype=np.int32)
        coop.load(coop.this_block(), source, items, valid_items=valid_items)
        coop.store(coop.this_block(), destination, items)

    @cuda.jit
    def rotate(source, observed, distance):
        t = cuda.threadIdx.x
        observed[t] = coop.shuffle(coop.this_block(), source[t], mode="rotate",
                                   distance=distance)

    @cuda.jit
    def logical_warp_sum(source, output, valid_items):
        t = cuda.threadIdx.x
        output[t] = coop.sum(coop.this_warp().group_by(8), source[t], valid_items=valid_items)

    @cuda.jit
    def full_tile(source, destination, unused):
        items = coop.ThreadData(4, dtype=np.int32)
        coop.load(coop.this_block(), source, items)
        coop.store(coop.this_block(), destination, items)

    return {"load_then_store": (load_then_store, 1), "rotate": (rotate, 1),
            "logical_warp_sum": (logical_warp_sum, 1), "full_tile": (full_tile, 0)}


def _ptx(compiler, kernel, args, block=64) -> str:
    """The linked PTX of ``kernel`` for ``args``, as launched with ``block`` threads."""
    from coopgen.linkcheck import launch_config_on_cpu, link_ptx
    if compiler == "numba":
        from numba.cuda.typing.typeof import Purpose, typeof
    else:
        from numba_cuda_mlir.numba_cuda.typing.typeof import Purpose, typeof
    signature = tuple(typeof(a, Purpose.argument) for a in args)
    with launch_config_on_cpu(kernel, block, args):
        return link_ptx(kernel, signature)


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("name", ["load_then_store", "rotate", "logical_warp_sum", "full_tile"])
def test_run_time_counts_and_distances_are_checked_on_the_device(compiler, name):
    """cuda.coop traps on a run-time valid_items outside the tile or a rotation outside the
    block: one PTX trap per checked argument, none where nothing is given at run time."""
    from coopgen import coop
    cuda = importlib.import_module(compiler + ".cuda")
    kernel, traps = _trap_kernels(cuda, coop)[name]
    args = (np.arange(256, dtype=np.int32), np.zeros(256, np.int32), np.int64(5))
    assert _ptx(compiler, kernel, args).count("trap;") == traps


@pytest.mark.parametrize("compiler", COMPILERS)
@pytest.mark.parametrize("into", [False, True])
def test_run_length_preconditions_are_checked_on_the_device(compiler, into):
    """cuda.coop traps on run lengths CUB cannot decode (negative, an empty run before a
    non-empty one, past the decoded offsets' type alone or summed), a negative window or
    destination offset, a destination too small: the kernel carries the traps (tests/gpu's
    test_group_api_traps runs them, test_run_length_window the checks' logic)."""
    from group_cases import run_length_checked
    kernel = run_length_checked(importlib.import_module(compiler + ".cuda"), into)
    args = (np.arange(64, dtype=np.int32), np.zeros(64, np.int64), np.zeros(64, np.int32),
            np.zeros(64, np.uint32), np.int64(0))
    # one trap a check at least (LLVM may merge some): negative or interior empty runs, the
    # sum, the offset; the destination's and the relative offsets' room
    assert _ptx(compiler, kernel, args).count("trap;") >= (4 if into else 3)
