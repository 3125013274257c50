"""Randomized differential testing of coopgen against numpy.

Configurations are drawn from the generated specs (``coopgen.model.registry``): every bound overload
of every class whose operation has a numpy reference (``tools.fuzz.families``), on both
surfaces (faithful ``block.BlockScan.ExclusiveSum``, Pythonic ``block.exclusive_sum``), over
dtypes, 1-/2-/3-D block shapes, items per thread, algorithm enums, operators, partial tiles and
logical warp sizes. Many configurations share one kernel (one NVRTC compile; one clang compile
for CuTe DSL kernels, tools.fuzz.cute); each kernel runs several tiles of fresh random data
with edge values, and every output is compared with numpy.

    python -m tools.fuzz --configs 10000 --seed 7 --workers 16     # on a GPU
    python -m tools.fuzz --configs 40 --compile-only               # sm_90 compile, no GPU
    python -m tools.fuzz --repro '<one-line configuration>'        # one configuration again
    python -m tools.fuzz --backend cute --configs 10000 --workers 16  # CuTe DSL kernels

Overloads without a reference are listed by ``--list`` (and at the end of a run) with the
reason they are skipped.
"""
