#!/usr/bin/env bash
# On the GPU machine, when little device time is left: build the binary only, calibrate
# (saving every run), and validate one workload (qwen3-1.7b, B=16, seq 512) on held-out
# splits. Results to $OUT: calibrate.log, profile.toml, calib-runs.csv, validate-runs.csv.
set -uo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
out=${OUT:-gpu-results}
mkdir -p "$out"
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
start=$(date +%s)
LORASIM_GPU_TESTS=OFF scripts/gpu/build.sh build-gpu > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
echo "build took $(( $(date +%s) - start )) s" | tee -a "$out/build.log"
bin=build-gpu/cli/lorasim
$bin calibrate --device cuda --out "$out/profile.toml" --save-measurements "$out/calib-runs.csv" > "$out/calibrate.log" 2>&1
tail -4 "$out/calibrate.log"
$bin validate --profile "$out/profile.toml" --device cuda --model qwen3-1.7b --effective-batch 16 --seq-len 512 \
  --steps 2 --save-measurements "$out/validate-runs.csv" 2>&1 | tail -14
