"""What the GPU bench runs in CuTe DSL compiles and links here, for sm_90a without a GPU, so it
cannot rot between GPU runs: tools/bench/cute_cases.py's kernels (``bench.py runtime --compiler
cute``), examples/cute_sampling.py's kernel (``sampling.py --cute``) and first_launch.py's plain
kernel; and the harness's handling of the CuTe DSL compiler."""
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tools" / "bench"), str(ROOT / "examples")]
import bench  # noqa: E402
import cases  # noqa: E402
import cute_cases  # noqa: E402
import cute_sampling  # noqa: E402

import cutlass.cute as cute  # noqa: E402

from coopgen.cute import call  # noqa: E402

ARCH = "sm_90a"


def static_storage(ptx: str) -> int:
    """Bytes of the kernel's static shared storage (coopgen's bundle storage)."""
    sizes = [int(n) for n in re.findall(r"\.shared \.align \d+ \.b8 \S*coopgen_static_storage"
                                        r"[^\[\s]*\[(\d+)\]", ptx)]
    return max(sizes, default=0)


@pytest.mark.parametrize("name", sorted(cute_cases.KERNELS))
def test_bench_kernel_links(name):
    """Each case's kernel: every shim inlined, the fragments in registers, the launch's block
    shape required of the kernel, no more static shared memory than the nvcc build's."""
    case = cases.CASES[name]
    call.RESOLVED.clear()
    compiled = cute_cases.build(case, 2, ARCH)
    ptx = compiled.artifacts.PTX
    assert f".target {ARCH}" in ptx
    assert "call.uni" not in ptx and "call " not in ptx
    assert ".local" not in ptx
    assert f".reqntid {case.threads}, 1, 1" in ptx
    assert static_storage(ptx) <= cases.NATIVE_SMEM[name]
    assert compiled.artifacts.CUBIN[:4] == b"\x7fELF"
    assert call.RESOLVED, "no coopgen call was traced"


def backward_branches(ptx: str) -> list[str]:
    """The labels a branch jumps back to (a loop's head)."""
    seen, back = set(), []
    for line in ptx.splitlines():
        label = re.match(r"\s*(\$L__\w+):", line)
        if label:
            seen.add(label.group(1))
            continue
        target = re.search(r"\bbra(?:\.uni)?\s+(\$L__\w+);", line)
        if target and target.group(1) in seen:
            back.append(target.group(1))
    return back


def test_the_histogram_is_straight_line_code_as_nvccs():
    """The uint8 histogram's kernel (0.95 of the nvcc build's speed, docs/cute.md): its tile's
    radix sort makes two passes over the 8-bit keys, which nvcc unrolls and clang's default
    threshold left a loop; and clang's SLP vectorizer packed the items into 32-bit words
    (unpacked with prmt). Now neither (coopgen.cute.clang.NVCC_LIKE)."""
    ptx = cute_cases.build(cases.CASES["histogram"], 2, ARCH).artifacts.PTX
    assert backward_branches(ptx) == []
    assert "prmt" not in ptx


def test_two_phase_objects_take_their_storage_first():
    """cuda.coop's two-phase objects called as ``obj(temp_storage, src, items)`` in a CuTe DSL
    kernel (coop_sort's kernel) resolve as with ``temp_storage=``."""
    call.RESOLVED.clear()
    cute_cases.build(cases.CASES["coop_sort"], 2, ARCH)
    assert set(call.RESOLVED) == {
        "BlockLoad::Load(RandomAccessIterator, T (&)[ItemsPerThread])",
        "BlockRadixSort::Sort(KeyT (&)[ItemsPerThread], int, int)",
        "BlockStore::Store(OutputIteratorT, T (&)[ItemsPerThread])"}


