"""Locating and verifying the locked headers."""
import dataclasses
import shutil

import pytest

from coopgen.generator import headers
from coopgen.generator.headers import HeaderError, digest_headers, find_entry, locate


def test_lock_entries():
    """The first entry is the default; the others follow newest first (the order
    `coopgen lock-add` keeps), each a CCCL 3.x release with its wheel."""
    from coopgen.generator.lock_add import version_key

    entries = headers.load_lock()
    assert len({e.cccl for e in entries}) == len(entries) >= 2
    rest = [e.cccl for e in entries[1:]]
    assert rest == sorted(rest, key=version_key, reverse=True)
    assert all(e.wheel.startswith("nvidia-cuda-cccl==") and len(e.wheel_sha256) == 64
               for e in entries)


def test_default_wheel_is_the_builds():
    """The build ships the default entry's headers from that wheel (setup.py); a runtime
    dependency on it would fight the CUDA toolkit's own CCCL pin."""
    from pathlib import Path

    pyproject = headers.tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text(encoding="utf-8"))
    assert headers.load_lock()[0].wheel in pyproject["build-system"]["requires"]
    assert not any(r.startswith("nvidia-cuda-cccl") for r in pyproject["project"]["dependencies"])


def test_runtime_default_is_the_locks_first_entry():
    from coopgen.model import registry

    assert registry.DEFAULT_CCCL == headers.load_lock()[0].cccl


def test_default_entry_found_and_verified():
    found = locate(find_entry(None), download=False)
    digest, count = digest_headers(found.include_root)
    assert digest == found.entry.headers_digest and count == found.entry.header_files


def test_unknown_version_is_a_clear_error():
    known = ", ".join(e.cccl for e in headers.load_lock())
    with pytest.raises(HeaderError, match=f"not in the lock; known: {known}"):
        find_entry("9.9.9")


GOOD = headers.load_lock()[-1]


def _lock_with(tmp_path, **changes):
    """A one-entry lock file: the oldest entry with ``changes`` (None drops a field)."""
    fields = {**dataclasses.asdict(GOOD), "nvrtc_options": list(GOOD.nvrtc_options), **changes}
    lines = ["[[entry]]"] + [f"{k} = {v!r}".replace("'", '"') for k, v in fields.items()
                             if v is not None]
    path = tmp_path / "cub_headers.lock"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("changes, message", [
    (dict(wheel_sha256="abc"), "field wheel_sha256: 'abc' is not 64 lower-case hex digits"),
    (dict(headers_digest="0" * 64), "field headers_digest: '000"),
    (dict(header_files=None), "field header_files: missing"),
    (dict(header_files=0), "field header_files: 0 is not a positive integer"),
    (dict(wheel="nvidia-cuda-cccl==13.0.99"), "field wheel_file: '" + GOOD.wheel_file),
    (dict(cccl="3.0"), "entry CCCL 3.0, field cccl: '3.0' is not a CCCL version"),
    (dict(cccl=3), "entry number 1, field cccl: 3 is not a CCCL version"),
    (dict(nvrtc_options="-default-device"), "field nvrtc_options: '-default-device' is not"),
    (dict(wheels="x"), "field wheels: unknown field"),
])
def test_a_malformed_entry_is_one_message_naming_entry_and_field(tmp_path, changes, message):
    path = _lock_with(tmp_path, **changes)
    with pytest.raises(HeaderError) as e:
        headers.load_lock(path)
    assert message in str(e.value) and len(str(e.value).splitlines()) == 1
    assert str(e.value).startswith(f"{path}: entry ")


def test_cli_reports_a_malformed_lock_without_a_traceback(tmp_path, monkeypatch, capsys):
    from coopgen.generator import cli

    monkeypatch.setenv("COOPGEN_LOCK", str(_lock_with(tmp_path, wheel_sha256="x")))
    assert cli.main(["coverage"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("coopgen: ") and "field wheel_sha256" in err and "\n" not in err


def test_lock_digest_refuses_a_folder_without_cub(tmp_path, capsys):
    from coopgen.generator import cli

    assert cli.main(["lock-digest", str(tmp_path / "nonexistent")]) != 0
    assert "no CUB headers" in capsys.readouterr().err
    (tmp_path / "cuda").mkdir()
    assert cli.main(["lock-digest", str(tmp_path)]) != 0


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
    target.write_text(target.read_text(encoding="utf-8") + "\n// edited\n")
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("COOPGEN_NO_DOWNLOAD", "1")
    monkeypatch.setattr(headers, "wheel_root", lambda e: None)
    monkeypatch.setattr(headers, "shipped_root", lambda e: None)
    monkeypatch.setattr(headers, "_toolkit_roots", lambda: [])
    with pytest.raises(HeaderError) as e:
        locate(entry)
    msg = str(e.value)
    assert "Refused (headers differ from the lock)" in msg and "cached wheel" in msg
