#!/usr/bin/env bash
# Builds lorasim on the GPU machine (../shared/gpu-machine.md) against the CUDA LibTorch of
# its python3 torch, with TOML++ and Boost.Program_options unpacked from .deps/*.deb.
# Usage: scripts/gpu/build.sh [BUILD_DIR]   (default build-gpu)
set -euo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
build=${1:-build-gpu}
deps=/tmp/deps
ls .deps/*.deb >/dev/null 2>&1 || { echo "error: .deps/*.deb missing: run scripts/gpu/fetch-deps.sh here first" >&2; exit 2; }
mkdir -p "$deps"
for f in .deps/*.deb; do dpkg -x "$f" "$deps"; done  # every time: a warm machine may lack a newly fetched one
torch_cmake=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
boost_dir=$(ls -d $deps/usr/lib/x86_64-linux-gnu/cmake/Boost-1.74.0)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$deps/usr;$torch_cmake" -DBoost_DIR="$boost_dir" \
  -DLORASIM_BUILD_TESTS=${LORASIM_GPU_TESTS:-ON} -DLORASIM_BUILD_BENCH=${LORASIM_GPU_TESTS:-ON}
cmake --build "$build" -j "$(nproc)"
echo "built $build/cli/lorasim"
