"""The README's numba-cuda kernel (a load, a sum, a radix sort, a store), read from README.md,
under whatever toolchain is installed.

    python tools/readme_kernel.py --arch 80 --arch 90    # LTO-link for each arch, no GPU needed
    python tools/readme_kernel.py --run                  # launch on the GPU, check against numpy
    python tools/readme_kernel.py --backend mlir ...     # the kernel written for numba-cuda-mlir

Prints the toolchain (NVRTC, nvJitLink, NVVM), each cubin's registers and local memory, and with
``--run`` how many configurations (dtype, block size, tiles) gave numpy's answer; the exit status
is 1 on any mismatch.
"""
from __future__ import annotations

import argparse
import ast
import atexit
import os
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ITEMS = 16
cuda = None  # the backend's ``cuda`` module (main() imports it)


sort_tiles = None  # the README's kernel, compiled by the backend's compiler (_compiler)
README = Path(__file__).resolve().parents[1] / "README.md"


def readme_kernel_source() -> tuple[str, str]:
    """The imports and the one ``@cuda.jit`` kernel of README.md's numba-cuda block, and the
    kernel's name: what its launch and checks need stays in the README."""
    text = README.read_text(encoding="utf-8")
    code = next(m.group(1) for m in re.finditer(r"^```python\n(.*?)^```", text, re.S | re.M)
                if "from numba import cuda" in m.group(1))
    tree = ast.parse(code)
    kernels = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    assert len(kernels) == 1, "README.md's numba-cuda block defines one kernel"
    kept = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))] + kernels
    lines = code.splitlines()

    def first_line(node):  # a kernel's decorator is part of it
        return min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", ())])
    pieces = ["\n".join(lines[first_line(n) - 1:n.end_lineno]) for n in kept]
    return "\n".join(pieces) + "\n", kernels[0].name


def _inputs(dtype, threads, tiles, rng):
    x = rng.integers(-1000, 1000, tiles * threads * ITEMS).astype(dtype)
    return x, np.zeros_like(x), np.zeros(tiles, dtype)


def _compiler(backend: str):
    """``from numba import cuda`` or ``from numba_cuda_mlir import cuda``: the README's kernel
    is the same code under either compiler."""
    global cuda, sort_tiles
    source, name = readme_kernel_source()
    if backend == "mlir":
        source = source.replace("from numba import cuda", "from numba_cuda_mlir import cuda")
    with tempfile.NamedTemporaryFile("w", suffix="_readme_kernel.py", delete=False,
                                     encoding="utf-8") as f:
        f.write(source)  # the compilers read a kernel's source from its file
    atexit.register(os.unlink, f.name)
    namespace = {"__name__": "readme_kernel_source"}
    exec(compile(source, f.name, "exec"), namespace)
    cuda, sort_tiles = namespace["cuda"], namespace[name]


def link(archs) -> None:
    x, out, sums = _inputs(np.int32, 256, 8, np.random.default_rng(0))
    for arch in archs:
        t0 = time.perf_counter()
        r = linkcheck.link_as_launched(sort_tiles, 256, x, out, sums, arch=(arch // 10, arch % 10))
        print(f"sm_{arch}: linked in {time.perf_counter() - t0:.1f} s, {len(r.cubin)} bytes, "
              f"{r.registers} registers, {r.local_bytes} bytes local memory")


def run() -> int:
    rng = np.random.default_rng(17)
    good = total = 0
    for dtype in (np.int32, np.int64, np.float32, np.uint32):
        for threads in (32, 128, 256, 512):
            for tiles in (1, 7):
                x, out, sums = _inputs(dtype, threads, tiles, rng)
                d_out, d_sums = cuda.to_device(out), cuda.to_device(sums)
                sort_tiles[tiles, threads](cuda.to_device(x), d_out, d_sums)
                tiles_in = x.reshape(tiles, -1)
                ok = ((d_out.copy_to_host().reshape(tiles, -1) == np.sort(tiles_in, axis=1)).all()
                      and np.allclose(d_sums.copy_to_host(), tiles_in.sum(axis=1, dtype=dtype)))
                total += 1
                good += bool(ok)
                if not ok:
                    print(f"MISMATCH: {np.dtype(dtype).name}, {threads} threads, {tiles} tiles")
    print(f"{good} of {total} configurations gave numpy's answer")
    return 0 if good == total else 1


import coopgen  # noqa: E402
from coopgen import linkcheck  # noqa: E402
from coopgen.codegen import toolchain  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arch", type=int, action="append", default=[],
                   help="link for sm_ARCH without a GPU (repeatable), e.g. 90")
    p.add_argument("--run", action="store_true", help="launch on the GPU and check against numpy")
    p.add_argument("--backend", choices=("numba-cuda", "mlir"), default="numba-cuda",
                   help="the compiler the kernel is written for")
    args = p.parse_args(argv)
    _compiler(args.backend)
    print(f"coopgen {coopgen.__version__} ({args.backend}), Python {sys.version.split()[0]}; "
          + ", ".join(str(part) for part in toolchain.parts()))
    link(args.arch)
    return run() if args.run else 0


if __name__ == "__main__":
    sys.exit(main())
