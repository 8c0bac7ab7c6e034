#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz, clang with ASan + UBSan) into build-fuzz/ and runs
# each for a fixed number of executions from its checked-in seed corpus. Prints each target's
# executions and a total; any finding (crash, sanitizer report, leak, timeout, out-of-memory, an
# escaped non-gf exception) fails the script and names the reproducer file.
#
# A fixed seed and a fixed count make a run repeatable: the same inputs on every machine, so a
# red run reproduces anywhere and a green one does not turn red by luck. Longer hunts by hand:
# more runs, or GF_FUZZ_SEED=0 (libFuzzer picks a seed).
#
# usage: scripts/fuzz.sh [RUNS_PER_TARGET]   (default 1000000; GF_FUZZ_RUNS works too)
set -euo pipefail
cd "$(dirname "$0")/.."
runs="${1:-${GF_FUZZ_RUNS:-1000000}}"
# A backstop only: a run that reaches it has stopped early and says so.
max_seconds=600

cxx="$(command -v clang++-14 || command -v clang++ || true)"
cc="$(command -v clang-14 || command -v clang || true)"
if [ -z "$cxx" ] || [ -z "$cc" ]; then
  echo "fuzz: clang is missing; run scripts/setup.sh" >&2
  exit 1
fi
CC="$cc" CXX="$cxx" cmake -S . -B build-fuzz -G Ninja -DGF_FUZZ=ON -DGF_WITH_CUDA=OFF \
  -DGF_BUILD_TESTS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build-fuzz --parallel "$(nproc)"

work="build-fuzz/fuzz-run"
rm -rf "$work"
mkdir -p "$work"
total=0
failed=0
for bin in build-fuzz/bin/fuzz_*; do
  target="$(basename "$bin")"
  seeds="tests/fuzz/corpus/$target"
  # New inputs go to a scratch corpus; the checked-in seeds are only read.
  mkdir -p "$work/$target/corpus" "$work/$target/findings"
  log="$work/$target/log.txt"
  status=0
  ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0" \
  UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
    "$bin" -seed="${GF_FUZZ_SEED:-1}" -runs="$runs" -max_total_time="$max_seconds" -rss_limit_mb=2048 -malloc_limit_mb=2048 -timeout=10 \
      -print_final_stats=1 -artifact_prefix="$work/$target/findings/" \
      "$work/$target/corpus" "$seeds" >"$log" 2>&1 || status=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$log" | tail -1)"
  execs="${execs:-0}"
  total=$((total + execs))
  findings=("$work/$target/findings/"*)
  if [ "$status" -ne 0 ] || [ -e "${findings[0]}" ]; then
    failed=1
    echo "fuzz: $target FAILED after $execs executions (exit $status); log: $log"
    grep -E "ERROR:|runtime error:|escaped|invariant|Test unit written" "$log" | head -20 || true
    for f in "${findings[@]}"; do [ -e "$f" ] && echo "fuzz: reproducer: $f (run: $bin $f)"; done
  else
    seconds="$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)"
    if [ -n "$seconds" ]; then
      echo "fuzz: $target: $execs executions in ${seconds}s, no finding"
    else
      echo "fuzz: $target: $execs executions, no finding (stopped at the ${max_seconds}s backstop)"
    fi
  fi
done
echo "fuzz: total executions: $total"
exit "$failed"
