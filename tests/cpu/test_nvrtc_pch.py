"""When a process builds NVRTC's precompiled header (COOPGEN_NVRTC_PCH; tools/bench/RESULTS.md
has the measurements behind the default)."""
import os

import pytest

from coopgen.codegen import nvrtc


@pytest.mark.parametrize("value, before_first, later", [
    (None, True, True), ("second", False, True), ("1", False, True),
    ("first", True, True), ("0", False, False), ("off", False, False)])
def test_policy(monkeypatch, value, before_first, later):
    if value is None:
        monkeypatch.delenv("COOPGEN_NVRTC_PCH", raising=False)
    else:
        monkeypatch.setenv("COOPGEN_NVRTC_PCH", value)
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: (13, 0))
    for compiled, expected in ((0, before_first), (3, later)):
        monkeypatch.setattr(nvrtc, "compile_count", lambda kind="ltoir", n=compiled: n)
        assert nvrtc._use_pch("ltoir") is expected
        assert nvrtc._use_pch("ptx") is False  # size read-backs have their own includes


def test_nvrtc_before_12_8_builds_none(monkeypatch):
    """-pch arrived in NVRTC 12.8: 12.4 to 12.7 answer "unrecognized option -pch" and fail the
    compile, so an older one is never given it, whatever the policy."""
    monkeypatch.setenv("COOPGEN_NVRTC_PCH", "first")
    for old in ((12, 3), (12, 4), (12, 6)):
        monkeypatch.setattr(nvrtc, "nvrtc_version", lambda v=old: v)
        assert nvrtc._use_pch("ltoir") is False
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: (12, 8))
    assert nvrtc._use_pch("ltoir") is True


def test_an_unknown_policy_is_refused(monkeypatch):
    monkeypatch.setenv("COOPGEN_NVRTC_PCH", "always")
    with pytest.raises(ValueError, match="COOPGEN_NVRTC_PCH='always': use first"):
        nvrtc._use_pch("ltoir")


def test_the_header_file_stays_out_of_the_working_directory(tmp_path, monkeypatch):
    """NVRTC 12.x writes the precompiled header beside the program's name, in the working
    directory, and leaves it there: coopgen gives it a folder of the process's own."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COOPGEN_NVRTC_PCH", "first")
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(tmp_path / "cache"))
    if nvrtc.nvrtc_version() < (12, 8):
        pytest.skip("NVRTC before 12.8 has no -pch")
    source = "#include <cub/block/block_reduce.cuh>\n__device__ int coopgen_pch_probe_%d;\n"
    for n in range(2):  # the first compile writes the header, the second reads it
        assert nvrtc.compile_ltoir(source % n)
    assert list(tmp_path.glob("*.pch")) == []
    folder = nvrtc._pch_options()[1].split("=", 1)[1]
    assert os.path.isdir(folder) and not folder.startswith(str(tmp_path))
