"""cuda.coop's words where its suite matches them, still naming what coopgen names; and
tools/coop_suite.py, which runs that suite on coopgen under cuda.coop's name."""
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from numba import cuda

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu" / "compat"))

from coopgen import coop  # noqa: E402
from coopgen.linkcheck import link_as_launched  # noqa: E402
from registration_kernels import INT_TOTAL, IntTotal  # noqa: E402
from tools import coop_suite  # noqa: E402

PREFIX = coop.StatefulFunction(IntTotal, INT_TOTAL)


@pytest.mark.parametrize("dtype", [numba.int32, numba.float64])
def test_inclusive_scan_of_one_item_takes_no_initial_value(dtype):
    with pytest.raises(ValueError, match=r"block.inclusive_scan: initial_value is not "
                       r"supported for inclusive scans with items_per_thread == 1"):
        coop.block.inclusive_scan(dtype=dtype, threads_per_block=128, scan_op="*",
                                  items_per_thread=1, initial_value=0)


@pytest.mark.parametrize("make", [coop.block.exclusive_scan, coop.block.make_exclusive_scan])
def test_exclusive_scan_of_one_item_with_a_callback_takes_no_initial_value(make):
    with pytest.raises(ValueError, match=r"block.exclusive_scan: initial_value is not "
                       r"supported for exclusive scans with items_per_thread == 1 and a block "
                       r"prefix callback operator"):
        make(dtype=numba.int32, threads_per_block=64, scan_op="+", items_per_thread=1,
             initial_value=0, prefix_op=PREFIX)


def test_initial_value_of_several_items_is_still_taken():
    """CUB's scans of arrays take an initial value: no rule of one item applies."""
    scan = coop.block.inclusive_scan(dtype=numba.int32, threads_per_block=64, scan_op="+",
                                     items_per_thread=2, initial_value=5)
    assert scan.temp_storage_bytes > 0


def test_warp_exchange_items_per_thread_against_the_array():
    @cuda.jit
    def kernel(d_out):
        items = coop.ThreadData(4, dtype=numba.int32)
        out = coop.ThreadData(4, dtype=numba.int32)
        coop.warp.exchange(items, out, items_per_thread=3,
                           warp_exchange_type=coop.warp.WarpExchangeType.StripedToBlocked)
        d_out[cuda.threadIdx.x] = out[0]

    with pytest.raises(Exception, match=r"warp.exchange: items_per_thread=3 disagrees with "
                       r"array .*coop.warp.exchange items_per_thread must match array shape"):
        link_as_launched(kernel, 32, np.zeros(32, np.int32))


def test_histogram_in_kernel_with_explicit_storage_words():
    @cuda.jit
    def kernel(items, histogram):
        storage = coop.TempStorage()
        coop.block.histogram(items, histogram, temp_storage=storage)

    with pytest.raises(Exception, match=r"block.histogram: Explicit temp_storage is not "
                       r"supported for histogram\."):
        link_as_launched(kernel, 128, np.zeros(128, np.uint8), np.zeros(256, np.uint32))


def test_suite_alias_is_coopgen_coop_with_its_submodules(tmp_path):
    folder = coop_suite.alias_folder(tmp_path)
    probe = ("import coopgen.coop, cuda.coop.block, cuda.coop.warp\n"
             "from cuda import coop\n"
             "from cuda.coop.block import BlockShuffleType\n"
             "from cuda.coop.block._block_scan import ScanOp\n"
             "assert coop is coopgen.coop and cuda.coop.block is coopgen.coop.block\n"
             "assert BlockShuffleType is coopgen.coop.block.BlockShuffleType\n"
             "print(ScanOp.__name__)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(folder),
                                                       os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, encoding="utf-8", errors="replace",
                         check=True)
    assert out.stdout.strip() == "ScanOp"


def test_suite_table_counts_each_file(tmp_path):
    rng = np.random.default_rng()
    want = {f"test_{k}.py": dict(zip(("passed", "failed", "skipped"),
                                     rng.integers(0, 5, 3).tolist())) for k in ("a", "b")}
    cases = []
    for name, counts in want.items():
        for outcome, n in counts.items():
            child = {"passed": "", "failed": "<failure message='x'/>",
                     "skipped": "<skipped message='y'/>"}[outcome]
            cases += [f"<testcase classname='tests.coop.{name[:-3]}' name='t{i}'>{child}"
                      f"</testcase>" for i in range(n)]
    junit = tmp_path / "junit.xml"
    junit.write_text(f"<testsuites><testsuite>{''.join(cases)}</testsuite></testsuites>", encoding="utf-8")
    table = coop_suite.counts_per_file(junit)
    for name, counts in want.items():
        assert {k: table.get(name, {}).get(k, 0) for k in counts} == counts
    assert coop_suite.format_table(table).splitlines()[-1].split()[1] == str(
        sum(c["passed"] for c in want.values()))


def test_block_scan_items_per_thread_against_the_array():
    @cuda.jit
    def kernel(d_in, d_out):
        items = coop.local.array(2, dtype=d_in.dtype)
        coop.block.load(d_in, items, items_per_thread=2)
        coop.block.scan(items, items, items_per_thread=3)
        coop.block.store(d_out, items, items_per_thread=2)

    x = np.random.default_rng().integers(-9, 9, 64).astype(np.int32)
    with pytest.raises(Exception, match=r"block.scan: items_per_thread=3 disagrees with array "
                       r".*coop.block.scan items_per_thread must match the array shape"):
        link_as_launched(kernel, 32, x, x)
