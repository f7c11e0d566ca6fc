#!/usr/bin/env bash
# Accuracy benchmark (issue 4), on the GPU machine: calibrate once, then validate over a grid
# the calibration did not see, and summarise. Writes to $OUT (or ./accuracy-results), eight
# files: profile.toml, calib-runs.csv, grid-runs.csv (every validated split), accuracy.csv
# (prediction next to measurement), accuracy-summary.json, accuracy.svg, validate.txt, run.log.
# Grid: qwen3-1.7b (the reference), qwen3-0.6b, qwen3-4b, llama-3.2-3b x seq 256, 1024, 4096
# x gradient checkpointing off/on, at one B of {8, 32, 128} each; how it is sampled to fit the
# budget is in grid.py's docstring (`grid.py --dry-run` prints the plan).
# Budget: BUDGET_S (default 510) seconds from the start, after which no new workload starts;
# the build (~35 s) and calibration (~60-90 s) are inside it. The default keeps the whole
# script under the device tool's 10-minute command limit.
set -uo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
out=${OUT:-accuracy-results}
mkdir -p "$out"
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
exec > >(tee "$out/run.log") 2>&1
start=$(date +%s)
LORASIM_GPU_TESTS=OFF scripts/gpu/build.sh build-gpu > /tmp/lorasim-build.log 2>&1 ||
  { tail -30 /tmp/lorasim-build.log; exit 1; }
echo "build took $(( $(date +%s) - start )) s"
bin=build-gpu/cli/lorasim
$bin calibrate --device cuda --out "$out/profile.toml" --save-measurements "$out/calib-runs.csv" || exit 1
python3 bench/accuracy/grid.py --lorasim "$bin" --profile "$out/profile.toml" --out "$out/grid-runs.csv" \
  --deadline $(( start + ${BUDGET_S:-510} )) ${GRID_ARGS:-}
$bin validate --measurements "$out/grid-runs.csv" --profile "$out/profile.toml" | tee "$out/validate.txt"
$bin validate --measurements "$out/grid-runs.csv" --profile "$out/profile.toml" --format json > /tmp/validate.json
python3 bench/accuracy/summarize.py --validate-json /tmp/validate.json --out-dir "$out" \
  --command "bench/accuracy/run.sh" --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
echo "total $(( $(date +%s) - start )) s"