def test_a_storage_first_call_that_does_not_resolve_names_the_primitive():
    """With the storage moved to ``temp_storage=`` the call still does not resolve: the error
    is the call's own, naming the primitive."""
    import cutlass

    from coopgen import coop
    load = coop.block.make_load(np.int32, 128, 4, "direct")

    @cute.kernel
    def kernel(x: cute.Tensor):
        storage = cutlass.memory.SmemAllocator().allocate_tensor(
            cutlass.Uint8, cute.make_layout(load.temp_storage_bytes + 16), 16)
        items = cute.make_rmem_tensor(4, cutlass.Float32)  # the object's dtype is int32
        load(storage, x, items)

    @cute.jit
    def launch(p: cute.Pointer):
        kernel(cute.make_tensor(p, cute.make_layout(512))).launch(grid=(1, 1, 1),
                                                                  block=(128, 1, 1))
    with pytest.raises(Exception) as info:
        cute.compile[cute.GPUArch(ARCH)](launch, cute_cases.pointer(np.int32))
    assert "block.load" in str(info.value)


def test_a_case_not_written_for_cute_is_refused_by_name():
    with pytest.raises(ValueError, match="sort_i64_1024.*dynamic shared memory"):
        cute_cases.build(cases.CASES["sort_i64_1024"], 1, ARCH)


def test_bench_lists_what_cute_does_not_run(monkeypatch):
    monkeypatch.setenv("COOPGEN_COMPILER", "cute")
    names, skipped = bench.runnable(list(cases.CASES))
    assert set(skipped) == set(cute_cases.NOT_RUN) == {"sort_i64_1024"}
    assert set(names) == set(cute_cases.KERNELS) and set(names) <= set(cases.CASES)
    table = bench.print_runtime([], skipped)
    assert "| sort_i64_1024 | not run: not written for CuTe DSL: " in table


def test_bench_runs_only_runtime_and_resources_for_cute(monkeypatch):
    monkeypatch.setenv("COOPGEN_COMPILER", "numba")  # restored after main sets it
    with pytest.raises(SystemExit, match="first_launch.py"):
        bench.main(["bench.py", "compile", "--compiler", "cute"])


def test_sampling_kernel_links():
    """The CuTe DSL sampling kernel: shims inlined, registers only, full tiles loaded as 16-byte
    vectors, the draw's atomic minimum in shared memory."""
    call.RESOLVED.clear()
    compiled = cute.compile[cute.GPUArch(ARCH), cute.KeepPTX, cute.KeepCUBIN](
        cute_sampling.make_sampler(), *cute_sampling.placeholders())
    ptx = compiled.artifacts.PTX
    assert "call.uni" not in ptx and "call " not in ptx and ".local" not in ptx
    assert f".reqntid {cute_sampling.THREADS}, 1, 1" in ptx
    assert "ld.global.v4" in ptx and "atom.shared.min.s32" in ptx
    assert {"BlockLoad::Load(RandomAccessIterator, T (&)[ItemsPerThread])",
            "BlockLoad::Load(RandomAccessIterator, T (&)[ItemsPerThread], int, DefaultT)",
            "BlockScan::ExclusiveSum(T, T &, T &)",
            "WarpReduce::Sum(T)"} <= set(call.RESOLVED)
    assert compiled.artifacts.CUBIN[:4] == b"\x7fELF"


class Device:
    """An array description as a device array gives it (no memory behind it)."""

    def __init__(self, shape, dtype, strides=None):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": np.dtype(dtype).str,
                                         "data": (0, False), "strides": strides, "version": 3}


@pytest.mark.parametrize("probs,top_k,top_p,message", [
    (Device((4,), np.float32), Device((4,), np.int32), Device((4,), np.float32), "2-D"),
    (Device((2, 8), np.float64), Device((2,), np.int32), Device((2,), np.float32),
     "probs must be float32, not float64"),
    (Device((2, 8), np.float32), Device((3,), np.int32), Device((2,), np.float32),
     r"top_k must have shape \(2,\)"),
    (Device((2, 8), np.float32), Device((2,), np.int32), Device((2,), np.int32),
     "top_p must be float32, not int32"),
    (Device((2, 8), np.float32, (4, 8)), Device((2,), np.int32), Device((2,), np.float32),
     "probs must be C-contiguous"),
], ids=["1-D", "float64", "rows", "top_p-dtype", "transposed"])
def test_the_sampler_checks_its_arrays(probs, top_k, top_p, message):
    with pytest.raises(ValueError, match=message):
        cute_sampling.bind(probs, top_k, top_p, Device((probs.__cuda_array_interface__
                                                        ["shape"][0],), np.int32))


