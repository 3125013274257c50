#!/usr/bin/env bash
# The GPU checks behind the open work, one part at a time, each under a time limit, writing its
# logs to $OUT (default ./gpu-checks) and one summary line per check to $OUT/summary.txt:
#
#   bash tools/gpu_checks.sh group [NVIDIA-SUITE-COPY]  # group-first API: own tests, fuzz, suite
#   bash tools/gpu_checks.sh old-suite TESTS-COOP       # cuda.coop's old suite (tests/coop)
#   bash tools/gpu_checks.sh free                       # free functions: tests, fuzz, streaming
#   bash tools/gpu_checks.sh torch                      # coopgen.torch: tests, examples
#   bash tools/gpu_checks.sh docs                       # every doc code block, the README kernel
#   bash tools/gpu_checks.sh cute                       # the CuTe DSL backend (coopgen[cute])
#
# COOPGEN_COMPILER=numba_cuda_mlir runs the numba parts with numba-cuda-mlir's kernels.
# WORKERS (default 16) sets pytest's and the fuzz's processes.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-gpu-checks}
WORKERS=${WORKERS:-16}
COMPILER=${COOPGEN_COMPILER:-numba}
mkdir -p "$OUT"
tag=${COMPILER/numba_cuda_mlir/mlir}
backend=$([ "$COMPILER" = numba_cuda_mlir ] && echo mlir || echo numba-cuda)

check() {  # check NAME SECONDS COMMAND...: run it, keep its log, summarise its last lines
    local name=$1 limit=$2 t0=$SECONDS
    shift 2
    timeout "$limit" "$@" > "$OUT/$name-$tag.log" 2>&1
    local rc=$?
    local last
    last=$(grep -E "passed|failed|error|ok|mismatch|GB/s|x " "$OUT/$name-$tag.log" | tail -1)
    echo "$name [$tag] rc=$rc $((SECONDS - t0)) s: $last" | tee -a "$OUT/summary.txt"
}

pytest_gpu() { python3 -m pytest -m gpu -q -n "$WORKERS" -p no:cacheprovider -rf "$@"; }
fuzz() { python3 -m tools.fuzz --configs 10000 --workers "$WORKERS" --batch 16 --quiet \
             --backend "$backend" --time-limit 240 "$@"; }

case "${1:-}" in
group)
    check group-tests 300 pytest_gpu tests/gpu/test_group_api.py tests/gpu/test_group_api_traps.py
    check group-fuzz 270 fuzz --seed 20261127 --surface group
    if [ -n "${2:-}" ]; then
        suite_compiler=$([ "$COMPILER" = numba_cuda_mlir ] && echo numba_cuda_mlir || echo numba_cuda)
        check nvidia-suite 560 python3 -m tools.coop_suite "$2" --compiler "$suite_compiler" \
            -n "$WORKERS" --table "$OUT/nvidia-suite-$tag.txt"
    fi ;;
old-suite)
    check old-suite 560 python3 -m tools.coop_suite "$2" -n "$WORKERS" \
        --table "$OUT/old-suite.txt" ;;
free)
    check free-tests 240 pytest_gpu tests/gpu/test_free_functions_gpu.py
    check free-fuzz 270 fuzz --seed 20261128 --only Direct
    check thread-fuzz 270 fuzz --seed 20261129 --only Thread
    check shuffle-fuzz 270 fuzz --seed 20261130 --only Shuffle
    check streaming 200 python3 examples/streaming_cache_hints.py --n 268435456 \
        --weights 4194304 --repeats 50
    check blocked-vectorized 120 python3 examples/blocked_vectorized.py --n 268435456 \
        --repeats 50 ;;
torch)
    check torch-tests 400 pytest_gpu tests/gpu/test_torch.py tests/gpu/test_examples.py
    check torch-rms-norm 200 python3 examples/torch_rms_norm.py
    check torch-softmax 200 python3 examples/torch_softmax.py ;;
docs)
    check docs-blocks 400 pytest_gpu tests/gpu/test_docs_examples.py
    check readme-kernel 200 python3 tools/readme_kernel.py --run \
        $([ "$COMPILER" = numba_cuda_mlir ] && echo --backend mlir) ;;
cute)
    check cute-tests 400 python3 -m pytest -m gpu -q -p no:cacheprovider -rf tests/cute
    check cute-example 200 python3 examples/cute_sort_tiles.py --arch sm_90a --run ;;
*)
    sed -n '2,14p' "$0"
    exit 2 ;;
esac
