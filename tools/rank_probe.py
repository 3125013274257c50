"""Probe: BlockRadixRankMatch::RankKeys, 3 arguments vs with exclusive_digit_prefix, in CUDA C++
(nvcc and NVRTC) and through coopgen, against a stable ranking by digit."""
import subprocess
import tempfile

import cupy
import numpy as np
from numba import cuda

from coopgen import block, local
from coopgen.codegen import nvrtc
from coopgen.model import registry

SRC = r"""
#include <cub/block/block_radix_rank.cuh>
struct Extract { __device__ unsigned int Digit(unsigned int k) const { return (k >> 3) & 31; } };
using R = cub::BlockRadixRankMatch<128, 5, false>;
extern "C" __global__ void rank3(const unsigned* in, int* out) {
  __shared__ typename R::TempStorage ts;
  unsigned keys[4]; int ranks[4];
  for (int i = 0; i < 4; ++i) keys[i] = in[threadIdx.x * 4 + i];
  R(ts).RankKeys(keys, ranks, Extract{});
  for (int i = 0; i < 4; ++i) out[threadIdx.x * 4 + i] = ranks[i];
}
using E = cub::BlockRadixRankMatchEarlyCounts<128, 5, true>;
extern "C" __global__ void early3(const unsigned* in, int* out) {
  __shared__ typename E::TempStorage ts;
  unsigned keys[4]; int ranks[4];
  for (int i = 0; i < 4; ++i) keys[i] = in[threadIdx.x * 4 + i];
  E(ts).RankKeys(keys, ranks, Extract{});
  for (int i = 0; i < 4; ++i) out[threadIdx.x * 4 + i] = ranks[i];
}
extern "C" __global__ void early4(const unsigned* in, int* out) {
  __shared__ typename E::TempStorage ts;
  unsigned keys[4]; int ranks[4]; int prefix[E::BINS_PER_THREAD];
  for (int i = 0; i < 4; ++i) keys[i] = in[threadIdx.x * 4 + i];
  E(ts).RankKeys(keys, ranks, Extract{}, prefix);
  for (int i = 0; i < 4; ++i) out[threadIdx.x * 4 + i] = ranks[i];
}
extern "C" __global__ void rank4(const unsigned* in, int* out) {
  __shared__ typename R::TempStorage ts;
  unsigned keys[4]; int ranks[4]; int prefix[R::BINS_TRACKED_PER_THREAD];
  for (int i = 0; i < 4; ++i) keys[i] = in[threadIdx.x * 4 + i];
  R(ts).RankKeys(keys, ranks, Extract{}, prefix);
  for (int i = 0; i < 4; ++i) out[threadIdx.x * 4 + i] = ranks[i];
}
"""


@cuda.jit(device=True)
def digit_of(key):
    return (key >> 3) & 31


@cuda.jit
def coop3(d_keys, d_ranks):
    keys = local.array(4, np.uint32)
    ranks = local.array(4, np.int32)
    t = cuda.threadIdx.x
    for i in range(4):
        keys[i] = d_keys[t * 4 + i]
    block.radix_rank_match(keys, ranks, digit_of, radix_bits=5, is_descending=False)
    for i in range(4):
        d_ranks[t * 4 + i] = ranks[i]


keys = np.random.default_rng(1).integers(0, 1 << 31, 512).astype(np.uint32)
digits = (keys >> 3) & 31
want = np.empty(512, np.int64)
want[np.argsort(digits, kind="stable")] = np.arange(512)
d = tempfile.mkdtemp()
with open(f"{d}/r.cu", "w", encoding="utf-8") as f:
    f.write(SRC)
subprocess.run(["nvcc", "-arch=sm_90", "-cubin", f"-I{registry.include_dir()}", "-o", f"{d}/r.cubin",
                f"{d}/r.cu"], check=True)
with open(f"{d}/r.ptx", "w", encoding="utf-8") as f:
    f.write(nvrtc.compile_ptx(SRC))
d_in = cupy.asarray(keys)
for label, mod in (("nvcc", cupy.RawModule(path=f"{d}/r.cubin")),
                   ("nvrtc", cupy.RawModule(path=f"{d}/r.ptx"))):
    for name in ("rank3", "rank4", "early3", "early4"):
        out = cupy.zeros(512, np.int32)
        mod.get_function(name)((1,), (128,), (d_in, out))
        got = cupy.asnumpy(out)
        by_rank = np.empty(512, np.int64)
        by_rank[got] = digits
        steps = np.diff(by_rank)
        ordered = (steps <= 0).all() if name.startswith("early") else (steps >= 0).all()
        print(label, name, "stable-blocked" if np.array_equal(got, want) else "other-order",
              "digits ordered" if ordered else "DIGITS NOT ORDERED")
out = cuda.device_array(512, np.int32)
coop3[1, 128](cuda.to_device(keys), out)
got = out.copy_to_host()
print("coopgen rank3", "ok" if np.array_equal(got, want) else f"WRONG {np.sum(got != want)}")
