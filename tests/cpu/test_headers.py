"""Locating and verifying the locked headers."""
import dataclasses
import shutil

import pytest

from coopgen.generator import headers
from coopgen.generator.headers import HeaderError, digest_headers, find_entry, locate


def test_lock_entries():
    entries = headers.load_lock()
    assert [(e.cccl, e.wheel) for e in entries] == [
        ("3.5.0", "nvidia-cuda-cccl==13.3.5.0.6"), ("3.0.1", "nvidia-cuda-cccl==13.0.85")]
    assert all(len(e.wheel_sha256) == 64 for e in entries)


def test_runtime_default_is_the_locks_first_entry():
    from coopgen.model import registry

    assert registry.DEFAULT_CCCL == headers.load_lock()[0].cccl


def test_default_entry_found_and_verified():
    found = locate(find_entry(None), download=False)
    digest, count = digest_headers(found.include_root)
    assert digest == found.entry.headers_digest and count == found.entry.header_files


def test_unknown_version_is_a_clear_error():
    with pytest.raises(HeaderError, match="not in the lock; known: 3.5.0, 3.0.1"):
        find_entry("9.9.9")


def test_missing_headers_say_what_to_do(monkeypatch, tmp_path):
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("COOPGEN_NO_DOWNLOAD", "1")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "nowhere"))
    bogus = dataclasses.replace(find_entry("3.0.1"), wheel="nvidia-cuda-cccl==0.0.1",
                                headers_digest="sha256:" + "0" * 64)
    with pytest.raises(HeaderError) as e:
        locate(bogus)
    assert "no headers match lock entry CCCL 3.0.1" in str(e.value)
    assert "download nvidia-cuda-cccl==0.0.1 into its cache" in str(e.value)


def test_altered_headers_are_refused(monkeypatch, tmp_path):
    entry = find_entry("3.0.1")
    real = locate(entry, download=False).include_root
    cached = tmp_path / "cccl" / entry.wheel_version / headers.WHEEL_INCLUDE_DIR
    shutil.copytree(real, cached)
    target = cached / "cub" / "block" / "block_reduce.cuh"
    target.write_text(target.read_text() + "\n// edited\n")
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("COOPGEN_NO_DOWNLOAD", "1")
    monkeypatch.setattr(headers, "wheel_root", lambda e: None)
    monkeypatch.setattr(headers, "shipped_root", lambda e: None)
    monkeypatch.setattr(headers, "_toolkit_roots", lambda: [])
    with pytest.raises(HeaderError) as e:
        locate(entry)
    msg = str(e.value)
    assert "Refused (headers differ from the lock)" in msg and "cached wheel" in msg
