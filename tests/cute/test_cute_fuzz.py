"""The differential suite's CuTe DSL kernels (python -m tools.fuzz --backend cute) without a GPU:
a seeded batch of drawn configurations compiles and links for sm_90a and sm_100a, each call
resolving to the overload it was drawn for; the draw leaves out what coopgen.cute does not
bind, and says why; each batch's arrays get their own aligned part of the one buffer."""
import re
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: tools/

from tools.fuzz import __main__ as cli  # noqa: E402
from tools.fuzz import cute as fuzz_cute  # noqa: E402
from tools.fuzz import kernels, runner, space  # noqa: E402

from coopgen.cute import call  # noqa: E402


def draw(n: int, seed: int, **kw):
    return space.draw(n, seed, dtypes=kw.pop("dtypes", fuzz_cute.DTYPES),
                      skip=fuzz_cute.skip_reason, refuse=fuzz_cute.refused, **kw)


@pytest.fixture
def cute_compiler(monkeypatch):
    monkeypatch.setenv("COOPGEN_COMPILER", "cute")


def _compile(configs, arch, monkeypatch):
    monkeypatch.setenv("CUTE_DSL_ARCH", arch)
    call.RESOLVED.clear()
    results = runner.run_batch(configs, compile_only=True)
    assert [r.status for r in results] == ["compiled"] * len(configs), \
        [r.line() for r in results if r.status != "compiled"]
    return set(call.RESOLVED)


@pytest.mark.parametrize("arch", ("sm_90a", "sm_100a"))
def test_a_seeded_batch_of_fuzz_kernels_links(arch, cute_compiler, monkeypatch):
    """One kernel (one clang compile) of 12 configurations on a 3-D block: register
    fragments, shared and global tensors, Python operators, temp storage."""
    configs = draw(12, seed=20261128, block=(8, 4, 2))
    assert len(runner.batches_of(configs, 12)) == 1
    resolved = _compile(configs, arch, monkeypatch)
    for c in configs:
        assert c.label() in resolved, f"{c.label()} resolved to none of {sorted(resolved)}"


def test_half_precision_items_link_with_cubs_operators(cute_compiler, monkeypatch):
    configs = draw(10, seed=20261129, block=(64,), dtypes=("float16", "bfloat16"))
    assert {c.dtype for c in configs} == {"float16", "bfloat16"}
    assert not any(c.op.startswith("py_") for c in configs)
    resolved = _compile(configs, "sm_90a", monkeypatch)
    for c in configs:
        assert c.label() in resolved, f"{c.label()} resolved to none of {sorted(resolved)}"


def test_what_the_first_fuzz_runs_refused_links(cute_compiler, monkeypatch):
    """An exclusive max scan of int64, whose identity (int64's minimum) is a numpy constant;
    and beside it a histogram (bins in shared memory) and a radix rank (a digit extractor
    traced into the kernel's module)."""
    scan = ('{"cls":"BlockScan","sig":"ExclusiveScan(T (&)[ITEMS_PER_THREAD], T (&)'
            '[ITEMS_PER_THREAD], ScanOp, T &)","surface":"scan:exclusive","dtype":"int64",'
            '"value_dtype":"","block":[128],"ipt":1,"tkw":[["algorithm",'
            '"block_scan_raking_memoize"]],"op":"max","omit":[],"warp":0,"seed":932014367,'
            '"storage":"implicit","ctor":""}')
    configs = [space.Config.from_json(scan)]
    configs += draw(1, seed=5, block=(128,), only="BlockHistogram::Composite")
    configs += draw(1, seed=6, block=(128,), only="BlockRadixRank::RankKeys")
    assert len(configs) == 3
    _compile(configs, "sm_90a", monkeypatch)


def test_a_batch_of_group_first_calls_links(cute_compiler, monkeypatch):
    """cuda.coop's group-first calls (coop.sum(coop.this_block(), x), a logical warp's), drawn
    as on numba, on a 2-D block: each resolves to the overload it was drawn for."""
    configs = draw(12, seed=20261201, block=(32, 4), surface="group")
    assert {c.surface for c in configs} == {"group"}
    resolved = _compile(configs, "sm_90a", monkeypatch)
    for c in configs:
        assert c.label() in resolved, f"{c.label()} resolved to none of {sorted(resolved)}"


