#!/usr/bin/env bash
# Sets up, builds and runs the demo (on the GPU when there is one, else the CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --build-only
scripts/build.sh
exec build/bin/graphfuse demo "$@"
