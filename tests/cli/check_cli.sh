#!/usr/bin/env bash
# End-to-end checks of the command-line tool: exit codes and the one-line error contract.
set -u
bin="$1"
failures=0
check() {  # check NAME EXPECTED_EXIT PATTERN -- ARGS...
  local name="$1" want="$2" pattern="$3"
  shift 4
  local out rc
  out=$("$bin" "$@" 2>&1)
  rc=$?
  if [ "$rc" != "$want" ] || ! grep -qE "$pattern" <<<"$out"; then
    echo "FAIL $name: exit $rc (want $want), output:"
    echo "$out" | head -20
    failures=$((failures + 1))
  else
    echo "ok   $name"
  fi
}
check help 0 'demo' -- --help
check no_subcommand 1 '^error: ' --
check unknown_subcommand 1 '^error: ' -- frobnicate
check demo_runs 0 'output y: f32\[1,8,64\]' -- demo --layers 2 --d-model 64 --heads 4 --batch 1 --seq 8 --iterations 2
check demo_bad_heads 1 '^error: .*divisible' -- demo --d-model 30 --heads 4
check demo_bad_device 1 "^error: --device must be" -- demo --device tpu
check devices 0 '^cpu: available' -- devices
check reserved_plan 1 "^error: 'graphfuse plan' needs" -- plan model.onnx
# An error is exactly one line on stderr.
lines=$("$bin" demo --device tpu 2>&1 >/dev/null | wc -l)
if [ "$lines" != 1 ]; then echo "FAIL error_is_one_line: $lines lines"; failures=$((failures + 1)); else echo "ok   error_is_one_line"; fi
total=10
echo "$((total - failures)) passed, $failures failed"
[ "$failures" = 0 ]
