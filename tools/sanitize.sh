#!/usr/bin/env bash
# compute-sanitizer over coopgen kernels: memcheck, racecheck, synccheck and initcheck must
# each report 0 errors (racecheck: 0 hazards).
#
# The kernels are the differential suite's (tools/fuzz): configurations drawn from the specs,
# several primitives per kernel, so the implicit shared storage is reused from call to call
# with the barriers coopgen keeps or elides (coopgen.codegen.bundle, _storage_barriers):
# racecheck is what shows the elided ones are safe. Each configuration is also checked
# against numpy, as in the suite. TESTS names GPU tests to run under each tool too
# (pytest -m gpu, files and pytest arguments), e.g. the CuTe DSL backend's own.
#
#   tools/sanitize.sh                    # every tool, the default draw
#   TOOLS="racecheck" CONFIGS=200 tools/sanitize.sh
#   BACKEND=cute tools/sanitize.sh       # CuTe DSL kernels
#   BACKEND=cute BLOCKS= TOOLS=memcheck TESTS="tests/cute/test_cute_gpu.py -k 128x4" \
#     tools/sanitize.sh                  # the CuTe DSL GPU tests alone (BLOCKS empty: no draw)
#
# Environment: TOOLS, CONFIGS (per block shape), SEED, BLOCKS (space-separated shapes),
# BATCH (calls per kernel; CuTe DSL: 24, its compiles cost more), BACKEND (numba-cuda, mlir
# or cute: the compiler the kernels are written for), TESTS (pytest files and arguments; none
# by default).
# One line per tool and run: the sanitizer's summary, and the configurations' or tests'.
# Exit status: 0 when every run is clean.
set -uo pipefail
cd "$(dirname "$0")/.."

TOOLS=${TOOLS:-"memcheck racecheck synccheck initcheck"}
CONFIGS=${CONFIGS:-48}
SEED=${SEED:-20261123}
BLOCKS=${BLOCKS-"64,2 96 4,4,8"}  # (set but empty: no fuzz runs)
BACKEND=${BACKEND:-numba-cuda}
if [ "$BACKEND" = cute ]; then BATCH=${BATCH:-24}; else BATCH=${BATCH:-8}; fi
TESTS=${TESTS:-}
SANITIZER=${SANITIZER:-compute-sanitizer}

status=0
# sanitize TOOL WHAT COMMAND...: one run under the tool, its line, its errors if any
sanitize() {
  local tool=$1 what=$2 log rc summary checked
  shift 2
  log=$(mktemp)
  "$SANITIZER" --tool "$tool" --error-exitcode 99 "$@" >"$log" 2>&1
  rc=$?
  summary=$(grep -E "(ERROR|RACECHECK) SUMMARY" "$log" | tail -1 | sed 's/^=* *//')
  checked=$(grep -E "^[0-9]+ configurations in|^=* *[0-9]+ (passed|failed)|^[0-9]+ (passed|failed)" \
    "$log" | tail -1 | sed 's/^=* *//; s/ =*$//')
  echo "$tool $what: ${summary:-no summary} | ${checked:-driver did not finish}"
  if [ "$rc" -ne 0 ] || ! echo "$summary" | grep -qE "SUMMARY: 0 (errors|hazards)"; then
    status=1
    grep -E "^=========|^(MISMATCH|ERROR|FAULT) |^FAILED |Error" "$log" | head -40
  fi
  rm -f "$log"
}

for tool in $TOOLS; do
  for block in $BLOCKS; do
    sanitize "$tool" "$BACKEND block=$block" \
      python3 -m tools.fuzz --configs "$CONFIGS" --seed "$SEED" --block "$block" \
      --batch "$BATCH" --backend "$BACKEND" --quiet
  done
  if [ -n "$TESTS" ]; then
    # shellcheck disable=SC2086  # TESTS is a list of paths and arguments
    sanitize "$tool" "tests=$TESTS" python3 -m pytest -q -m gpu -p no:cacheprovider $TESTS
  fi
done
exit $status
