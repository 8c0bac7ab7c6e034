#!/usr/bin/env bash
# GPU verification in one command, for a machine with an NVIDIA GPU, the CUDA toolkit in
# /usr/local/cuda, and cmake/ninja in /opt/torch/.venv/bin (no libonnx needed: without it the
# ONNX model tests are left out). Configures and builds into build-gpu/ with warnings as errors,
# runs the GPU tests, then the demo and `graphfuse run` on the built-in model with --device cuda
# in every precision. Logs go to ${OUT:-/tmp}/gpu_check/; the script exits non-zero on the first
# failing stage and names it.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${OUT:-/tmp}/gpu_check"
mkdir -p "$out"
export PATH="/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH"
build="${GF_BUILD_DIR:-build-gpu}"
status=0

stage() {  # stage NAME COMMAND...: runs it with its output in $out/NAME.log
  local name="$1"
  shift
  echo "== $name: $*" | tee -a "$out/summary.log"
  if "$@" >"$out/$name.log" 2>&1; then
    echo "   ok" | tee -a "$out/summary.log"
  else
    echo "   FAILED (exit $?), see $out/$name.log; its tail:" | tee -a "$out/summary.log"
    tail -30 "$out/$name.log" | tee -a "$out/summary.log"
    status=1
    return 1
  fi
}

: >"$out/summary.log"
{
  echo "host: $(hostname), $(date -u +%FT%TZ)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 || echo "nvidia-smi: not found"
  command -v cmake ninja || true
} | tee -a "$out/summary.log"

# Packages carried from another machine (scripts/gpu_deps.sh), unpacked into a prefix.
deps=.carry/gpu-deps
deps_args=()
if ls "$deps"/debs/*.deb >/dev/null 2>&1; then
  mkdir -p "$deps/root"
  for f in "$deps"/debs/*.deb; do dpkg -x "$f" "$deps/root"; done
  root="$PWD/$deps/root"
  arch=$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
  export CPATH="$root/usr/include:${CPATH:-}"
  export LD_LIBRARY_PATH="$root/usr/lib/$arch/openblas-openmp:$root/usr/lib/$arch:${LD_LIBRARY_PATH:-}"
  prefixes="$root/usr"
  deps_args=(-DGF_CBLAS_INCLUDE_DIR="$root/usr/include/$arch/openblas-openmp"
             -DGF_OPENBLAS_LIBRARY="$root/usr/lib/$arch/openblas-openmp/libopenblas.so")
  echo "using the packages carried in $deps" | tee -a "$out/summary.log"
fi

# What the build needs besides the toolkit: Debian's -dev packages (see docs/DESIGN.md).
missing=()
[ -n "${root:-}" ] && CPATH_DIRS="$root/usr/include" || CPATH_DIRS=""
for header in fmt/core.h CLI/CLI.hpp nlohmann/json.hpp gtest/gtest.h; do
  [ -e "/usr/include/$header" ] || [ -e "/usr/local/include/$header" ] || [ -e "$CPATH_DIRS/$header" ] || missing+=("$header")
done
ls /usr/include/*/openblas*/cblas.h /usr/include/cblas.h /usr/include/openblas/cblas.h $CPATH_DIRS/*/openblas*/cblas.h \
  >/dev/null 2>&1 || missing+=("cblas.h (OpenBLAS)")
[ -e /usr/local/cuda/include/cuda.h ] || missing+=("/usr/local/cuda/include/cuda.h (CUDA toolkit)")
if [ ${#missing[@]} -gt 0 ]; then
  echo "missing build dependencies: ${missing[*]}" | tee -a "$out/summary.log"
  echo "install libfmt-dev libcli11-dev nlohmann-json3-dev libgtest-dev libopenblas-openmp-dev (and the CUDA toolkit)," \
       "or run scripts/gpu_deps.sh on a machine with apt and carry .carry/gpu-deps here" | tee -a "$out/summary.log"
  exit 2
fi

# cuDNN from the PyTorch wheel, for the parts that use it when they are built (the executor
# itself does not need it).
cudnn_root=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cudnn
cmake_args=(-S . -B "$build" -G Ninja -DGF_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "${deps_args[@]}")
[ -d "$cudnn_root" ] && prefixes="${prefixes:+$prefixes;}$cudnn_root" && cmake_args+=(-DCUDNN_ROOT="$cudnn_root")
[ -n "${prefixes:-}" ] && cmake_args+=(-DCMAKE_PREFIX_PATH="$prefixes")
[ -d "$cudnn_root/lib" ] && export LD_LIBRARY_PATH="$cudnn_root/lib:${LD_LIBRARY_PATH:-}"

stage configure cmake "${cmake_args[@]}" || exit 1
grep -q "CUDA toolkit .* found" "$out/configure.log" || { echo "the CUDA parts were not configured" | tee -a "$out/summary.log"; exit 1; }
stage build cmake --build "$build" --parallel "$(nproc)" || exit 1
cli="$build/bin/graphfuse"
stage devices "$cli" devices
grep -q '^cuda:[0-9]' "$out/devices.log" || { echo "no CUDA device visible" | tee -a "$out/summary.log"; exit 1; }
stage gpu_tests ctest --test-dir "$build" -L gpu --output-on-failure --timeout 900
stage unit_tests ctest --test-dir "$build" -L unit --parallel "$(nproc)" --output-on-failure
stage cli_checks ctest --test-dir "$build" -L cli --output-on-failure
stage demo "$cli" demo --device cuda
stage demo_auto "$cli" demo
for precision in fp32 tf32 fp16 bf16; do
  stage "run_gpt2_$precision" "$cli" run builtin:gpt2 --shape x=4x128x256 --device cuda --precision "$precision" \
    --iterations 20 --json "$out/run_gpt2_$precision.json" --output-dir "$out/outputs_$precision"
done
stage run_gpt2_cpu "$cli" run builtin:gpt2 --shape x=4x128x256 --iterations 3 --output-dir "$out/outputs_cpu"
echo "gpu_check: $([ $status = 0 ] && echo passed || echo FAILED); logs in $out" | tee -a "$out/summary.log"
exit $status