def test_the_draw_leaves_out_what_the_backend_does_not_bind():
    unbound = {"prefix_callback"}
    drawn = draw(400, seed=11)
    assert any(c.surface == "group" for c in drawn)  # cuda.coop's group-first calls too
    for c in drawn:
        assert c.dtype in fuzz_cute.DTYPES
        assert not (c.dtype in ("float16", "bfloat16") and c.op.startswith("py_"))
        assert not any(p.role in unbound or p.base in fuzz_cute.UNBOUND_BASES
                       for p in c.method.params), c.label()
    skipped = {f"{c.name}::{m.signature}": why
               for c, m, fam, why in space.overloads(fuzz_cute.skip_reason) if fam is None}
    assert "binds no prefix callbacks" in skipped[
        "BlockScan::ExclusiveSum(T, T &, BlockPrefixCallbackOp &)"]
    assert "binds no decomposers" in skipped["BlockRadixSort::Sort(KeyT (&)[ItemsPerThread], "
                                             "DecomposerT)"]


def test_list_says_why_each_overload_is_skipped(capsys):
    assert cli.main(["--backend", "cute", "--list"]) == 0
    out = capsys.readouterr().out
    assert "SKIP cuda.coop's group-first calls" not in out
    assert "SKIP Python operators on float16" in out
    assert "coopgen.cute binds no prefix callbacks" in out
    drawn = out.count("\nDRAW ") + out.startswith("DRAW ")
    assert f"{drawn} overloads drawn" in out and drawn > 150
    assert " group" in "".join(ln for ln in out.splitlines() if ln.startswith("DRAW"))


def test_each_array_has_its_own_aligned_part_of_the_buffer():
    configs = draw(8, seed=3, block=(64,))
    slots, size = fuzz_cute.layout(configs)
    assert len(slots) == sum(len(kernels.slots(c)) for c in configs)
    end = 0
    for off, dtype, n in slots:
        assert off % fuzz_cute.ALIGN == 0 and off >= end
        end = off + n * np.dtype("int32" if dtype == "record" else dtype).itemsize
    assert end <= size
    src = fuzz_cute.kernel_source(configs)
    assert src.count("= view(buf, ") == len(slots)
    assert "@cute.kernel" in src and "block=(64, 1, 1)" in src


def test_a_batchs_arrays_go_through_the_buffer_unchanged():
    """What a launch copies in and out: every array (of the drawn dtypes and sizes) packed at
    its offset and read back as it was; a kernel that changes one array changes no other."""
    configs = draw(10, seed=4, block=(32, 2))
    args = runner._flat_args(configs, runner._host_arrays(configs))
    host = fuzz_cute.pack(configs, args)
    back = fuzz_cute.unpack(configs, args, host)
    assert [(b.dtype, b.shape) for b in back] == [(a.dtype, a.shape) for a in args]
    for a, b in zip(args, back):
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
    slots, _ = fuzz_cute.layout(configs)
    off, _, _ = slots[3]
    host[off:off + args[3].nbytes] = 0xFF
    changed = [not np.array_equal(a.view(np.uint8), b.view(np.uint8))
               for a, b in zip(args, fuzz_cute.unpack(configs, args, host))]
    assert changed == [i == 3 and args[3].nbytes > 0 for i in range(len(args))]


@pytest.fixture
def gpu():
    try:
        from cuda.core import Device
        Device(0).set_current()
    except Exception as e:  # noqa: BLE001 (no driver, no device)
        pytest.skip(f"no CUDA GPU ({e})")


@pytest.mark.gpu
@pytest.mark.parametrize("block", ((128,), (32, 4), (4, 8, 4)), ids=("128", "32x4", "4x8x4"))
def test_a_drawn_batch_gives_numpys_answers(block, gpu, cute_compiler):
    """On a GPU: one batch of 40 drawn calls (1-D, 2-D, 3-D block), launched and checked
    against numpy as the differential suite does (python -m tools.fuzz --backend cute)."""
    configs = draw(40, seed=20261130, block=block)
    bad = [r.line() for r in runner.run_batch(configs) if r.status != "ok"]
    assert not bad, "\n".join(bad)


