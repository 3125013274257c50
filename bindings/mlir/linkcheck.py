"""Link numba-cuda-mlir kernels without a GPU: the kernel compiled to LTO-IR with its link items
(coopgen's bundle, operators), linked by coopgen.codegen.link for an explicit arch."""
import contextlib

import numba_cuda_mlir.tools

from ..codegen.link import _link, link_pieces
from ..resolve.hooks import block_shape


@contextlib.contextmanager
def _device_cc(arch):
    """Workaround: numba-cuda-mlir 0.6.0 asks the device for its compute capability even when
    the target is given, and links for the larger of the two; a CPU link check answers it."""
    saved = numba_cuda_mlir.tools._cached_cc
    numba_cuda_mlir.tools._cached_cc = tuple(arch)
    try:
        yield
    finally:
        numba_cuda_mlir.tools._cached_cc = saved


def compile_kernel_pieces(kernel, signature, *, arch=(9, 0)):
    """[kernel LTO-IR, *link items] of ``kernel`` compiled for sm_<arch>."""
    from numba_cuda_mlir.compiler import _compile_and_optimize
    options = {"lto": True, "_compile_output": "ltoir", "chip": f"sm_{arch[0]}{arch[1]}"}
    jit_options = getattr(kernel, "targetoptions", {})  # as the launch compiles it
    options.update({k: jit_options[k] for k in ("launch_bounds", "max_registers", "fastmath")
                    if jit_options.get(k) is not None})
    with _device_cc(arch):
        cres = _compile_and_optimize(getattr(kernel, "py_func", kernel), tuple(signature),
                                     options)
    return [cres.metadata["ltoir"], *cres.metadata["linked_external_link_items"]]


def link_cubin(kernel, signature, *, arch=(9, 0), optimize_unused_variables: bool = False):
    return link_pieces(compile_kernel_pieces(kernel, signature, arch=arch), arch=arch,
                       optimize_unused_variables=optimize_unused_variables,
                       max_registers=getattr(kernel, "targetoptions", {}).get("max_registers"))


def link_ptx(kernel, sig, *, arch=(9, 0), pieces=None) -> str:
    pieces = compile_kernel_pieces(kernel, sig, arch=arch) if pieces is None else pieces
    return _link(pieces, arch, "ptx", ptx=True)[0].decode()


@contextlib.contextmanager
def launch_config_on_cpu(kernel, block, args=()):
    """Compile as ``kernel[grid, block](*args)`` would, without a GPU to launch on (the block
    shape; a size read from a kernel argument comes through literal dispatch, which
    link_as_launched follows as the launch does)."""
    with block_shape(block):
        yield


def link_as_launched(kernel, block, *args, arch=(9, 0)):
    """Link ``kernel`` as ``kernel[grid, block](*args)`` would compile it."""
    from numba_cuda_mlir.numba_cuda import types
    from numba_cuda_mlir.numba_cuda.core.errors import ForceLiteralArg
    from numba_cuda_mlir.numba_cuda.typing.typeof import Purpose, typeof
    sig = tuple(typeof(a, Purpose.argument) for a in args)
    with launch_config_on_cpu(kernel, block, args):
        while True:
            try:
                return link_cubin(kernel, sig, arch=arch)
            except ForceLiteralArg as request:  # the dispatcher's literal re-entry
                if any(isinstance(sig[i], types.Literal) for i in request.requested_args):
                    raise
                sig = tuple(types.literal(a) if i in request.requested_args else t
                            for i, (a, t) in enumerate(zip(args, sig)))
