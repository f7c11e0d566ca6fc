#!/usr/bin/env bash
# Accuracy benchmark (issue 4), on the GPU machine: calibrate once, then validate over a grid
# the calibration did not see, and summarise. Works in $WORK (default /tmp/lorasim-accuracy)
# and copies eight files to $OUT (or ./accuracy-results): profile.toml, calib-runs.csv,
# grid-runs.csv (every validated split), accuracy.csv (prediction next to measurement),
# accuracy-summary.json, accuracy.svg, validate.txt, run.log.
# Grid: qwen3-1.7b (the reference), qwen3-0.6b, qwen3-4b, llama-3.2-3b x seq 256, 1024, 4096
# x gradient checkpointing off/on, at one B of {8, 32, 128} each; how it is sampled to fit the
# budget is in grid.py's docstring (`grid.py --dry-run` prints the plan).
# Budget: BUDGET_S (default 510) seconds from the start, after which no new workload starts;
# the build (~35 s) and calibration (~90 s) are inside it. On an H200 the whole benchmark
# took 488 s and 481 s (bench/results/h200/accuracy-run3, -run4). Should a slower machine cut
# it, RESUME=1 with the same $WORK keeps the profile and the measured workloads and runs the
# rest. PROFILE=path skips
# the calibration and validates that profile; GRID_ARGS passes options to grid.py (e.g.
# "--rotation 1": every workload at another effective batch).
set -uo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
out=${OUT:-accuracy-results}
work=${WORK:-/tmp/lorasim-accuracy}
mkdir -p "$out" "$work"
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
exec > >(tee -a "$work/run.log") 2>&1
start=$(date +%s)
finish() {
  for f in profile.toml calib-runs.csv grid-runs.csv accuracy.csv accuracy-summary.json accuracy.svg validate.txt run.log; do
    [ -f "$work/$f" ] && cp "$work/$f" "$out/"
  done
}
trap finish EXIT
LORASIM_GPU_TESTS=OFF scripts/gpu/build.sh build-gpu > /tmp/lorasim-build.log 2>&1 ||
  { tail -30 /tmp/lorasim-build.log; exit 1; }
echo "build took $(( $(date +%s) - start )) s"
bin=build-gpu/cli/lorasim
if [ -n "${PROFILE:-}" ]; then
  echo "validating with the given profile $PROFILE (no calibration)"
  cp "$PROFILE" "$work/profile.toml"
elif [ "${RESUME:-0}" = 1 ] && [ -f "$work/profile.toml" ]; then
  echo "resuming with $work/profile.toml"
else
  rm -f "$work/grid-runs.csv"
  $bin calibrate --device cuda --out "$work/profile.toml" --save-measurements "$work/calib-runs.csv" || exit 1
fi
python3 bench/accuracy/grid.py --lorasim "$bin" --profile "$work/profile.toml" --out "$work/grid-runs.csv" \
  --deadline $(( start + ${BUDGET_S:-510} )) ${GRID_ARGS:-}
$bin validate --measurements "$work/grid-runs.csv" --profile "$work/profile.toml" | tee "$work/validate.txt"
$bin validate --measurements "$work/grid-runs.csv" --profile "$work/profile.toml" --format json > "$work/validate.json"
python3 bench/accuracy/summarize.py --validate-json "$work/validate.json" --out-dir "$work" \
  --command "bench/accuracy/run.sh" --gpu "$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
echo "total $(( $(date +%s) - start )) s"