def test_the_example_links_from_its_command_line():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "cute_sampling.py"),
                          "--arch", ARCH], capture_output=True, encoding="utf-8",
                         errors="replace")
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"{ARCH}: the sampling kernel compiled and linked" in out.stdout


def test_first_launch_measures_fresh_processes(monkeypatch):
    """first_launch.py without a GPU: the plain kernel's cold and warm processes, each state a
    row of the table (the coopgen kernels' processes are the bench kernels linked above)."""
    monkeypatch.setenv("CUTE_DSL_ARCH", ARCH)
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "bench" / "first_launch.py"),
                          "--no-launch", "--repeats", "1", "plain"], capture_output=True,
                         encoding="utf-8", errors="replace")
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("| kernel |"))
    cells = dict(zip(*([c.strip() for c in line.strip("|").split("|")]
                       for line in (lines[head], lines[head + 2]))))
    assert cells["kernel"] == "plain"
    assert len(cells) == 10 and cells["clang cold/warm"] == "0/0", cells
    for state in ("cold", "warm"):  # the plain kernel's process imports no coopgen
        assert float(cells[f"{state}: import coopgen s"]) == 0, cells
        assert all(float(cells[f"{state}: {c} s"]) > 0 for c in ("import", "cute.compile",
                                                                 "total")), cells


def test_charts_of_cute_runs_are_their_own():
    """A CuTe DSL run's charts get their own names (kernel_vs_nvcc-cute.svg), not numba's."""
    import draw
    assert draw.compiler_of({"environment": {"cutlass": "4.8.1"}}) == "cute"
    assert draw.compiler_of({"environment": {"numba-cuda": "0.30.4"}}) == ""


def test_a_cute_runtime_run_writes_its_results_and_charts(tmp_path):
    """What ``bench.py runtime --compiler cute`` does after timing (its first GPU run crashed
    there): the JSON and table as runtime-cute, and the chart as kernel_vs_nvcc-cute.svg,
    in a fresh process as the GPU run's, from rows of runtime_rows' fields (the timings made up
    here: no GPU); drawing loads no RMSNorm module (it imports the numba examples)."""
    script = f"""
import sys
sys.path.insert(0, {str(ROOT / "tools" / "bench")!r})
import bench
rows = [{{"case": name, "what": name, "n": 1 << 20, "dtype": "int32", "coopgen_ms": 0.5,
          "native_ms": 0.5 * (1 + k / 100), "ratio": 1 + k / 100, "coopgen_GBps": 1.0,
          "native_GBps": 1.0, "same_output": True, "coopgen_regs": 32, "native_regs": 32,
          "rounds_ms": [(0.5, 0.5)]}} for k, name in enumerate(("sum", "histogram"))]
skipped = {{"sort_i64_1024": "not written for CuTe DSL"}}
results = {{"environment": bench.environment(), "runtime": rows, "runtime_not_run": skipped}}
bench.write_results("runtime", results, [bench.print_runtime(rows, skipped)])
assert "rmsnorm" not in sys.modules
"""
    env = {**__import__("os").environ, "COOPGEN_COMPILER": "cute",
           "COOPGEN_BENCH_OUT": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env,
                         encoding="utf-8", errors="replace")
    assert out.returncode == 0, out.stderr[-3000:]
    import json
    result = json.loads((tmp_path / "runtime-cute.json").read_text(encoding="utf-8"))
    assert result["environment"]["cutlass"] == cutlass_version()
    assert [r["case"] for r in result["runtime"]] == ["sum", "histogram"]
    assert "| histogram | 2^20 int32 |" in (tmp_path / "runtime-cute.md").read_text("utf-8")
    pytest.importorskip("matplotlib")
    chart = (tmp_path / "kernel_vs_nvcc-cute.svg").read_text(encoding="utf-8")
    assert 'id="ratio-histogram"' in chart and "CuTe DSL 4." in chart
    assert f"wrote {tmp_path / 'kernel_vs_nvcc-cute.svg'}" in out.stdout


def cutlass_version() -> str:
    import cutlass
    return cutlass.__version__
