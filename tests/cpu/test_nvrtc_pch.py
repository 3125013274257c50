"""When a process builds NVRTC's precompiled header (COOPGEN_NVRTC_PCH; tools/bench/RESULTS.md
has the measurements behind the default)."""
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


def test_nvrtc_before_12_4_builds_none(monkeypatch):
    """-pch arrived in NVRTC 12.4: an older one is never given it, whatever the policy."""
    monkeypatch.setenv("COOPGEN_NVRTC_PCH", "first")
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: (12, 3))
    assert nvrtc._use_pch("ltoir") is False
    monkeypatch.setattr(nvrtc, "nvrtc_version", lambda: (12, 4))
    assert nvrtc._use_pch("ltoir") is True


def test_an_unknown_policy_is_refused(monkeypatch):
    monkeypatch.setenv("COOPGEN_NVRTC_PCH", "always")
    with pytest.raises(ValueError, match="COOPGEN_NVRTC_PCH='always': use first"):
        nvrtc._use_pch("ltoir")
