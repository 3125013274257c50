"""clang's precompiled header of the canonical #include block: made once in the cache folder,
read by each bundle compile; one whose headers changed is dropped, and the compile still
succeeds; COOPGEN_CLANG_PCH=0 turns it off."""
import os
import subprocess
from pathlib import Path

import pytest

from coopgen.codegen.bundle import canonical_includes
from coopgen.cute import clang


@pytest.fixture
def own_cache(tmp_path, monkeypatch):
    """A cache folder of the test's own (clang's helper folders are cached per process)."""
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(tmp_path))
    for f in (clang.stub_dir, clang.cuda_root):
        f.cache_clear()
    yield tmp_path
    for f in (clang.stub_dir, clang.cuda_root):
        f.cache_clear()


def bundle(name: str) -> str:
    return ("".join(f"#include <{h}>\n" for h in canonical_includes())
            + f'extern "C" __device__ int {name}(int a) {{ return a + 3; }}\n')


def clang_runs(monkeypatch) -> list:
    runs, real = [], subprocess.run

    def run(cmd, *args, **kws):
        runs.append(list(cmd))
        return real(cmd, *args, **kws)
    monkeypatch.setattr(clang.subprocess, "run", run)
    return runs


def test_bundles_read_one_precompiled_header_and_a_stale_one_is_dropped(own_cache, monkeypatch):
    runs = clang_runs(monkeypatch)
    first = Path(clang.compile_bitcode(bundle("coopgen_pch_a"), "sm_90a"))
    assert first.read_bytes()[:2] == b"BC"
    pch = clang.precompiled_header("sm_90a")
    assert pch is not None and Path(pch).stat().st_size > 1 << 20
    made = [r for r in runs if "-emit-pch" in r]
    assert len(made) == 1  # the first compile made it
    assert all(["-include-pch", pch] == r[r.index("-include-pch"):r.index("-include-pch") + 2]
               for r in runs if "-emit-pch" not in r)
    # a header the PCH read changes: the compile parses the headers, the PCH is dropped
    prelude = Path(clang.stub_dir()) / "coopgen_clang_prelude.h"
    os.utime(prelude, (prelude.stat().st_atime, prelude.stat().st_mtime + 10))
    runs.clear()
    second = Path(clang.compile_bitcode(bundle("coopgen_pch_b"), "sm_90a"))
    assert second.read_bytes()[:2] == b"BC" and second != first
    assert [("-include-pch" in r) for r in runs] == [True, False]
    assert not Path(pch).exists()


def test_the_precompiled_header_can_be_turned_off(own_cache, monkeypatch):
    monkeypatch.setenv("COOPGEN_CLANG_PCH", "0")
    runs = clang_runs(monkeypatch)
    assert clang.precompiled_header("sm_90a") is None
    clang.compile_bitcode(bundle("coopgen_pch_c"), "sm_90a")
    assert len(runs) == 1 and "-include-pch" not in runs[0]
