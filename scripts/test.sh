#!/usr/bin/env bash
# Sets up, builds and runs every test. GPU tests skip cleanly where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh
export PATH="$PWD/.venv/bin:$PATH"
ctest --test-dir build --output-on-failure --parallel "$(nproc)" "$@"