def test_unsigned_items_reach_cub_unsigned(cute_compiler, monkeypatch):
    """Warp and block reductions and scans of unsigned items, read by the kernel from its
    buffer's views (the differential run's 107 mismatches: CuTe DSL typed the views signed,
    and CUB ordered the items as signed numbers): every item type the shims name is unsigned."""
    from coopgen.cute import clang
    sources = []
    compile_bitcode = clang.compile_bitcode

    def record(source, arch):
        sources.append(source)
        return compile_bitcode(source, arch)
    monkeypatch.setattr(clang, "compile_bitcode", record)
    configs = [c for only in ("WarpReduce::Reduce(T, ReductionOp)", "WarpScan::InclusiveScan",
                              "BlockReduce::Reduce(T, ReductionOp)")
               for c in draw(4, seed=20261131, block=(64,), only=only,
                             dtypes=("uint8", "uint16", "uint32", "uint64"))]
    assert len(configs) == 12
    _compile(configs, "sm_90a", monkeypatch)
    named = re.findall(r"using (?:T|KeyT|InputT) = ([\w ]+);", "\n".join(sources))
    assert named and all(t.startswith("unsigned ") for t in named), sorted(set(named))


#: What the 10,000-configuration GPU run (seed 7) could not compile, on one block shape: a
#: vectorized block store of unsigned items (beside a view CuTe DSL typed signed, CUB's
#: vectorized path found no overload), a vectorized load of 8 of them, and a bfloat16 exclusive
#: max scan without an initial value (its injected identity, ml_dtypes' bfloat16 scalar, matched
#: no overload); beside them one of its mismatches' kind, a uint8 warp scan with a Python max.
GPU_RUN_ERRORS = [
    '{"cls":"BlockStore","sig":"Store(OutputIteratorT, T (&)[ItemsPerThread])","surface":'
    '"store","dtype":"uint32","value_dtype":"","block":[64],"ipt":9,"tkw":[["algorithm",'
    '"block_store_vectorize"]],"op":"","omit":[],"warp":0,"seed":1384506499,"storage":'
    '"implicit","ctor":""}',
    '{"cls":"BlockLoad","sig":"Load(RandomAccessIterator, T (&)[ItemsPerThread], int)",'
    '"surface":"faithful","dtype":"uint8","value_dtype":"","block":[64],"ipt":8,"tkw":'
    '[["algorithm","block_load_vectorize"]],"op":"","omit":[],"warp":0,"seed":17,'
    '"storage":"implicit","ctor":""}',
    '{"cls":"BlockScan","sig":"ExclusiveScan(T (&)[ITEMS_PER_THREAD], T (&)[ITEMS_PER_THREAD], '
    'ScanOp, T &)","surface":"exclusive_scan","dtype":"bfloat16","value_dtype":"","block":[64],'
    '"ipt":3,"tkw":[["algorithm","block_scan_warp_scans"]],"op":"max","omit":[],"warp":0,'
    '"seed":1020759901,"storage":"implicit","ctor":""}',
    '{"cls":"WarpScan","sig":"ExclusiveScanPartial(T, T &, ScanOp, int)","surface":"faithful",'
    '"dtype":"uint8","value_dtype":"","block":[64],"ipt":1,"tkw":[],"op":"py_max","omit":[],'
    '"warp":32,"seed":609255834,"storage":"implicit","ctor":""}',
]


def test_what_the_gpu_run_could_not_compile_links(cute_compiler, monkeypatch):
    pytest.importorskip("ml_dtypes")
    configs = [space.Config.from_json(line) for line in GPU_RUN_ERRORS]
    resolved = _compile(configs, "sm_90a", monkeypatch)
    # the scan takes the overload with an initial value: coopgen passes the identity
    assert resolved == {
        "BlockStore::Store(OutputIteratorT, T (&)[ItemsPerThread])",
        "BlockLoad::Load(RandomAccessIterator, T (&)[ItemsPerThread], int)",
        "BlockScan::ExclusiveScan(T (&)[ITEMS_PER_THREAD], T (&)[ITEMS_PER_THREAD], T, ScanOp, "
        "T &)",
        "WarpScan::ExclusiveScanPartial(T, T &, ScanOp, int)"}


@pytest.mark.gpu
@pytest.mark.parametrize("block", ((128,), (32, 4)), ids=("128", "32x4"))
def test_a_drawn_batch_of_group_first_calls_gives_numpys_answers(block, gpu, cute_compiler):
    """On a GPU: 40 drawn calls, each in cuda.coop's group-first form."""
    configs = draw(40, seed=20261202, block=block, surface="group")
    bad = [r.line() for r in runner.run_batch(configs) if r.status != "ok"]
    assert not bad, "\n".join(bad)
