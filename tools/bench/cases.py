"""The benchmark cases: each is a coopgen kernel, the same kernel in CUDA C++ with CUB
(``NATIVE_CU``, built with nvcc), its input and its numpy answer.

Every kernel runs 256 threads x 16 items per thread (the warp cases: 8 warps of 32 threads x 16
items), one tile per block, and both versions use the same algorithms, so a time ratio compares
only how the code was generated. ``sort_i64_1024`` has 1024 threads: its 132 KB of storage is
dynamic shared memory, which coopgen's launch sets up by itself and the nvcc build with
``cudaFuncSetAttribute`` plus a dynamic launch size.
"""
from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


def compiler_name() -> str:
    """The compiler the kernels are written for: "numba" (numba-cuda) or, with
    COOPGEN_COMPILER=numba_cuda_mlir (as the examples read it), "numba_cuda_mlir", or with
    COOPGEN_COMPILER=cute (``bench.py --compiler cute``), CuTe DSL (cute_cases.py)."""
    return os.environ.get("COOPGEN_COMPILER", "numba")


def compiler():
    """The ``cuda`` of that compiler: its device arrays and events time the runs (numba-cuda's
    for CuTe DSL kernels, which take any device array's address)."""
    name = compiler_name()
    return importlib.import_module(f"{'numba' if name == 'cute' else name}.cuda")


def make_kernel(case):
    """``case``'s kernel for that compiler, launched as ``kernel[grid, threads](*args)``."""
    if compiler_name() == "cute":
        import cute_cases
        return cute_cases.make(case)
    return case.make()


def not_run(case) -> str:
    """Why that compiler does not run ``case`` (empty where it does)."""
    if compiler_name() == "cute":
        import cute_cases
        why = cute_cases.NOT_RUN.get(case.name, "")
        return f"not written for CuTe DSL: {why}" if why else ""
    if compiler_name() != "numba" and case.not_on_mlir:
        return f"numba-cuda-mlir cannot compile it ({case.not_on_mlir})"
    return ""

THREADS, ITEMS = 256, 16
TILE = THREADS * ITEMS
WARP_TILE = 32 * ITEMS


@dataclass(frozen=True)
class Case:
    name: str
    what: str
    dtype: type
    n: int  # input elements
    make: Callable  # (cache: bool) -> numba kernel
    native: str  # extern "C" kernel name in NATIVE_CU
    out_len: Callable  # n -> output elements
    expected: Callable  # host input -> numpy answer
    make_input: Callable  # (rng, n) -> host input
    exact: bool = True  # float sums: compare to numpy with a tolerance
    threads: int = THREADS
    #: () -> dynamic shared memory bytes the nvcc build's launch asks for (None: static only)
    native_dynamic_smem: Callable | None = None
    #: kernel arguments after (input, output): cuda.coop code sizes its arrays from them
    extra_args: tuple = ()
    #: why numba-cuda-mlir cannot compile the kernel (docs/numba-cuda-mlir.md lists it); empty
    #: where it can
    not_on_mlir: str = ""

    @property
    def tile(self) -> int:
        return self.threads * ITEMS

    @property
    def grid(self) -> int:
        return self.n // self.tile

    def device_args(self, rng, tiles: int):
        """(input, output) device arrays for ``tiles`` tiles."""
        cuda = compiler()
        n = tiles * self.tile
        host = self.make_input(rng, n)
        return cuda.to_device(host), cuda.device_array(self.out_len(n), self.dtype)


# --- coopgen kernels ------------------------------------------------------------------------

def _sum(dtype):
    def make(cache=False):
        from coopgen import block, local
        cuda = compiler()

        @cuda.jit(cache=cache)
        def block_sum(d_in, d_out):
            items = local.array(ITEMS, dtype)
            block.load(d_in[cuda.blockIdx.x * TILE:], items, algorithm="striped")
            total = block.sum(items)
            if cuda.threadIdx.x == 0:
                d_out[cuda.blockIdx.x] = total
        return block_sum
    return make


