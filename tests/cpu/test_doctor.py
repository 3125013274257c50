"""`coopgen doctor` and the toolchain check: exit status 1 naming the problem when the headers
do not match the lock, the toolchain mixes CUDA majors or is newer than the driver; 0 when
healthy. A mixed stack is also one error at the first compile."""
import shutil

import pytest

from coopgen.codegen import toolchain
from coopgen.codegen import nvrtc
from coopgen.generator import cli, headers
from coopgen.codegen.toolchain import Part


def _parts(nvrtc_v="13.0", nvjitlink_v="13.0", nvvm_v="13.0.88"):
    def part(name, version):
        return Part(name, version, int(version.split(".")[0]), f"/lib/{name}/{version}")
    return (part("NVRTC", nvrtc_v), part("nvJitLink", nvjitlink_v), part("NVVM", nvvm_v))


@pytest.fixture
def no_driver(monkeypatch):
    monkeypatch.setattr(toolchain, "driver_version", lambda: None)
    monkeypatch.setattr(cli, "gpu_archs", lambda: [])


def test_healthy_install_exits_0(capsys, no_driver):
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "healthy" in out and "PROBLEM" not in out
    assert f"NVRTC: {'.'.join(map(str, nvrtc.nvrtc_version()))}" in out
    assert "driver: none" in out


def test_headers_that_do_not_match_the_lock_exit_1(monkeypatch, tmp_path, capsys, no_driver):
    entry = headers.load_lock()[0]
    altered = tmp_path / "shipped"
    shutil.copytree(headers.locate(entry, download=False).include_root, altered)
    target = altered / "cub" / "block" / "block_reduce.cuh"
    target.write_text(target.read_text(encoding="utf-8") + "\n// edited\n")
    monkeypatch.setattr(headers, "shipped_folder", lambda e, package_dir=None: altered)
    monkeypatch.setattr(headers, "wheel_root", lambda e: None)
    monkeypatch.setattr(headers, "_toolkit_roots", lambda: [])
    monkeypatch.setenv("COOPGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COOPGEN_NO_DOWNLOAD", "1")
    assert cli.main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert f"PROBLEM: CCCL {entry.cccl}'s headers do not match the lock" in out
    assert f"shipped with coopgen at {altered}" in out


def test_mixed_majors_exit_1_naming_the_parts(monkeypatch, capsys, no_driver):
    monkeypatch.setattr(toolchain, "parts", lambda: _parts(nvjitlink_v="12.9"))
    assert cli.main(["doctor"]) == 1
    out = capsys.readouterr().out
    assert "PROBLEM: mixed CUDA majors: NVRTC 13.0 from /lib/NVRTC/13.0, nvJitLink 12.9" in out
    assert "'coopgen[cu12]' or 'coopgen[cu13]'" in out


def test_a_mixed_stack_is_one_error_at_the_first_compile(monkeypatch):
    monkeypatch.setattr(toolchain, "parts", lambda: _parts(nvvm_v="12.9.86"))
    monkeypatch.setattr(toolchain, "driver_version", lambda: None)
    toolchain.require_consistent.cache_clear()  # checked again, as in a fresh process
    with pytest.raises(toolchain.ToolchainError) as e:
        nvrtc.compile_ltoir('extern "C" __device__ void f() {}', include_dirs=[])
    assert str(e.value).count("\n") == 1  # one problem, one line naming every part
    assert "NVVM 12.9.86 from /lib/NVVM/12.9.86" in str(e.value)


def test_a_toolchain_newer_than_the_driver_names_the_extra(monkeypatch):
    found = toolchain.problems(_parts(), driver=(12, 8))
    assert len(found) == 1
    assert "driver runs CUDA 12.8, older than the CUDA 13 toolchain" in found[0]
    assert "pip install 'coopgen[cu12]'" in found[0]
    assert toolchain.problems(_parts("13.5", "13.5", "13.5.37"), driver=(13, 0)) == []
    assert toolchain.problems(_parts("12.3", "12.3", "12.3.52"), driver=(13, 0)) == []


def test_a_missing_part_names_the_extra():
    parts = _parts()[:2] + (Part("NVVM", "not found", None, "libnvvm.so.4: no such file"),)
    (found,) = toolchain.problems(parts, driver=None)
    assert found.startswith("missing: NVVM not found (libnvvm.so.4")
    assert "pip install 'coopgen[cu13]'" in found


def test_this_environments_nvvm_is_its_toolchains_major():
    nvrtc_part, _, nvvm_part = toolchain.parts()
    assert nvvm_part.major == nvrtc_part.major == nvrtc.nvrtc_version()[0]


@pytest.fixture
def fresh_toolchain(monkeypatch, no_driver):
    """parts() and the first-compile check as a fresh process finds them, now and after."""
    toolchain.parts.cache_clear()
    toolchain.require_consistent.cache_clear()
    yield
    monkeypatch.undo()
    toolchain.parts.cache_clear()
    toolchain.require_consistent.cache_clear()


