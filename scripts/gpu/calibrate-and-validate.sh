#!/usr/bin/env bash
# On the GPU machine: build, calibrate the GPU, and validate the profile on held-out splits
# (issue 3): qwen3-1.7b, every split of B = 4, 16, 64 at seq 512 and 2048. None of these
# configurations is in the calibration plan (which runs truncated models only).
# Results go to $OUT (or ./gpu-results), eight files at most:
#   machine.txt, build.log, calibrate.log, h200.toml, calib-runs.csv (every calibration run),
#   validate.jsonl (one `validate --format json` object per workload), validate-runs.csv
#   (every validation run, for `lorasim fit`/`validate --measurements`), validate-summary.txt.
set -uo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
out=${OUT:-gpu-results}
mkdir -p "$out"
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; } > "$out/machine.txt" 2>&1
LORASIM_GPU_TESTS=${LORASIM_GPU_TESTS:-OFF} scripts/gpu/build.sh build-gpu > "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
bin=build-gpu/cli/lorasim
$bin --version | tee -a "$out/machine.txt"
profile="$out/h200.toml"
/usr/bin/time -f "calibrate wall %e s" $bin calibrate --device cuda --out "$profile" \
  --save-measurements "$out/calib-runs.csv" 2>&1 | tee "$out/calibrate.log"
[ -f "$profile" ] || { echo "calibration wrote no profile"; exit 1; }
: > "$out/validate.jsonl"
tmp=$(mktemp -d)
for seq in 512 2048; do
  for B in 4 16 64; do
    echo "== validate B=$B seq=$seq" >> "$tmp/validate.log"
    $bin validate --profile "$profile" --device cuda --model qwen3-1.7b --effective-batch $B \
      --seq-len $seq --steps ${VALIDATE_STEPS:-3} --format json --save-measurements "$tmp/runs-$seq-$B.csv" \
      2>>"$tmp/validate.log" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))' >> "$out/validate.jsonl"
    # One CSV for all workloads: the header once.
    if [ -f "$tmp/runs-$seq-$B.csv" ]; then
      if [ -f "$out/validate-runs.csv" ]; then tail -n +2 "$tmp/runs-$seq-$B.csv" >> "$out/validate-runs.csv";
      else cp "$tmp/runs-$seq-$B.csv" "$out/validate-runs.csv"; fi
    fi
  done
done
{ python3 scripts/gpu/summarize_validation.py "$out/validate.jsonl"; echo; echo "--- progress log"; cat "$tmp/validate.log"; } \
  > "$out/validate-summary.txt"
head -60 "$out/validate-summary.txt"
