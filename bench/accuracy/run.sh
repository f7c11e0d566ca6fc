#!/usr/bin/env bash
# Accuracy benchmark (issue 4), on the GPU machine: calibrate once, then validate over a grid
# the calibration did not see, and summarise. Writes to $OUT (or ./accuracy-results):
#   profile.toml, calib-runs.csv, grid-runs.csv (every validated split), accuracy.csv
#   (prediction next to measurement), accuracy-summary.json, accuracy.svg, run.log.
# Grid: qwen3-1.7b (the reference), qwen3-0.6b, qwen3-4b, llama-3.2-3b x seq 256, 1024, 4096
# x B in {8, 32, 128} x gradient checkpointing off/on, every split the profile predicts to fit
# plus the smallest that it predicts not to fit. Sampling (to stay within ~20 min on an H200):
# see grid.py (splits with more than 32 accumulation steps are skipped; one B per
# (model, seq, ckpt) cell, rotating through the three).
# Status: written 2026-11-30 without GPU time left to run it; the first session with GPU
# time should run it and commit the results.
set -uo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
out=${OUT:-accuracy-results}
mkdir -p "$out"
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
exec > >(tee "$out/run.log") 2>&1
start=$(date +%s)
LORASIM_GPU_TESTS=OFF scripts/gpu/build.sh build-gpu > "$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
bin=build-gpu/cli/lorasim
$bin calibrate --device cuda --out "$out/profile.toml" --save-measurements "$out/calib-runs.csv" || exit 1
python3 bench/accuracy/grid.py --lorasim "$bin" --profile "$out/profile.toml" --out "$out/grid-runs.csv" \
  --deadline $(( start + ${BUDGET_S:-1140} ))
$bin validate --measurements "$out/grid-runs.csv" --profile "$out/profile.toml" --format json > "$out/validate.json"
python3 bench/accuracy/summarize.py --validate-json "$out/validate.json" --out-dir "$out" \
  --command "bench/accuracy/run.sh" --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
echo "total $(( $(date +%s) - start )) s"
