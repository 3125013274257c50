"""cases.py's kernels written in CUTLASS's CuTe DSL, calling coopgen (its ``coopgen.cute``
backend): ``bench.py runtime --compiler cute`` times them against the same nvcc-built CUB
kernels (``NATIVE_CU``) as the numba kernels, on the same inputs, with the same checks.

Each kernel does what its numba twin does, line for line: same tile (256 threads x 16 items;
the warp cases 8 warps of 32 x 16), same load/store algorithms, same CUB calls. A kernel takes
the input and output as global pointers, so it is compiled once per case (``cute.compile``)
and then launched like a numba kernel: ``make(case)[grid, threads](d_in, d_out)`` on any
``__cuda_array_interface__`` arrays (the harness's are numba-cuda's), on the default stream.

Not run: ``sort_i64_1024``, whose 132 KB of storage needs dynamic shared memory (coopgen.cute's
storage is static shared memory, 48 KB at most; docs/cute.md lists it).
"""
from __future__ import annotations

import os
import re
import tempfile

import numpy as np

os.environ.setdefault("CUTE_DSL_DUMP_DIR", os.path.join(tempfile.gettempdir(), "coopgen-cute"))
os.makedirs(os.environ["CUTE_DSL_DUMP_DIR"], exist_ok=True)

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cases import ITEMS, THREADS, TILE, WARP_TILE  # noqa: E402
from cutlass.base_dsl.enums import AddressSpace  # noqa: E402
from cutlass.cute.runtime import make_ptr  # noqa: E402

from coopgen import block, coop, warp  # noqa: E402

#: cutlass's number class of each numpy dtype the cases use.
NUMBERS = {np.dtype(d): c for d, c in ((np.int32, cutlass.Int32), (np.int64, cutlass.Int64),
                                       (np.uint8, cutlass.Uint8), (np.uint32, cutlass.Uint32),
                                       (np.float32, cutlass.Float32),
                                       (np.float64, cutlass.Float64))}

#: Cases not written for CuTe DSL: {name: why} (bench.py lists them, not run).
NOT_RUN = {"sort_i64_1024": "its 132 KB of storage is dynamic shared memory; coopgen.cute's "
                            "is static (48 KB at most)"}


def _ids():
    tid, _, _ = cute.arch.thread_idx()
    bid, _, _ = cute.arch.block_idx()
    return tid, bid


# --- the kernels: (x, y) global tensors of the input and the output ---------------------------

def block_sum(dtype):
    T = NUMBERS[np.dtype(dtype)]

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor):
        tid, bid = _ids()
        items = cute.make_rmem_tensor(ITEMS, T)
        block.load(cute.local_tile(x, (TILE,), (bid,)), items, algorithm="striped")
        total = block.sum(items)
        if tid == 0:
            y[bid] = total
    return kernel


def block_scan(dtype):
    T = NUMBERS[np.dtype(dtype)]

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor):
        _, bid = _ids()
        items = cute.make_rmem_tensor(ITEMS, T)
        block.load(cute.local_tile(x, (TILE,), (bid,)), items, algorithm="warp_transpose")
        block.exclusive_sum(items, items)
        block.store(cute.local_tile(y, (TILE,), (bid,)), items, algorithm="warp_transpose")
    return kernel


def block_radix_sort(dtype, threads: int = THREADS):
    T = NUMBERS[np.dtype(dtype)]
    tile = threads * ITEMS

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor):
        _, bid = _ids()
        items = cute.make_rmem_tensor(ITEMS, T)
        block.load(cute.local_tile(x, (tile,), (bid,)), items, algorithm="warp_transpose")
        block.radix_sort_keys(items)
        block.store(cute.local_tile(y, (tile,), (bid,)), items, algorithm="warp_transpose")
    return kernel


def less(a, b):
    """The merge sort's comparator: a Python function, as the numba case's device function."""
    return a < b


def block_merge_sort(dtype):
    T = NUMBERS[np.dtype(dtype)]

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor):
        _, bid = _ids()
        keys = cute.make_rmem_tensor(ITEMS, T)
        block.load(cute.local_tile(x, (TILE,), (bid,)), keys, algorithm="warp_transpose")
        block.merge_sort_keys(keys, compare_op=less)
        block.store(cute.local_tile(y, (TILE,), (bid,)), keys, algorithm="warp_transpose")
    return kernel


def block_histogram(dtype):
    """256 bins of uint8 items, counted in shared memory, copied out by one thread a bin."""
    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor):
        tid, bid = _ids()
        bins = cutlass.memory.SmemAllocator().allocate_tensor(cutlass.Uint32,
                                                              cute.make_layout(256), 16)
        items = cute.make_rmem_tensor(ITEMS, cutlass.Uint8)
        block.load(cute.local_tile(x, (TILE,), (bid,)), items, algorithm="striped")
        block.BlockHistogram.Histogram(items, bins)
        cute.arch.barrier()
        y[bid * 256 + tid] = bins[tid]
    return kernel


