#!/usr/bin/env bash
# compute-sanitizer over coopgen kernels: memcheck, racecheck, synccheck and initcheck must
# each report 0 errors (racecheck: 0 hazards).
#
# The kernels are the differential suite's (tools/fuzz): configurations drawn from the specs,
# several primitives per kernel, so the implicit shared storage is reused from call to call
# with the barriers coopgen keeps or elides (coopgen.codegen.bundle, _storage_barriers):
# racecheck is what shows the elided ones are safe. Each configuration is also checked
# against numpy, as in the suite.
#
#   tools/sanitize.sh                    # every tool, the default draw
#   TOOLS="racecheck" CONFIGS=200 tools/sanitize.sh
#
# Environment: TOOLS, CONFIGS (per block shape), SEED, BLOCKS (space-separated shapes),
# BATCH (calls per kernel), BACKEND (numba-cuda or mlir: the compiler the kernels are written
# for). Exit status: 0 when every run is clean.
set -uo pipefail
cd "$(dirname "$0")/.."

TOOLS=${TOOLS:-"memcheck racecheck synccheck initcheck"}
CONFIGS=${CONFIGS:-48}
SEED=${SEED:-20261123}
BLOCKS=${BLOCKS:-"64,2 96 4,4,8"}
BATCH=${BATCH:-8}
BACKEND=${BACKEND:-numba-cuda}
SANITIZER=${SANITIZER:-compute-sanitizer}

status=0
for tool in $TOOLS; do
  for block in $BLOCKS; do
    log=$(mktemp)
    "$SANITIZER" --tool "$tool" --error-exitcode 99 \
      python3 -m tools.fuzz --configs "$CONFIGS" --seed "$SEED" --block "$block" \
      --batch "$BATCH" --backend "$BACKEND" --quiet >"$log" 2>&1
    rc=$?
    summary=$(grep -E "(ERROR|RACECHECK) SUMMARY" "$log" | tail -1 | sed 's/^=* *//')
    checked=$(grep -E "^[0-9]+ configurations in" "$log" | tail -1)
    echo "$tool block=$block: ${summary:-no summary} | ${checked:-driver did not finish}"
    if [ "$rc" -ne 0 ] || ! echo "$summary" | grep -qE "SUMMARY: 0 (errors|hazards)"; then
      status=1
      grep -E "^=========|^(MISMATCH|ERROR|FAULT) " "$log" | head -40
    fi
    rm -f "$log"
  done
done
exit $status
