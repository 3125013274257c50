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
    for compiled, expected in ((0, before_first), (3, later)):
        monkeypatch.setattr(nvrtc, "compile_count", lambda kind="ltoir", n=compiled: n)
        assert nvrtc._use_pch("ltoir") is expected
        assert nvrtc._use_pch("ptx") is False  # size read-backs have their own includes


def test_an_unknown_policy_is_refused(monkeypatch):
    monkeypatch.setenv("COOPGEN_NVRTC_PCH", "always")
    with pytest.raises(ValueError, match="COOPGEN_NVRTC_PCH='always': use first"):
        nvrtc._use_pch("ltoir")