def warp_sum(dtype):
    T = NUMBERS[np.dtype(dtype)]

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor):
        tid, bid = _ids()
        items = cute.make_rmem_tensor(ITEMS, T)
        w = (bid * THREADS + tid) >> 5
        warp.load(cute.local_tile(x, (WARP_TILE,), (w,)), items, algorithm="striped")
        partial = items[0]
        for i in cutlass.range_constexpr(1, ITEMS):
            partial = partial + items[i]
        total = warp.sum(partial)
        if tid & 31 == 0:
            y[w] = total
    return kernel


def warp_scan(dtype):
    T = NUMBERS[np.dtype(dtype)]

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor):
        tid, bid = _ids()
        items = cute.make_rmem_tensor(ITEMS, T)
        w = (bid * THREADS + tid) >> 5
        warp.load(cute.local_tile(x, (WARP_TILE,), (w,)), items, algorithm="transpose")
        running = T(0)
        for i in cutlass.range_constexpr(ITEMS):  # exclusive scan of the thread's own items
            v = items[i]
            items[i] = running
            running = running + v
        prefix = warp.exclusive_sum(running)
        for i in cutlass.range_constexpr(ITEMS):
            items[i] = items[i] + prefix
        warp.store(cute.local_tile(y, (WARP_TILE,), (w,)), items, algorithm="transpose")
    return kernel


# --- cuda.coop's spelling (coopgen.coop): the same native kernels as scan and sort ------------

def coop_block_scan(dtype, items_per_thread: int = ITEMS):
    """Items per thread given to the kernel factory (the numba case's kernel argument: a CuTe
    DSL kernel's sizes are known when it is traced), the fragment's dtype from the input's."""
    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor):
        _, bid = _ids()
        items = cute.make_rmem_tensor(items_per_thread, x.element_type)
        tile = THREADS * items_per_thread
        coop.block.load(cute.local_tile(x, (tile,), (bid,)), items, items_per_thread,
                        coop.BlockLoadAlgorithm.WARP_TRANSPOSE)
        coop.block.exclusive_sum(items, items, items_per_thread)
        coop.block.store(cute.local_tile(y, (tile,), (bid,)), items, items_per_thread,
                         algorithm=coop.BlockStoreAlgorithm.WARP_TRANSPOSE)
    return kernel


def coop_block_radix_sort(dtype):
    """Two-phase: objects made on the host, called in the kernel with their storage first (a
    shared byte tensor of the largest one's bytes), as released cuda.coop code does."""
    T = NUMBERS[np.dtype(dtype)]
    load = coop.block.make_load(dtype, THREADS, ITEMS, "warp_transpose")
    sort = coop.block.make_radix_sort_keys(dtype, THREADS, ITEMS)
    store = coop.block.make_store(dtype, THREADS, ITEMS, "warp_transpose")
    storage_bytes = max(load.temp_storage_bytes, sort.temp_storage_bytes,
                        store.temp_storage_bytes)

    @cute.kernel
    def kernel(x: cute.Tensor, y: cute.Tensor):
        _, bid = _ids()
        temp_storage = cutlass.memory.SmemAllocator().allocate_tensor(
            cutlass.Uint8, cute.make_layout(storage_bytes), 16)
        items = cute.make_rmem_tensor(ITEMS, T)
        load(temp_storage, cute.local_tile(x, (TILE,), (bid,)), items)
        cute.arch.barrier()
        sort(temp_storage, items)
        cute.arch.barrier()
        store(temp_storage, cute.local_tile(y, (TILE,), (bid,)), items)
    return kernel


#: case name (cases.CASES) -> kernel factory of the input's dtype.
KERNELS = {
    "sum": block_sum, "scan": block_scan, "sort": block_radix_sort,
    "merge_sort": block_merge_sort, "histogram": block_histogram, "warp_sum": warp_sum,
    "warp_scan": warp_scan, "sum_f64": block_sum, "sort_i64": block_radix_sort,
    "coop_scan": coop_block_scan, "coop_sort": coop_block_radix_sort,
}


# --- compiled and launched like a numba kernel ------------------------------------------------

def pointer(dtype, address: int = 0):
    """A global pointer argument (address 0: a placeholder to compile with)."""
    return make_ptr(NUMBERS[np.dtype(dtype)], address, AddressSpace.gmem, assumed_align=16)


def host(kernel, grid: int, threads: int, n_in: int, n_out: int, dtypes: tuple):
    """A ``@cute.jit`` function launching ``kernel`` on ``grid`` blocks of ``threads`` over an
    input of n_in and an output of n_out items of ``dtypes`` (the pointers'; a tensor made from
    a pointer has its MLIR element type, which has no sign: cute.recast_tensor types it)."""
    t_in, t_out = (NUMBERS[np.dtype(d)] for d in dtypes)

    @cute.jit
    def launch(x: cute.Pointer, y: cute.Pointer):
        kernel(cute.recast_tensor(cute.make_tensor(x, cute.make_layout(n_in)), t_in),
               cute.recast_tensor(cute.make_tensor(y, cute.make_layout(n_out)), t_out)).launch(
            grid=(grid, 1, 1), block=(threads, 1, 1))
    return launch


