"""Every overload the generated bindings claim compiles into a kernel and links to an sm_90
cubin, on the CPU (numba-cuda -> LTO-IR, NVRTC shims -> LTO-IR, nvJitLink -> cubin)."""
import pytest
from numba.cuda import types

from coopgen import calls, nvrtc, registry
from coopgen.linkcheck import link_cubin, link_ptx

from smoke import build_kernel

CLASSES = registry.package().CLASSES
SIG = (types.int32[::1], types.int32[::1], types.int32)


@pytest.mark.parametrize("cls", CLASSES, ids=[c.name for c in CLASSES])
def test_every_bound_overload_links(cls, tmp_path):
    if not cls.methods and not cls.constructors:
        pytest.skip(f"{cls.name} binds nothing yet")
    kernel, covered, src = build_kernel(cls, cls.scope, tmp_path)
    before = nvrtc.compile_count() + nvrtc.cache_hit_count()
    calls.RESOLVED.clear()
    res = link_cubin(kernel, SIG)
    # Each call resolved to the overload it was written for.
    assert set(calls.RESOLVED) == set(covered)
    # One NVRTC translation unit for the whole kernel (compiled, or found in the cache).
    assert nvrtc.compile_count() + nvrtc.cache_hit_count() - before == 1
    assert res.local_bytes == 0 or cls.name in ("BlockMergeSort", "WarpMergeSort"), src
    assert res.spill_stores == 0 or cls.name in ("BlockMergeSort", "WarpMergeSort")
    # LTO found no undefined behaviour to fold into a trap (e.g. a call on a null object).
    assert "trap;" not in link_ptx(kernel, SIG)


def test_bound_and_checked_is_exactly_what_the_smoke_kernels_cover(tmp_path):
    claimed = set(registry.package().BOUND_AND_CHECKED)
    expected = set()
    from smoke import kernel_source
    for cls in CLASSES:
        expected.update(kernel_source(cls, cls.scope)[1])
    assert claimed == expected


def test_other_lock_entries_link_too():
    """Every lock entry's claimed overloads are compile-checked, not only the default's."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from coopgen.generator.headers import load_lock

    here = Path(__file__).parent
    for entry in load_lock()[1:]:
        env = dict(os.environ, COOPGEN_CCCL=entry.cccl)
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                              "-k", "not other_lock_entries", str(here / "test_bindings_compile.py")],
                             cwd=here, env=env, capture_output=True, text=True)
        assert out.returncode == 0, f"CCCL {entry.cccl}:\n{out.stdout[-4000:]}"


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
