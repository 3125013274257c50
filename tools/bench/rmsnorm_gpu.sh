#!/usr/bin/env bash
# The PyTorch surface's GPU run: tests/gpu/test_torch.py, then the RMSNorm wide sweep
# (tools/bench/rmsnorm.py --sweep), on a host with a CUDA GPU, PyTorch and Triton (QuACK and
# CuTe DSL where installed). Each step's output, its wall time and the sweep's JSON and table
# go to $OUT (default: rmsnorm-gpu-out).
#
#     bash tools/bench/rmsnorm_gpu.sh tests    # test_torch.py: -n 4, then the host-time test alone
#     bash tools/bench/rmsnorm_gpu.sh sweep    # the 306 shapes, every peer
#     bash tools/bench/rmsnorm_gpu.sh slice    # bfloat16 only (153 shapes), when time is short
#     bash tools/bench/rmsnorm_gpu.sh rest     # float16 after a slice: merges into the same JSON
#     bash tools/bench/rmsnorm_gpu.sh decode   # 1 to 64 rows only (136 shapes): the latency-bound ones
#     bash tools/bench/rmsnorm_gpu.sh all      # tests, then sweep
#
# GPUS=N times the sweep on N GPUs of the host (one process each, whole widths each); JOBS=N
# processes fill the compile caches first (default: the host's cores, at most 32); BUDGET=S
# seconds for the sweep (default 500: no shape starts past them, and the table shows what was
# timed; 0: no limit), so a sweep fits a call limited to 10 minutes with the set-up: both dtypes
# on four H100s of a 64-core host in one call of at most 9.5 minutes (about 5 expected):
#     timeout 570 env GPUS=4 JOBS=32 BUDGET=500 bash tools/bench/rmsnorm_gpu.sh sweep
# SITE=DIR
# puts a `pip install --target DIR` folder on PYTHONPATH, with CuTe DSL's dsl_packages under
# it (pip --target skips the .pth file that adds them). A sweep cut short keeps each GPU's
# shapes in $OUT/rmsnorm-parts-*/: `python3 tools/bench/rmsnorm.py --table $OUT/rmsnorm-parts-*/*.json`.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-rmsnorm-gpu-out}
mkdir -p "$out"
if [ -n "${SITE:-}" ]; then
  export PYTHONPATH="$SITE:$SITE/nvidia_cutlass_dsl/dsl_packages:${PYTHONPATH:-}"
fi
export PYTHONUNBUFFERED=1
python=${PYTHON:-python3}

step() {  # step NAME COMMAND...: runs it, its output to $out/NAME.log, its time to steps.txt
  local name=$1 t0=$SECONDS rc
  shift
  "$@" 2>&1 | tee "$out/$name.log"
  rc=${PIPESTATUS[0]}
  echo "== $name: $((SECONDS - t0)) s, exit $rc" | tee -a "$out/steps.txt"
  return "$rc"
}

tests() {
  # Four pytest-xdist workers: the tests' time is compiling (numba, NVRTC, Inductor) on the
  # host's cores, each worker with its own CUDA context; more would crowd the host's cores
  # that Inductor's and NVRTC's own threads use. The host-time test measures µs per call,
  # which other processes compiling beside it would inflate: it runs alone after them.
  local parallel=()
  if "$python" -c "import xdist" 2>/dev/null; then parallel=(-n "${TEST_WORKERS:-4}"); fi
  step test_torch "$python" -m pytest -q -m gpu tests/gpu/test_torch.py -k "not host_time" \
    ${parallel[@]+"${parallel[@]}"} -p no:cacheprovider
  local rc=$?
  step test_torch_host_time "$python" -m pytest -q -m gpu tests/gpu/test_torch.py -k host_time \
    -s -p no:cacheprovider || rc=$?
  return "$rc"
}

sweep() {  # sweep [rmsnorm.py options]: every shape (or the slice named) into one JSON
  local rc
  step "sweep${1:+-${2//,/-}}" "$python" tools/bench/rmsnorm.py --sweep --gpus "${GPUS:-1}" \
    ${JOBS:+--jobs "$JOBS"} --budget "${BUDGET:-500}" --json "$out/rmsnorm-sweep.json" "$@"
  rc=$?
  if [ -f "$out/rmsnorm-sweep.json" ]; then
    "$python" tools/bench/rmsnorm.py --table "$out/rmsnorm-sweep.json" > "$out/rmsnorm-sweep.md"
  fi
  return "$rc"
}

"$python" -c "import torch; print('torch', torch.__version__, 'GPUs', [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())])"
case "${1:-all}" in
  tests) tests ;;
  sweep) sweep ;;
  slice) sweep --dtypes bfloat16 ;;
  rest) sweep --dtypes float16 ;;
  decode) sweep --rows 1,4,16,64 ;;
  all) tests; rc=$?; sweep || rc=$?; exit "$rc" ;;
  *) echo "usage: rmsnorm_gpu.sh tests|sweep|slice|rest|decode|all" >&2; exit 2 ;;
esac
