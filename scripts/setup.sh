#!/usr/bin/env bash
# Installs what graphfuse needs on Debian/Ubuntu: build tools and libraries from apt (only the
# missing ones), and the Python test oracles (pinned in requirements.txt) into .venv.
# Safe to run again: it does nothing when everything is there.
#   scripts/setup.sh               everything the tests need (strict: any failure stops it)
#   scripts/setup.sh --build-only  what the build and the demo need; where a package cannot be
#                                  installed (an offline machine), it says so and goes on, and
#                                  the build reports what it then lacks
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
[ "${1:-}" = "--build-only" ] && build_only=1

packages=(
  build-essential cmake ninja-build pkg-config git
  libopenblas-openmp-dev libfmt-dev libcli11-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler libonnx-dev
)
if [ "$build_only" = 0 ]; then
  packages+=(
    libonnx-testdata python3 python3-venv python3-pip
    clang-14 libclang-rt-14-dev libomp-14-dev  # libFuzzer + sanitizer runtimes (scripts/fuzz.sh)
  )
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" = 0 ] || sudo_cmd=(sudo)
  if ! { "${sudo_cmd[@]}" apt-get update -qq &&
          DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq \
            --no-install-recommends "${missing[@]}" >/dev/null; }; then
    if [ "$build_only" = 0 ]; then
      echo "setup: apt-get could not install ${missing[*]}" >&2
      exit 1
    fi
    echo "setup: could not install ${missing[*]}; going on (the build says what it lacks)" >&2
  fi
fi
[ "$build_only" = 1 ] && exit 0

# Test oracles (onnx with its backend test data, onnxruntime) live in a project-local venv.
if [ ! -x .venv/bin/python ] || ! cmp -s requirements.txt .venv/requirements.installed; then
  echo "setup: installing Python test tools into .venv"
  python3 -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip >/dev/null
  .venv/bin/python -m pip install -q -r requirements.txt
  cp requirements.txt .venv/requirements.installed
fi