def _scan(cache=False):
    from coopgen import block, local
    cuda = compiler()

    @cuda.jit(cache=cache)
    def block_scan(d_in, d_out):
        items = local.array(ITEMS, np.int32)
        base = cuda.blockIdx.x * TILE
        block.load(d_in[base:], items, algorithm="warp_transpose")
        block.exclusive_sum(items, items)
        block.store(d_out[base:], items, algorithm="warp_transpose")
    return block_scan


def _radix_sort(dtype, threads=THREADS):
    tile = threads * ITEMS

    def make(cache=False):
        from coopgen import block, local
        cuda = compiler()

        @cuda.jit(cache=cache)
        def block_radix_sort(d_in, d_out):
            items = local.array(ITEMS, dtype)
            base = cuda.blockIdx.x * tile
            block.load(d_in[base:], items, algorithm="warp_transpose")
            block.radix_sort_keys(items)
            block.store(d_out[base:], items, algorithm="warp_transpose")
        return block_radix_sort
    return make


def _merge_sort(cache=False):
    from coopgen import block, local
    cuda = compiler()

    @cuda.jit(device=True)
    def less(a, b):
        return a < b

    @cuda.jit(cache=cache)
    def block_merge_sort(d_in, d_out):
        keys = local.array(ITEMS, np.float32)
        base = cuda.blockIdx.x * TILE
        block.load(d_in[base:], keys, algorithm="warp_transpose")
        block.merge_sort_keys(keys, compare_op=less)
        block.store(d_out[base:], keys, algorithm="warp_transpose")
    return block_merge_sort


def _histogram(cache=False):
    from coopgen import block, local, shared
    cuda = compiler()

    @cuda.jit(cache=cache)
    def block_histogram(d_in, d_out):
        items = local.array(ITEMS, np.uint8)
        bins = shared.array(256, np.uint32)
        # Unsigned indices, as C++'s blockIdx/threadIdx are: numba's are signed, and a signed
        # index costs a negative-index wrap-around per access (1.2% of this kernel's time).
        t, b = np.uint32(cuda.threadIdx.x), np.uint32(cuda.blockIdx.x)
        block.load(d_in[b * np.uint32(TILE):], items, algorithm="striped")
        block.BlockHistogram.Histogram(items, bins)
        cuda.syncthreads()
        d_out[b * np.uint32(256) + t] = bins[t]
    return block_histogram


def _warp_sum(cache=False):
    from coopgen import local, warp
    cuda = compiler()

    @cuda.jit(cache=cache)
    def warp_sum(d_in, d_out):
        items = local.array(ITEMS, np.int32)
        # Shifts and masks, as C++ compiles its unsigned / and %: Python's // and % on signed
        # integers round towards minus infinity and cost extra instructions.
        w = (cuda.blockIdx.x * THREADS + cuda.threadIdx.x) >> 5
        warp.load(d_in[w * WARP_TILE:], items, algorithm="striped")
        partial = items[0]
        for i in range(1, ITEMS):
            partial = np.int32(partial + items[i])
        total = warp.sum(partial)
        if cuda.threadIdx.x & 31 == 0:
            d_out[w] = total
    return warp_sum


def _warp_scan(cache=False):
    from coopgen import local, warp
    cuda = compiler()

    @cuda.jit(cache=cache)
    def warp_scan(d_in, d_out):
        items = local.array(ITEMS, np.int32)
        base = ((cuda.blockIdx.x * THREADS + cuda.threadIdx.x) >> 5) * WARP_TILE
        warp.load(d_in[base:], items, algorithm="transpose")
        running = np.int32(0)
        for i in range(ITEMS):  # exclusive scan of the thread's own items
            v = items[i]
            items[i] = running
            running = np.int32(running + v)
        prefix = warp.exclusive_sum(running)
        for i in range(ITEMS):
            items[i] = np.int32(items[i] + prefix)
        warp.store(d_out[base:], items, algorithm="transpose")
    return warp_scan


