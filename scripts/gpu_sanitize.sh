#!/usr/bin/env bash
# The GPU test binaries under NVIDIA's compute-sanitizer, for a machine with a GPU and a build
# that has them (scripts/gpu_check.sh makes one).
#
#   scripts/gpu_sanitize.sh TOOL [BUILD_DIR] [SHARDS]
#
# TOOL is memcheck (out-of-bounds and misaligned accesses, leaked device allocations), racecheck
# (shared-memory hazards), initcheck (reads of uninitialised device memory) or synccheck.
# gpu_tests is split into SHARDS (default 8) processes run side by side (GTEST_TOTAL_SHARDS),
# since the tools slow every kernel down; gpu_reliability_tests runs afterwards in one process,
# alone on the GPU, as its tests read the device's free memory; under racecheck, which slows
# every kernel a hundredfold, its stress loops run a tenth of their repeats (GF_STRESS_DIVISOR=10:
# the same kernels, fewer times). Logs go to
# ${OUT:-/tmp}/gpu_sanitize/TOOL/; failing CUDA calls are not reported (--report-api-errors no):
# the error-path tests make them on purpose (an allocation over the cap, a missing function) and
# check that graphfuse turns them into errors. The last lines say, per shard, the tests run, failed and the
# sanitizer's error count. Exits non-zero when any shard fails or reports an error (racecheck:
# outside cuBLASLt's own kernels, see run_shards).
set -uo pipefail
cd "$(dirname "$0")/.."
tool="${1:?usage: scripts/gpu_sanitize.sh memcheck|racecheck|initcheck|synccheck [BUILD_DIR] [SHARDS]}"
build="${2:-build-gpu}"
shards="${3:-8}"
case "$tool" in
  memcheck) extra=(--leak-check full) ;;
  # Every hazard printed, so that each can be placed in its kernel (below).
  racecheck) extra=(--racecheck-report hazard --print-limit 100000) ;;
  initcheck | synccheck) extra=() ;;
  *) echo "unknown tool '$tool'" >&2; exit 2 ;;
esac
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ -x "$sanitizer" ] || { echo "compute-sanitizer not found (PATH, /usr/local/cuda/bin)" >&2; exit 2; }
out="${OUT:-/tmp}/gpu_sanitize/$tool"
mkdir -p "$out"

for b in gpu_tests gpu_reliability_tests; do
  [ -x "$build/bin/$b" ] || { echo "no $build/bin/$b: build it first" >&2; exit 2; }
done

status=0
# run_shards BINARY COUNT [STRESS_DIVISOR]: COUNT processes side by side, then one summary line each.
run_shards() {
  local bin="$build/bin/$1" count="$2" divisor="${3:-1}" pids=() logs=() j rc log passed failed errors
  for ((j = 0; j < count; ++j)); do
    log="$out/$1.$j.log"
    logs+=("$log")
    GF_STRESS_DIVISOR=$divisor GTEST_TOTAL_SHARDS=$count GTEST_SHARD_INDEX=$j \
      "$sanitizer" --tool "$tool" --print-limit 50 "${extra[@]}" --report-api-errors no --error-exitcode 99 \
      "$bin" --gtest_brief=1 >"$log" 2>&1 &
    pids+=($!)
  done
  for ((j = 0; j < count; ++j)); do
    wait "${pids[$j]}"
    rc=$?
    log="${logs[$j]}"
    passed=$(grep -oE '\[  PASSED  \] [0-9]+' "$log" | grep -oE '[0-9]+$' || echo 0)
    failed=$(grep -cE '^\[  FAILED  \] [A-Za-z]' "$log" || true)
    errors=$(grep -oE '(ERROR SUMMARY: |SUMMARY: [0-9]+ hazards displayed \()[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
    note=""
    # racecheck: hazards whose threads are all in cuBLASLt's kernels (nvjet_*, shipped without
    # source) are reported but do not fail the run; on an H200 one of them draws potential WAR
    # hazards where a thread writes the value already there. Any hazard in another kernel fails.
    if [ "$tool" = racecheck ] && [ "$rc" = 99 ] && [ "$failed" = 0 ] && [ "${errors:-0}" != 0 ]; then
      ours=$(grep -oE '(Read|Write) Thread \([0-9,]+\) at [A-Za-z0-9_]+' "$log" | sed -E 's/.* at //' |
        grep -vc '^nvjet_' || true)
      if [ "$ours" = 0 ]; then
        note=" (all in cuBLASLt kernels: $(grep -oE ' at nvjet_[A-Za-z0-9_]+' "$log" | sort -u | tr -d ' ' | sed 's/^at//' | tr '\n' ' ')none in ours)"
        rc=0
      fi
    fi
    echo "$(basename "$log" .log): exit $rc, passed ${passed:-0}, failed $failed, $tool errors $errors$note" |
      tee -a "$out/summary.log"
    if [ "$rc" != 0 ]; then
      status=1
      # What went wrong, in one file: the sanitizer's reports and the failed assertions.
      grep -B2 -A12 -E '^========= (Invalid|Program hit|Race|Uninitialized|Barrier|Leaked|Error)|Failure$' "$log" \
        >>"$out/problems.log"
    fi
  done
}
: >"$out/summary.log"
: >"$out/problems.log"
run_shards gpu_tests "$shards"
run_shards gpu_reliability_tests 1 "$([ "$tool" = racecheck ] && echo 10 || echo 1)"
echo "$tool: $([ $status = 0 ] && echo clean || echo FOUND PROBLEMS); logs in $out" | tee -a "$out/summary.log"
exit $status
