#!/usr/bin/env bash
# Builds the lorasim binary alone and shows the main job: the fastest micro-batch x
# accumulation split of Qwen3-1.7B LoRA on an H200, then every split with its time and memory.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)" --target lorasim
workload=(--gpu h200 --model qwen3-1.7b --effective-batch 16 --seq-len 512)
build/cli/lorasim recommend "${workload[@]}"
echo
build/cli/lorasim simulate "${workload[@]}"
