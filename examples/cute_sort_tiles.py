"""The README's kernel written in CUTLASS's CuTe DSL: each block loads its tile into register
fragments, sums it, radix-sorts it and stores it back, through coopgen's CUB primitives.

    python examples/cute_sort_tiles.py --arch sm_90a --arch sm_100a   # compile and link, no GPU
    python examples/cute_sort_tiles.py --run                          # on the GPU, vs numpy

Needs ``pip install 'coopgen[cute]'``. The kernel takes global pointers, so one compiled
function serves every array of its dtype and size.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

os.environ.setdefault("CUTE_DSL_ARCH", "sm_90a")  # compiling without a GPU needs an arch
# where KeepCUBIN writes its file (else the working directory)
os.environ.setdefault("CUTE_DSL_DUMP_DIR", os.path.join(tempfile.gettempdir(), "coopgen-cute"))
os.makedirs(os.environ["CUTE_DSL_DUMP_DIR"], exist_ok=True)

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.base_dsl.enums import AddressSpace  # noqa: E402
from cutlass.cute.runtime import make_ptr  # noqa: E402

from coopgen import block  # noqa: E402

NUMBERS = {np.int32: cutlass.Int32, np.uint32: cutlass.Uint32, np.int64: cutlass.Int64,
           np.float32: cutlass.Float32, np.float64: cutlass.Float64}


def sort_tiles(dtype, threads: int, items: int, tiles: int):
    """A ``@cute.jit`` function launching the kernel on ``tiles`` blocks of ``threads``:
    ``(d_in, d_out, d_sums)`` pointers, ``threads * items`` keys per tile."""
    T = NUMBERS[np.dtype(dtype).type]
    tile = threads * items

    @cute.kernel
    def kernel(d_in: cute.Tensor, d_out: cute.Tensor, d_sums: cute.Tensor):
        tid, _, _ = cute.arch.thread_idx()
        bid, _, _ = cute.arch.block_idx()
        keys = cute.make_rmem_tensor(items, T)  # this thread's items: registers
        block.load(cute.local_tile(d_in, (tile,), (bid,)), keys, algorithm="warp_transpose")
        total = block.sum(keys)  # valid in thread 0, as in CUB
        block.radix_sort_keys(keys)
        block.store(cute.local_tile(d_out, (tile,), (bid,)), keys, algorithm="warp_transpose")
        if tid == 0:
            d_sums[bid] = total

    def tensor(p, n):  # n items of T (a tensor made from a pointer has no sign: Uint32 -> Int32)
        return cute.recast_tensor(cute.make_tensor(p, cute.make_layout(n)), T)

    @cute.jit
    def launch(d_in: cute.Pointer, d_out: cute.Pointer, d_sums: cute.Pointer):
        kernel(tensor(d_in, tiles * tile), tensor(d_out, tiles * tile),
               tensor(d_sums, tiles)).launch(grid=(tiles, 1, 1), block=(threads, 1, 1))
    return launch


def pointer(dtype, address: int = 0):
    """A global pointer argument (address 0: a placeholder to compile with)."""
    return make_ptr(NUMBERS[np.dtype(dtype).type], address, AddressSpace.gmem, assumed_align=16)


class DeviceArray:
    """A numpy array's bytes in device memory, through the driver API (cuda.bindings), in the
    context ``current_device`` made current."""

    def __init__(self, device, host: np.ndarray):
        from cuda.bindings import driver
        self.host, self._driver, self.address = host, driver, 0
        err, address = driver.cuMemAlloc(max(host.nbytes, 16))
        self._check((err,))
        self.address = int(address)
        self._check(driver.cuMemcpyHtoD(self.address, host.ctypes.data, host.nbytes))

    def _check(self, result) -> None:
        if result[0] != self._driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"CUDA driver call failed: {result[0]}")

    def __del__(self):
        if self.address:
            self._driver.cuMemFree(self.address)
            self.address = 0

    def get(self) -> np.ndarray:
        out = np.empty_like(self.host)
        self._check(self._driver.cuMemcpyDtoH(out.ctypes.data, self.address, out.nbytes))
        return out


def current_device():
    from cuda.core import Device
    device = Device()
    device.set_current()
    return device


def link(archs) -> None:
    for arch in archs:
        t0 = time.perf_counter()
        compiled = cute.compile[cute.GPUArch(arch), cute.KeepCUBIN](
            sort_tiles(np.int32, 256, 16, 8), *(pointer(np.int32) for _ in range(3)))
        cubin = compiled.artifacts.CUBIN  # the bytes, or the file CuTe DSL wrote them to
        size = os.path.getsize(cubin) if isinstance(cubin, str) else len(cubin)
        print(f"{arch}: compiled and linked in {time.perf_counter() - t0:.1f} s, "
              f"{size} bytes of cubin")


def run() -> int:
    device, rng = current_device(), np.random.default_rng(17)
    good = total = 0
    for dtype in (np.int32, np.int64, np.float32, np.uint32):
        for threads in (32, 128, 256, 512):
            for tiles in (1, 7):
                x = rng.integers(0, 1000, tiles * threads * 16).astype(dtype)
                bufs = [DeviceArray(device, a) for a in (x, np.zeros_like(x),
                                                         np.zeros(tiles, dtype))]
                compiled = cute.compile(sort_tiles(dtype, threads, 16, tiles),
                                        *(pointer(dtype) for _ in bufs))
                compiled(*(pointer(dtype, b.address) for b in bufs))
                device.sync()
                out, sums = bufs[1].get(), bufs[2].get()
                want = x.reshape(tiles, -1)
                ok = (out.reshape(tiles, -1) == np.sort(want, axis=1)).all() and \
                    np.allclose(sums, want.sum(axis=1, dtype=dtype))
                total += 1
                good += bool(ok)
                if not ok:
                    print(f"MISMATCH: {np.dtype(dtype).name}, {threads} threads, {tiles} tiles")
    print(f"{good} of {total} configurations gave numpy's answer")
    return 0 if good == total else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", action="append", default=[], help="sm_90a, sm_100a, ...")
    ap.add_argument("--run", action="store_true", help="launch on the GPU, check vs numpy")
    args = ap.parse_args(argv)
    link(args.arch or ["sm_90a"])
    return run() if args.run else 0


if __name__ == "__main__":
    sys.exit(main())