def test_nvvm_whose_version_cannot_be_read_exits_1_naming_it(monkeypatch, capsys, fresh_toolchain):
    # a real library that is no libNVVM: it loads, and has no nvvmVersion to ask
    not_nvvm = toolchain.lib_path("nvrtc")
    monkeypatch.setattr(toolchain, "backend_nvvm_path", lambda: not_nvvm)
    nvvm = toolchain.parts()[2]
    assert (nvvm.version, nvvm.major) == ("?", None)
    assert cli.main(["doctor"]) == 1
    out = capsys.readouterr().out
    major = nvrtc.nvrtc_version()[0]
    (line,) = [x for x in out.splitlines() if x.startswith("PROBLEM: unknown CUDA major: NVVM")]
    assert f"{not_nvvm}; its version cannot be read" in line and "nvvmVersion" in line
    assert f"beside NVRTC {'.'.join(map(str, nvrtc.nvrtc_version()))}" in line
    assert f"pip install 'coopgen[cu{major}]'" in line
    with pytest.raises(toolchain.ToolchainError, match=r"unknown CUDA major: NVVM \? \(.*"
                       + f"{not_nvvm}; its version cannot be read"):
        nvrtc.compile_ltoir('extern "C" __device__ void f() {}', include_dirs=[])


@pytest.mark.parametrize("debug_version", [(3, 1), (3, 2), (3, 9)])
def test_nvvm_of_another_or_no_known_major_exits_1(monkeypatch, capsys, fresh_toolchain,
                                                   debug_version):
    """Held by no package or toolkit, the library's own IR version decides its major where it
    tells one, and is a problem where it does not."""
    nvrtc_major = nvrtc.nvrtc_version()[0]
    monkeypatch.setattr(toolchain, "nvvm_library_version",
                        lambda path: ((2, 0), (2, 0) + debug_version))
    monkeypatch.setattr(toolchain, "cuda_version_of", lambda path: ("?", None))
    nvvm = toolchain.parts()[2]
    major = toolchain.NVVM_DEBUG_VERSION_MAJORS.get(debug_version)
    assert nvvm.major == major
    assert nvvm.version == (f"CUDA {major or '?'} (libNVVM 2.0, IR 2.0 debug "
                            f"{debug_version[0]}.{debug_version[1]})")
    status = cli.main(["doctor"])
    out = capsys.readouterr().out
    if major == nvrtc_major:
        assert status == 0 and "healthy" in out
        return
    assert status == 1
    problem = "unknown CUDA major: NVVM" if major is None else "mixed CUDA majors"
    (line,) = [x for x in out.splitlines() if x.startswith(f"PROBLEM: {problem}")]
    assert f"NVVM {nvvm.version}" in line and nvvm.where in line
    assert f"coopgen[cu{nvrtc_major}]" in line


def test_the_installed_nvvm_answers_and_is_nvrtcs_major():
    """The real libNVVM answers through its C API, and its major is NVRTC's."""
    nvvm = toolchain.parts()[2]
    version, ir = toolchain.nvvm_library_version(nvvm.where)
    assert version >= (2, 0) and len(ir) == 4
    assert nvvm.major == nvrtc.nvrtc_version()[0]


def test_the_package_decides_over_an_ambiguous_ir_version(monkeypatch, fresh_toolchain):
    """CUDA 12.9's libNVVM reports IR debug 3.2, as CUDA 13's does: its package names it 12."""
    monkeypatch.setattr(toolchain, "nvvm_library_version", lambda path: ((2, 0), (2, 0, 3, 2)))
    monkeypatch.setattr(toolchain, "cuda_version_of", lambda path: ("12.9.86", 12))
    assert toolchain.parts()[2].major == 12


@pytest.mark.parametrize("header, expected", [
    ("include/cuda.h", ("13.0", 13)),
    ("targets/x86_64-linux/include/cuda.h", ("12.9", 12)),
])
def test_a_system_toolkit_without_version_json_is_known_by_its_cuda_h(tmp_path, header,
                                                                      expected):
    """Toolkits installed from a distribution's packages ship no version.json and no dist-info:
    the CUDA_VERSION of their cuda.h names the major of the libNVVM they hold."""
    root = tmp_path / "cuda"
    (root / "nvvm" / "lib64").mkdir(parents=True)
    library = root / "nvvm" / "lib64" / "libnvvm.so.4"
    library.write_bytes(b"")
    (root / header).parent.mkdir(parents=True)
    number = expected[1] * 1000 + int(expected[0].split(".")[1]) * 10
    (root / header).write_text(f"#ifndef CUDA_H\n#define CUDA_VERSION {number}\n#endif\n", encoding="utf-8")
    assert toolchain.cuda_version_of(str(library)) == expected
    (root / header).unlink()
    assert toolchain.cuda_version_of(str(library)) == ("?", None)
