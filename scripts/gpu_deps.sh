#!/usr/bin/env bash
# For a GPU machine that cannot fetch packages (scripts/gpu_check.sh runs there): downloads,
# on this machine, the Debian packages the build needs besides the CUDA toolkit into
# .carry/gpu-deps/debs (ignored by git). Carry .carry/gpu-deps to the GPU machine;
# gpu_check.sh unpacks them under .carry/gpu-deps/root (never into /) and builds against them.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.carry/gpu-deps/debs
mkdir -p "$dir"
packages=(libcli11-dev nlohmann-json3-dev libgtest-dev libfmt-dev libfmt9 libopenblas-openmp-dev
          libopenblas0-openmp libopenblas-dev libgfortran5 libquadmath0)
(cd "$dir" && apt-get download "${packages[@]}")
ls -1 "$dir"