# --- cuda.coop's spelling (from coopgen import coop): same native kernels as scan and sort ---

def _coop_scan(cache=False):
    from coopgen import coop
    cuda = compiler()

    @cuda.jit(cache=cache)
    def coop_block_scan(d_in, d_out, items_per_thread):
        # sized by a kernel argument and the input's dtype, read when the launch compiles
        items = coop.local.array(items_per_thread, dtype=d_in.dtype)
        base = cuda.blockIdx.x * THREADS * items_per_thread
        coop.block.load(d_in[base:], items, items_per_thread,
                        coop.BlockLoadAlgorithm.WARP_TRANSPOSE)
        coop.block.exclusive_sum(items, items, items_per_thread)
        coop.block.store(d_out[base:], items, items_per_thread,
                         algorithm=coop.BlockStoreAlgorithm.WARP_TRANSPOSE)
    return coop_block_scan


def _coop_radix_sort(cache=False):
    from coopgen import coop
    cuda = compiler()
    types = importlib.import_module(f"{cuda.__name__.rpartition('.')[0]}.types")

    # two-phase: objects made on the host, called with their storage first, as released
    # cuda.coop code does
    load = coop.block.make_load(types.int32, THREADS, ITEMS, "warp_transpose")
    sort = coop.block.make_radix_sort_keys(types.int32, THREADS, ITEMS)
    store = coop.block.make_store(types.int32, THREADS, ITEMS, "warp_transpose")
    storage_bytes = max(load.temp_storage_bytes, sort.temp_storage_bytes,
                        store.temp_storage_bytes)

    @cuda.jit(link=load.files + sort.files + store.files, cache=cache)
    def coop_block_radix_sort(d_in, d_out):
        temp_storage = cuda.shared.array(shape=storage_bytes, dtype=types.uint8)
        items = cuda.local.array(ITEMS, types.int32)
        base = cuda.blockIdx.x * TILE
        load(temp_storage, d_in[base:], items)
        cuda.syncthreads()
        sort(temp_storage, items)
        cuda.syncthreads()
        store(temp_storage, d_out[base:], items)
    return coop_block_radix_sort


# --- inputs and answers ---------------------------------------------------------------------

def _ints(dtype, lo=-(1 << 20), hi=1 << 20):
    return lambda rng, n: rng.integers(lo, hi, n, dtype=dtype)


def _floats(dtype):
    return lambda rng, n: rng.standard_normal(n, dtype=np.float64).astype(dtype)


def _tiles(x, width=TILE):
    return x.reshape(-1, width)


def _sort_storage_bytes(dtype, threads):
    """sizeof the nvcc build's union of the load, sort and store TempStorage."""
    def size():
        from coopgen import block, kernel_temp_storage
        tile = dict(threads_per_block=threads, items_per_thread=ITEMS)
        return kernel_temp_storage(
            block.BlockLoad(dtype, **tile, algorithm="warp_transpose"),
            block.BlockRadixSort(dtype, **tile),
            block.BlockStore(dtype, **tile, algorithm="warp_transpose"))[0]
    return size


def _exclusive(x, width):
    t = _tiles(x, width)
    return (np.cumsum(t, axis=1, dtype=x.dtype) - t).ravel()


