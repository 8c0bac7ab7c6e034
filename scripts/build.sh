#!/usr/bin/env bash
# Configures and builds into build/ (Release with debug info, warnings as errors).
set -euo pipefail
cd "$(dirname "$0")/.."
# The tests' Python is the project's venv, when setup made one (the demo needs none).
python_args=()
[ -x .venv/bin/python ] && python_args=(-DPython3_EXECUTABLE="$PWD/.venv/bin/python")
cmake -S . -B build -G Ninja -DGF_WERROR=ON "${python_args[@]}" >/dev/null
cmake --build build --parallel "$(nproc)"
