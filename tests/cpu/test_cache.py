"""coopgen's disk cache: one folder, framed entries checked before use, a size cap with
least-recently-used eviction, and `coopgen cache`."""
import os
import time

import pytest
from numba import cuda
from numba.cuda import types

import shim_intrinsic as sc
from coopgen import linkcheck
from coopgen.codegen import nvrtc
from coopgen.codegen import cache
from coopgen.generator import cli
from coopgen.codegen.bundle import Shim

SIG = (types.int32[::1],)


def _shim(name: str, expr: str) -> Shim:
    return Shim(name, f'COOPGEN_SHIM void {name}(int x, int* out) {{ *out = {expr}; }}\n')


# Two kernels whose shims compile to two cache entries (no CUB: quick NVRTC compiles).
plus_one = sc.shim_call(_shim("coopgen_test_cache_plus_one", "x + 1"),
                        [sc.val(types.int32), sc.out(types.int32)])
times_three = sc.shim_call(_shim("coopgen_test_cache_times_three", "x * 3"),
                           [sc.val(types.int32), sc.out(types.int32)])


def kernel_a(a):
    a[cuda.threadIdx.x] = plus_one(a[cuda.threadIdx.x])


def kernel_b(a):
    a[cuda.threadIdx.x] = times_three(a[cuda.threadIdx.x])


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(tmp_path))
    for name in ("COOPGEN_DISABLE_CACHE", "COOPGEN_CACHE_MAX_SIZE", "COOPGEN_DUMP_SHIMS"):
        monkeypatch.delenv(name, raising=False)
    nvrtc.reset_counters()
    return tmp_path


def test_one_folder_from_one_place(monkeypatch, tmp_path):
    monkeypatch.delenv("COOPGEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("COOPGEN_DISABLE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.root() == tmp_path / "xdg" / "coopgen"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.root() == tmp_path / "home" / ".cache" / "coopgen"
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(tmp_path / "mine"))
    from coopgen.generator import headers
    assert cache.root() == headers.cache_dir() == tmp_path / "mine"
    assert nvrtc.cache_dir() == cache.shim_dir() == tmp_path / "mine" / "ltoir"
    assert cache.headers_dir() == tmp_path / "mine" / "cccl"


@pytest.mark.parametrize("value, size", [("512M", 512 << 20), ("2G", 2 << 30), ("100", 100),
                                         ("1.5k", 1536), ("0", 0)])
def test_size_cap_parses(monkeypatch, value, size):
    monkeypatch.setenv("COOPGEN_CACHE_MAX_SIZE", value)
    assert cache.max_bytes() == size


def test_a_bad_size_cap_says_how_to_write_one(monkeypatch):
    monkeypatch.setenv("COOPGEN_CACHE_MAX_SIZE", "lots")
    with pytest.raises(ValueError, match="COOPGEN_CACHE_MAX_SIZE='lots'.*512M"):
        cache.max_bytes()


def test_entries_are_framed_and_checked(folder):
    path = folder / "ltoir" / "k.ltoir"
    cache.write(path, b"payload")
    assert path.read_bytes().startswith(cache.MAGIC)
    assert cache.read(path) == b"payload"
    for damage, why in [(lambda raw: raw[:-3], "truncated: 4 of 7 bytes"),
                        (lambda raw: raw[:-1] + b"X", "checksum mismatch"),
                        (lambda raw: b"", "0 bytes"),
                        (lambda raw: b"\x7fELF" + raw[4:], "bad header")]:
        path.write_bytes(damage(cache.frame(b"payload")))
        with pytest.warns(cache.CacheWarning, match=rf"{path}.*{why}"):
            assert cache.read(path) is None
    assert cache.read(folder / "ltoir" / "absent.ltoir") is None  # a plain miss: no warning


