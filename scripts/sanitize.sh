#!/usr/bin/env bash
# Builds the CPU path with AddressSanitizer + UndefinedBehaviorSanitizer (and LeakSanitizer,
# part of ASan on Linux) into build-asan/ and runs the CPU test suite there: unit tests, the CLI
# checks and the ONNX end-to-end run against onnxruntime. Any report fails the run
# (-fno-sanitize-recover=all). JIT-compiled kernels are built by the system compiler at run time
# and are not instrumented.
#
# Not the conformance run: `graphfuse conformance` caps each case's address space (RLIMIT_AS),
# and ASan's shadow memory (terabytes of reserved address space) cannot live under that cap, so
# every case would abort in mmap. The normal build runs it.
#
# usage: scripts/sanitize.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-asan -G Ninja -DGF_WERROR=ON -DGF_WITH_CUDA=OFF -DGF_SANITIZE=address,undefined \
  -DPython3_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build build-asan --parallel "$(nproc)"
export PATH="$PWD/.venv/bin:$PATH"
# Python (the ONNX tests' driver) is not instrumented; only the graphfuse binaries it starts are.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
ctest --test-dir build-asan --output-on-failure --parallel "$(nproc)" -L 'unit|cli|onnx' -LE conformance "$@"