CASES = {c.name: c for c in [
    Case("sum", "block sum: striped load + BlockReduce::Sum", np.int32, 1 << 28, _sum(np.int32),
         "block_sum_i32", lambda n: n // TILE,
         lambda x: _tiles(x).sum(axis=1, dtype=np.int32), _ints(np.int32)),
    Case("scan", "block scan: warp-transpose load, ExclusiveSum, store", np.int32, 1 << 28, _scan,
         "block_scan_i32", lambda n: n, lambda x: _exclusive(x, TILE), _ints(np.int32)),
    Case("sort", "block radix sort: load, Sort, store", np.int32, 1 << 26, _radix_sort(np.int32),
         "block_radix_sort_i32", lambda n: n, lambda x: np.sort(_tiles(x), axis=1).ravel(),
         _ints(np.int32, -(1 << 30), 1 << 30)),
    Case("merge_sort", "block merge sort, Python comparator", np.float32, 1 << 26, _merge_sort,
         "block_merge_sort_f32", lambda n: n, lambda x: np.sort(_tiles(x), axis=1).ravel(),
         _floats(np.float32)),
    Case("histogram", "block histogram: 256 bins of uint8", np.uint32, 1 << 28, _histogram,
         "block_histogram_u8", lambda n: n // TILE * 256,
         lambda x: np.stack([np.bincount(t, minlength=256) for t in _tiles(x)]).astype(
             np.uint32).ravel(),
         lambda rng, n: rng.integers(0, 256, n, dtype=np.uint8)),
    Case("warp_sum", "warp reduce: WarpLoad striped, thread sum, WarpReduce::Sum", np.int32,
         1 << 28, _warp_sum, "warp_sum_i32", lambda n: n // WARP_TILE,
         lambda x: _tiles(x, WARP_TILE).sum(axis=1, dtype=np.int32), _ints(np.int32)),
    Case("warp_scan", "warp scan: WarpLoad transpose, thread scan, WarpScan::ExclusiveSum",
         np.int32, 1 << 28, _warp_scan, "warp_scan_i32", lambda n: n,
         lambda x: _exclusive(x, WARP_TILE), _ints(np.int32)),
    Case("sum_f64", "block sum, float64", np.float64, 1 << 27, _sum(np.float64),
         "block_sum_f64", lambda n: n // TILE, lambda x: _tiles(x).sum(axis=1),
         _floats(np.float64), exact=False),
    Case("sort_i64", "block radix sort, int64", np.int64, 1 << 26, _radix_sort(np.int64),
         "block_radix_sort_i64", lambda n: n, lambda x: np.sort(_tiles(x), axis=1).ravel(),
         _ints(np.int64, -(1 << 62), 1 << 62)),
    Case("sort_i64_1024", "block radix sort, int64, 1024 threads: 132 KB dynamic shared memory",
         np.int64, 1 << 26, _radix_sort(np.int64, 1024), "block_radix_sort_i64_1024",
         lambda n: n, lambda x: np.sort(_tiles(x, 1024 * ITEMS), axis=1).ravel(),
         _ints(np.int64, -(1 << 62), 1 << 62), threads=1024,
         native_dynamic_smem=_sort_storage_bytes(np.int64, 1024)),
    Case("coop_scan", "scan in cuda.coop's spelling, items per thread a kernel argument",
         np.int32, 1 << 28, _coop_scan, "block_scan_i32", lambda n: n,
         lambda x: _exclusive(x, TILE), _ints(np.int32), extra_args=(ITEMS,),
         not_on_mlir="its array sizes come from a kernel argument"),
    Case("coop_sort", "radix sort in cuda.coop's two-phase spelling (make_*, storage first)",
         np.int32, 1 << 26, _coop_radix_sort, "block_radix_sort_i32", lambda n: n,
         lambda x: np.sort(_tiles(x), axis=1).ravel(), _ints(np.int32, -(1 << 30), 1 << 30)),
]}

# The input dtype where it differs from the output's (histogram: uint8 in, uint32 counts out).
INPUT_DTYPE = {"histogram": np.uint8}

# Static shared memory of the nvcc-built kernels (ptxas -v): coopgen's builds must not need more
# (sort_i64_1024's storage is dynamic, in both builds).
NATIVE_SMEM = {"sum": 44, "scan": 16912, "sort": 16912, "merge_sort": 16912, "histogram": 10304,
               "warp_sum": 0, "warp_scan": 16928, "sum_f64": 80, "sort_i64": 33808,
               "sort_i64_1024": 0, "coop_scan": 16912, "coop_sort": 16912}