def test_least_recently_used_entries_go_past_the_cap(folder, monkeypatch):
    d = folder / "ltoir"
    now = time.time()
    for i, name in enumerate("abcd"):
        cache.write(d / f"{name}.ltoir", bytes(1000))
        os.utime(d / f"{name}.ltoir", (now - 100 + i, now - 100 + i))  # a oldest, d newest
    cache.read(d / "a.ltoir")  # a hit makes a the most recently used
    entry = 1000 + cache._HEADER
    monkeypatch.setenv("COOPGEN_CACHE_MAX_SIZE", str(3 * entry))
    cache.write(d / "e.ltoir", bytes(1000))
    assert sorted(p.name for p, _, _ in cache.entries()) == ["a.ltoir", "d.ltoir", "e.ltoir"]
    monkeypatch.setenv("COOPGEN_CACHE_MAX_SIZE", "0")  # no cap
    cache.write(d / "f.ltoir", bytes(1000))
    assert len(cache.entries()) == 4


def test_damaged_entries_are_compiled_again_and_replaced(folder):
    """One entry truncated, another garbled: both kernels link again, each with a warning naming
    its file, and both entries are rewritten sound."""
    first_a = linkcheck.link_cubin(kernel_a, SIG, arch=(9, 0))
    first_b = linkcheck.link_cubin(kernel_b, SIG, arch=(9, 0))
    assert nvrtc.compile_count() == 2
    (entry_a, entry_b) = sorted((p for p, _, _ in cache.entries()), key=os.path.getmtime)
    good_a, good_b = entry_a.read_bytes(), entry_b.read_bytes()

    entry_a.write_bytes(good_a[:len(good_a) // 2])  # truncated
    garbled = bytearray(good_b)
    for i in range(len(good_b) // 2, len(good_b) // 2 + 64):
        garbled[i] ^= 0xFF
    entry_b.write_bytes(bytes(garbled))  # same length, garbled

    nvrtc.reset_counters()
    with pytest.warns(cache.CacheWarning) as caught:
        again_a = linkcheck.link_cubin(kernel_a, SIG, arch=(9, 0))
        again_b = linkcheck.link_cubin(kernel_b, SIG, arch=(9, 0))
    messages = "\n".join(str(w.message) for w in caught)
    assert f"{entry_a} is damaged (truncated" in messages
    assert f"{entry_b} is damaged (checksum mismatch" in messages
    assert nvrtc.compile_count() == 2 and nvrtc.cache_hit_count() == 0
    assert again_a.cubin[:4] == again_b.cubin[:4] == b"\x7fELF"
    assert (again_a.registers, again_b.registers) == (first_a.registers, first_b.registers)
    for entry in (entry_a, entry_b):  # rewritten sound (NVRTC's bytes may differ run to run)
        assert cache.unframe(entry.read_bytes())[0] is not None
    nvrtc.reset_counters()
    linkcheck.link_cubin(kernel_a, SIG, arch=(9, 0))
    linkcheck.link_cubin(kernel_b, SIG, arch=(9, 0))
    assert nvrtc.compile_count() == 0 and nvrtc.cache_hit_count() == 2


def test_cache_command_shows_and_clears(folder, capsys):
    cache.write(folder / "ltoir" / "x.ltoir", bytes(2048))
    cache.write(folder / "models" / "3.0.1-x.json", b"{}")  # a parse coopgen generate kept
    (folder / "cccl" / "13.0.85").mkdir(parents=True)
    (folder / "cccl" / "13.0.85" / "h").write_bytes(bytes(10))
    assert cli.main(["cache"]) == 0
    out = capsys.readouterr().out
    assert str(folder) in out and "1 entries" in out and "13.0.85" in out
    assert f"parsed API models: {folder / 'models'}: 1 entries" in out
    assert cli.main(["cache", "clear"]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    assert cache.entries() == [] and (folder / "cccl" / "13.0.85").is_dir()
    assert not list((folder / "models").iterdir())
    assert cli.main(["cache", "clear", "--headers"]) == 0
    assert not (folder / "cccl").exists()
