#!/usr/bin/env bash
# Sets up, builds and runs every test. GPU tests skip cleanly where there is no GPU. Then the
# hardening runs: the CPU tests under ASan + UBSan (scripts/sanitize.sh) and each fuzz target
# for GF_FUZZ_RUNS executions (default 1000000; scripts/fuzz.sh). GF_HARDENING=0 skips both.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
export PATH="$PWD/.venv/bin:$PATH"
ctest --test-dir build --output-on-failure --parallel "$(nproc)" "$@"
if [ "${GF_HARDENING:-1}" != 0 ]; then
  scripts/sanitize.sh
  scripts/fuzz.sh "${GF_FUZZ_RUNS:-1000000}"
fi
