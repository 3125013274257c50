"""The numba-cuda internals coopgen reads (coopgen.numba_internals) are still where it reads
them. A numba-cuda upgrade that moves one fails here, naming it, instead of deep in lowering."""
import pickle

import numpy as np
import pytest
from numba.cuda import types
from numba.cuda.extending import intrinsic

import coopgen
from coopgen import block, local
from coopgen.lower import numba_internals


def test_every_internal_is_where_coopgen_reads_it():
    problems = numba_internals.problems()
    assert not problems, ("numba-cuda changed internals coopgen relies on (see "
                          "coopgen/numba_internals.py):\n  " + "\n  ".join(problems))


SEEN = []


@intrinsic
def _probe(typingctx):
    def codegen(context, builder, sig, args):
        SEEN.append((numba_internals.lowering_site(), numba_internals.compiling_for_cc()))
        return context.get_dummy_value()
    return types.none(), codegen


def _kernel_with_probe(x):
    if x[0] > 0:
        x[1] = 1
    _probe()


@pytest.mark.parametrize("cc", [(8, 0), (9, 0)])
def test_lowering_sees_its_function_block_and_cc(cc):
    from numba import cuda

    SEEN.clear()
    cuda.compile_all(_kernel_with_probe, (types.int32[::1],), device=False, abi="numba", cc=cc,
                     output="ltoir")
    (site, seen_cc), = SEEN
    assert site is not None, "lowering_site() found no lower_function_body frame"
    func_ir, label = site
    assert func_ir.func_id.func is _kernel_with_probe
    assert label in func_ir.blocks and label != min(func_ir.blocks)  # the block after the if
    assert seen_cc == cc


def test_outside_lowering_there_is_no_site_or_cc():
    assert numba_internals.lowering_site() is None
    assert numba_internals.compiling_for_cc() is None


def test_a_kernel_library_linking_coopgen_ltoir_pickles():
    """What @cuda.jit(cache=True) stores: the code library with its shim bundle's LTO-IR."""
    from numba.cuda.compiler import compile_cuda
    from numba.cuda.cudadrv.linkable_code import LTOIR

    def k(x):
        items = local.array(4, np.int32)
        block.load(x, items)
        x[0] = block.sum(items)

    assert numba_internals.install_kernel_cache()
    with coopgen.block_shape(128):
        library = compile_cuda(k, None, (types.int32[::1],), cc=(9, 0)).library
    (bundle,) = [f for f in library._linking_files if isinstance(f, LTOIR)]
    restored = pickle.loads(pickle.dumps(library))
    (copy,) = restored._linking_files
    assert isinstance(copy, LTOIR) and bytes(copy.data) == bytes(bundle.data)


def test_a_bfloat16_kernel_library_pickles_with_numba_cudas_shim_source():
    """bfloat16 arithmetic links numba-cuda's own shim (CUDA source in memory), which numba-cuda
    alone refuses to pickle ("Cannot pickle CUDACodeLibrary with linking files"): the cache keeps
    it beside coopgen's LTO-IR, and the restored library has both to link."""
    from numba.cuda import bfloat16
    from numba.cuda.compiler import compile_cuda
    from numba.cuda.cudadrv.linkable_code import CUSource, LTOIR

    def k(x, y):
        items = local.array(4, np.float32)
        block.load(x, items)
        y[0] = bfloat16(block.sum(items)) * bfloat16(x[0])

    assert numba_internals.install_kernel_cache()
    with coopgen.block_shape(128):
        library = compile_cuda(k, None, (types.float32[::1], types.bfloat16[::1]),
                               cc=(9, 0)).library
    kinds = sorted(type(f).__name__ for f in library._linking_files)
    assert kinds == ["CUSource", "LinkedShimBundle"], kinds
    restored = pickle.loads(pickle.dumps(library))
    by_kind = {type(f): f for f in restored._linking_files}
    assert set(by_kind) == {CUSource, LTOIR}
    (shim,) = [f for f in library._linking_files if isinstance(f, CUSource)]
    assert by_kind[CUSource].data == shim.data and "__nv_bfloat16" in by_kind[CUSource].data
