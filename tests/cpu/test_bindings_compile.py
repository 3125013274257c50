"""Every overload the generated bindings claim compiles into a kernel and links to a cubin for
each architecture CI checks, on the CPU (numba-cuda -> LTO-IR, NVRTC shims -> LTO-IR, nvJitLink
-> cubin). CUB takes different code paths per architecture (__CUDA_ARCH__), so each is linked."""
import importlib

import pytest
from numba.cuda import types

from coopgen.lower import typing as calls
from coopgen.codegen import nvrtc
from coopgen.model import registry
from coopgen.linkcheck import compile_kernel_pieces, link_cubin, link_pieces, link_ptx

from smoke import build_function_kernel, build_kernel

CLASSES = registry.package().CLASSES
FUNCTIONS = registry.package().FUNCTIONS
FUNCTION_SCOPES = tuple(dict.fromkeys(f.scope for f in FUNCTIONS))
SIG = (types.int32[::1], types.int32[::1], types.int32)
#: Ampere, Hopper, Blackwell datacenter and Blackwell consumer parts; sm_120 only where the
#: pinned NVRTC targets it.
ARCHS = tuple((a // 10, a % 10) for a in (80, 90, 100, 120) if a in nvrtc.supported_archs())
ARCH_IDS = [f"sm_{a}{b}" for a, b in ARCHS]


#: (compiler, arch): numba-cuda for every arch; numba-cuda-mlir (coopgen.mlir) for sm_90.
TARGETS = [("numba", a) for a in ARCHS] + [("numba_cuda_mlir", (9, 0))]


def _backend(compiler: str):
    """(kernel signature, the backend's typing module, its linkcheck module) of a compiler."""
    if compiler == "numba":
        return SIG, calls, importlib.import_module("coopgen.lower.linkcheck")
    pytest.importorskip("numba_cuda_mlir")
    from numba_cuda_mlir.numba_cuda import types as mlir_types
    sig = (mlir_types.int32[::1], mlir_types.int32[::1], mlir_types.int32)
    return sig, importlib.import_module("coopgen.mlir.typing"), \
        importlib.import_module("coopgen.mlir.linkcheck")


@pytest.mark.parametrize("compiler,arch", TARGETS,
                         ids=[f"{c.split('_')[-1]}-sm_{a}{b}" for c, (a, b) in TARGETS])
@pytest.mark.parametrize("cls", CLASSES, ids=[c.name for c in CLASSES])
def test_every_bound_overload_links(cls, compiler, arch, tmp_path):
    if not cls.methods and not cls.constructors:
        pytest.skip(f"{cls.name} binds nothing yet")
    sig, typing, linkcheck = _backend(compiler)
    kernel, covered, src = build_kernel(cls, cls.scope, tmp_path, compiler)
    before = nvrtc.compile_count() + nvrtc.cache_hit_count()
    typing.RESOLVED.clear()
    pieces = linkcheck.compile_kernel_pieces(kernel, sig, arch=arch)
    res = link_pieces(pieces, arch=arch)
    # Each call resolved to the overload it was written for.
    assert set(typing.RESOLVED) == set(covered)
    # One NVRTC translation unit for the whole kernel (compiled, or found in the cache).
    assert nvrtc.compile_count() + nvrtc.cache_hit_count() - before == 1
    assert res.local_bytes == 0 or cls.name in ("BlockMergeSort", "WarpMergeSort"), src
    assert res.spill_stores == 0 or cls.name in ("BlockMergeSort", "WarpMergeSort")
    # LTO found no undefined behaviour to fold into a trap (e.g. a call on a null object).
    assert "trap;" not in linkcheck.link_ptx(kernel, sig, arch=arch, pieces=pieces)


@pytest.mark.parametrize("compiler,arch", TARGETS,
                         ids=[f"{c.split('_')[-1]}-sm_{a}{b}" for c, (a, b) in TARGETS])
@pytest.mark.parametrize("scope", FUNCTION_SCOPES)
def test_every_bound_free_function_overload_links(scope, compiler, arch, tmp_path):
    """One kernel per namespace calls every bound overload of its free functions (one NVRTC
    translation unit), linked for each architecture: no local memory, no spills, no trap."""
    sig, typing, linkcheck = _backend(compiler)
    functions = [f for f in FUNCTIONS if f.scope == scope]
    kernel, covered, src = build_function_kernel(functions, scope, tmp_path, compiler)
    before = nvrtc.compile_count() + nvrtc.cache_hit_count()
    typing.RESOLVED.clear()
    pieces = linkcheck.compile_kernel_pieces(kernel, sig, arch=arch)
    res = link_pieces(pieces, arch=arch)
    assert set(typing.RESOLVED) == set(covered)
    assert nvrtc.compile_count() + nvrtc.cache_hit_count() - before == 1
    assert res.local_bytes == 0 and res.spill_stores == 0, src
    assert "trap;" not in linkcheck.link_ptx(kernel, sig, arch=arch, pieces=pieces)


def test_shims_compile_for_the_kernels_architecture(tmp_path):
    """The shim bundle is compiled for the arch numba compiles the kernel for (cc=, or the
    launching device's), and the disk cache keys it by that arch."""
    cls = registry.classes()["BlockReduce"]
    kernel, _, _ = build_kernel(cls, cls.scope, tmp_path)
    archs = []
    for arch in ARCHS[:2]:
        pieces = compile_kernel_pieces(kernel, SIG, arch=arch)
        bundles = [p for p in pieces if hasattr(p, "shims")]
        assert [b.arch for b in bundles] == [f"compute_{arch[0]}{arch[1]}"]
        archs.append(bytes(bundles[0].data))
    assert archs[0] != archs[1]


def test_an_arch_nvrtc_cannot_target_is_refused_by_name():
    import numpy as np
    from numba import cuda

    from coopgen import block, block_shape, local
    from coopgen.lower.errors import CoopgenTypeError

    def k(x):
        items = local.array(4, np.int32)
        block.load(x, items)

    # CUDA 13 dropped the old architectures; CUDA 12.3 to 12.7 target none past sm_90
    unsupported = next(cc for cc in ((7, 0), (6, 0), (5, 0), (12, 0), (11, 0), (9, 9))
                       if nvrtc.arch_number(cc) not in nvrtc.supported_archs())
    name = f"sm_{unsupported[0]}{unsupported[1]}"
    with block_shape(128), pytest.raises(CoopgenTypeError, match=f"block.load: cannot compile "
                                                                  f"for {name}: NVRTC"):
        cuda.compile_all(k, (types.int32[::1],), device=False, abi="numba", cc=unsupported,
                         output="ltoir")
    with pytest.raises(nvrtc.NvrtcError, match=f"cannot compile for {name}"):
        nvrtc.compile_ltoir("__device__ int x;", arch=name)


def test_bound_and_checked_is_exactly_what_the_smoke_kernels_cover(tmp_path):
    claimed = set(registry.package().BOUND_AND_CHECKED)
    expected = set()
    from smoke import function_source, kernel_source
    for cls in CLASSES:
        expected.update(kernel_source(cls, cls.scope)[1])
    for scope in FUNCTION_SCOPES:
        expected.update(function_source([f for f in FUNCTIONS if f.scope == scope], scope)[1])
    assert claimed == expected


def _other_entry_checks() -> list[tuple[str, str]]:
    """(CCCL, arch) pairs: every entry besides the default links for sm_90; the oldest keeps
    every architecture (the default has them all above)."""
    from coopgen.generator.headers import load_lock
    from coopgen.generator.lock_add import version_key

    entries = load_lock()
    oldest = min(entries, key=lambda e: version_key(e.cccl)).cccl
    return [(e.cccl, arch) for e in entries[1:] for arch in ARCH_IDS
            if arch == "sm_90" or e.cccl == oldest]


@pytest.mark.parametrize("cccl, arch_id", _other_entry_checks(),
                         ids=[f"{c}-{a}" for c, a in _other_entry_checks()])
def test_other_lock_entries_link_too(cccl, arch_id):
    """Every lock entry's claimed overloads are compile-checked, not only the default's (one
    process per entry and arch, so the suite's workers share the work)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    here = Path(__file__).parent
    select = (f"not other_lock_entries and ({arch_id} or not overload_links)"
              if arch_id == "sm_90" else f"not other_lock_entries and {arch_id}")
    env = dict(os.environ, COOPGEN_CCCL=cccl)
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-k", select, str(here / "test_bindings_compile.py")],
                         cwd=here, env=env, capture_output=True, encoding="utf-8", errors="replace")
    assert out.returncode == 0, f"CCCL {cccl}, {arch_id}:\n{out.stdout[-4000:]}"


def test_shared_memory_pointers_are_32_bit():
    """A coopgen kernel takes nvcc's data layout (32-bit shared-memory pointers): the linked
    radix sort addresses its storage with 32-bit registers, not 64-bit mul.wide/add.s64 pairs
    (234 of them with numba's default layout), and fits in nvcc's 74 registers' neighbourhood."""
    import re

    import numpy as np
    from numba import cuda

    from coopgen import block, block_shape, local

    def sort_tile(d_in, d_out):
        items = local.array(16, np.int32)
        base = cuda.blockIdx.x * 4096
        block.load(d_in[base:], items, algorithm="warp_transpose")
        block.radix_sort_keys(items)
        block.store(d_out[base:], items, algorithm="warp_transpose")

    sig = (types.int32[::1], types.int32[::1])
    with block_shape(256):
        ptx = link_ptx(sort_tile, sig)
        res = link_cubin(sort_tile, sig)
    assert re.search(r"mov\.u32\s+%r\d+, \w*coopgen_static_storage", ptx)
    assert ptx.count("mul.wide") < 10
    assert res.registers <= 80
