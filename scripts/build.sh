#!/usr/bin/env bash
# Configures and builds into build/ (Release with debug info, warnings as errors).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -G Ninja -DGF_WERROR=ON -DPython3_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build build --parallel "$(nproc)"