def build(case, grid: int, arch: str | None = None):
    """``case``'s CuTe DSL kernel launched on ``grid`` tiles, compiled (for ``arch``, else
    CuTe DSL's: CUTE_DSL_ARCH or the current GPU's), with its PTX kept."""
    from cases import INPUT_DTYPE
    if case.name in NOT_RUN:
        raise ValueError(f"{case.name}: not written for CuTe DSL ({NOT_RUN[case.name]})")
    in_dtype = INPUT_DTYPE.get(case.name, case.dtype)
    n = grid * case.tile
    launch = host(KERNELS[case.name](in_dtype, *(() if case.threads == THREADS
                                                 else (case.threads,))),
                  grid, case.threads, n, case.out_len(n), (in_dtype, case.dtype))
    options = [cute.KeepPTX, cute.KeepCUBIN, *([cute.GPUArch(arch)] if arch else [])]
    return cute.compile[tuple(options)](launch, pointer(in_dtype), pointer(case.dtype))


class CuteKernel:
    """A case's kernel, compiled on first use per grid: ``kernel[grid, threads](d_in, d_out,
    *extra)`` as a numba kernel launches (the extra arguments are the factory's: checked)."""

    def __init__(self, case):
        self.case, self._compiled = case, {}

    def __getitem__(self, config):
        grid, threads = config
        if threads != self.case.threads:
            raise ValueError(f"{self.case.name}: compiled for {self.case.threads} threads a "
                             f"block, launched with {threads}")
        if grid not in self._compiled:
            self._compiled[grid] = build(self.case, grid)
        return Launch(self.case, self._compiled[grid])


class Launch:
    def __init__(self, case, compiled):
        from cases import INPUT_DTYPE
        self.case, self.compiled = case, compiled
        self._dtypes = (INPUT_DTYPE.get(case.name, case.dtype), case.dtype)
        self._pointers = {}

    def __call__(self, d_in, d_out, *extra):
        if extra != self.case.extra_args:
            raise ValueError(f"{self.case.name}: the CuTe DSL kernel was built for "
                             f"{self.case.extra_args}, called with {extra}")
        key = (_address(d_in), _address(d_out))
        ptrs = self._pointers.get(key)
        if ptrs is None:  # made once per pair of arrays: the timed launches reuse them
            ptrs = self._pointers[key] = tuple(pointer(d, a) for d, a in zip(self._dtypes, key))
        self.compiled(*ptrs)

    @property
    def registers(self) -> int | None:
        """Registers a thread (the loaded kernel's attribute), None where not known."""
        return registers(self.compiled)


def _address(array) -> int:
    return array.__cuda_array_interface__["data"][0]


def entry_name(ptx: str) -> str:
    """The kernel's symbol in its PTX."""
    found = re.search(r"\.entry\s+([A-Za-z_$][\w$]*)", ptx)
    if found is None:
        raise ValueError("no .entry in the CuTe DSL kernel's PTX")
    return found.group(1)


def registers(compiled) -> int | None:
    """Registers a thread of the compiled kernel, from its cubin loaded through the driver."""
    try:
        from cuda.bindings import driver
        cubin = compiled.artifacts.CUBIN
        if isinstance(cubin, str):
            with open(cubin, "rb") as f:
                cubin = f.read()
        err, module = driver.cuModuleLoadData(cubin)
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        err, fn = driver.cuModuleGetFunction(module, entry_name(compiled.artifacts.PTX).encode())
        if err != driver.CUresult.CUDA_SUCCESS:
            return None
        err, regs = driver.cuFuncGetAttribute(
            driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, fn)
        driver.cuModuleUnload(module)
        return int(regs) if err == driver.CUresult.CUDA_SUCCESS else None
    except Exception:  # noqa: BLE001 (a column of the table, not a reason to stop the run)
        return None


def ptxas_log(case, arch: str = "sm_90a") -> str:
    """The assembler's verbose report (registers, shared memory) of ``case``'s kernel compiled
    for ``arch`` without a GPU: its PTX linked by nvJitLink (cuda.core's Linker)."""
    from cuda.core import Linker, LinkerOptions, ObjectCode
    ptx = build(case, 1, arch).artifacts.PTX
    linker = Linker(ObjectCode.from_ptx(ptx.encode(), name=case.name),
                    options=LinkerOptions(arch=arch, verbose=True))
    try:
        linker.link("cubin")
        return linker.get_info_log() or ""
    finally:
        linker.close()


def make(case) -> CuteKernel:
    return CuteKernel(case)


__all__ = ["KERNELS", "NOT_RUN", "CuteKernel", "build", "make", "ptxas_log", "registers"]