def _plain(cache=False):
    """numba alone, no coopgen: what any numba kernel's first launch costs."""
    cuda = compiler()

    @cuda.jit(cache=cache)
    def plain(d_in, d_out):
        i = cuda.grid(1)
        if i < d_out.size:
            d_out[i] = d_in[i] + 1
    return plain


PLAIN = Case("plain numba", "a numba kernel without coopgen (baseline)", np.int32, TILE * 64,
             _plain, "", lambda n: n, lambda x: x + 1, _ints(np.int32))

# The kernels whose compile time the issue tracks, after the baseline.
COMPILE_CASES = {"plain numba": PLAIN, **{name: CASES[name] for name in ("sum", "scan", "sort")}}


NATIVE_CU = r"""
#include <cub/block/block_load.cuh>
#include <cub/block/block_store.cuh>
#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>
#include <cub/block/block_radix_sort.cuh>
#include <cub/block/block_merge_sort.cuh>
#include <cub/block/block_histogram.cuh>
#include <cub/warp/warp_load.cuh>
#include <cub/warp/warp_store.cuh>
#include <cub/warp/warp_reduce.cuh>
#include <cub/warp/warp_scan.cuh>
constexpr int T = 256, N = 16, TILE = T * N, WARP_TILE = 32 * N;

template <class V>
__device__ void block_sum(const V* in, V* out) {
  using Load = cub::BlockLoad<V, T, N, cub::BLOCK_LOAD_STRIPED>;
  using Reduce = cub::BlockReduce<V, T>;
  __shared__ typename Reduce::TempStorage ts;
  V items[N];
  Load().Load(in + blockIdx.x * TILE, items);
  V total = Reduce(ts).Sum(items);
  if (threadIdx.x == 0) out[blockIdx.x] = total;
}
extern "C" __global__ void __launch_bounds__(T) block_sum_i32(const int* in, int* out) {
  block_sum(in, out);
}
extern "C" __global__ void __launch_bounds__(T) block_sum_f64(const double* in, double* out) {
  block_sum(in, out);
}

extern "C" __global__ void __launch_bounds__(T) block_scan_i32(const int* in, int* out) {
  using Load = cub::BlockLoad<int, T, N, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Scan = cub::BlockScan<int, T>;
  using Store = cub::BlockStore<int, T, N, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  __shared__ union { typename Load::TempStorage l; typename Scan::TempStorage s;
                     typename Store::TempStorage st; } ts;
  int items[N];
  Load(ts.l).Load(in + blockIdx.x * TILE, items);
  __syncthreads();
  Scan(ts.s).ExclusiveSum(items, items);
  __syncthreads();
  Store(ts.st).Store(out + blockIdx.x * TILE, items);
}

template <class K, int BT>
struct RadixSortTile {
  using Load = cub::BlockLoad<K, BT, N, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Sort = cub::BlockRadixSort<K, BT, N>;
  using Store = cub::BlockStore<K, BT, N, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  union Storage { typename Load::TempStorage l; typename Sort::TempStorage s;
                  typename Store::TempStorage st; };
  static __device__ void run(const K* in, K* out, Storage& ts) {
    K items[N];
    Load(ts.l).Load(in + blockIdx.x * BT * N, items);
    __syncthreads();
    Sort(ts.s).Sort(items);
    __syncthreads();
    Store(ts.st).Store(out + blockIdx.x * BT * N, items);
  }
};
template <class K>
__device__ void block_radix_sort(const K* in, K* out) {
  __shared__ typename RadixSortTile<K, T>::Storage ts;
  RadixSortTile<K, T>::run(in, out, ts);
}
extern "C" __global__ void __launch_bounds__(T) block_radix_sort_i32(const int* in, int* out) {
  block_radix_sort(in, out);
}
extern "C" __global__ void __launch_bounds__(T)
block_radix_sort_i64(const long long* in, long long* out) {
  block_radix_sort(in, out);
}
// 132 KB of storage: dynamic shared memory. The host raises the kernel's
// MaxDynamicSharedMemorySize attribute and launches with sizeof(Storage) dynamic bytes.
extern "C" __global__ void __launch_bounds__(1024)
block_radix_sort_i64_1024(const long long* in, long long* out) {
  using Tile = RadixSortTile<long long, 1024>;
  extern __shared__ __align__(16) unsigned char smem[];
  Tile::run(in, out, *reinterpret_cast<typename Tile::Storage*>(smem));
}

struct Less {
  __device__ bool operator()(const float& a, const float& b) const { return a < b; }
};
extern "C" __global__ void __launch_bounds__(T) block_merge_sort_f32(const float* in, float* out) {
  using Load = cub::BlockLoad<float, T, N, cub::BLOCK_LOAD_WARP_TRANSPOSE>;
  using Sort = cub::BlockMergeSort<float, T, N>;
  using Store = cub::BlockStore<float, T, N, cub::BLOCK_STORE_WARP_TRANSPOSE>;
  __shared__ union { typename Load::TempStorage l; typename Sort::TempStorage s;
                     typename Store::TempStorage st; } ts;
  float keys[N];
  Load(ts.l).Load(in + blockIdx.x * TILE, keys);
  __syncthreads();
  Sort(ts.s).Sort(keys, Less());
  __syncthreads();
  Store(ts.st).Store(out + blockIdx.x * TILE, keys);
}

extern "C" __global__ void __launch_bounds__(T)
block_histogram_u8(const unsigned char* in, unsigned int* out) {
  using Load = cub::BlockLoad<unsigned char, T, N, cub::BLOCK_LOAD_STRIPED>;
  using Histogram = cub::BlockHistogram<unsigned char, T, N, 256>;
  __shared__ typename Histogram::TempStorage ts;
  __shared__ unsigned int bins[256];
  unsigned char items[N];
  Load().Load(in + blockIdx.x * TILE, items);
  Histogram(ts).Histogram(items, bins);
  __syncthreads();
  out[blockIdx.x * 256 + threadIdx.x] = bins[threadIdx.x];
}

extern "C" __global__ void __launch_bounds__(T) warp_sum_i32(const int* in, int* out) {
  using Load = cub::WarpLoad<int, N, cub::WARP_LOAD_STRIPED>;
  using Reduce = cub::WarpReduce<int>;
  __shared__ typename Reduce::TempStorage ts[T / 32];
  int items[N];
  const int w = (blockIdx.x * T + threadIdx.x) / 32;
  Load().Load(in + w * WARP_TILE, items);
  int partial = items[0];
  for (int i = 1; i < N; ++i) partial += items[i];
  int total = Reduce(ts[threadIdx.x / 32]).Sum(partial);
  if (threadIdx.x % 32 == 0) out[w] = total;
}

extern "C" __global__ void __launch_bounds__(T) warp_scan_i32(const int* in, int* out) {
  using Load = cub::WarpLoad<int, N, cub::WARP_LOAD_TRANSPOSE>;
  using Scan = cub::WarpScan<int>;
  using Store = cub::WarpStore<int, N, cub::WARP_STORE_TRANSPOSE>;
  __shared__ union { typename Load::TempStorage l[T / 32]; typename Scan::TempStorage s[T / 32];
                     typename Store::TempStorage st[T / 32]; } ts;
  const int wb = threadIdx.x / 32;
  const int base = (blockIdx.x * T + threadIdx.x) / 32 * WARP_TILE;
  int items[N];
  Load(ts.l[wb]).Load(in + base, items);
  __syncwarp();
  int running = 0;
  for (int i = 0; i < N; ++i) { int v = items[i]; items[i] = running; running += v; }
  int prefix;
  Scan(ts.s[wb]).ExclusiveSum(running, prefix);
  for (int i = 0; i < N; ++i) items[i] += prefix;
  __syncwarp();
  Store(ts.st[wb]).Store(out + base, items);
}
"""
