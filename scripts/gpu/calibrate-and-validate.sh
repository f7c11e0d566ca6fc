#!/usr/bin/env bash
# On the GPU machine: build, calibrate the GPU, and validate the profile on held-out splits
# (issue 3): qwen3-1.7b, every split of B = 4, 16, 64 at seq 512 and 2048. None of these
# configurations is in the calibration plan (which runs truncated models only).
# Results go to $OUT (or ./gpu-results): profile, logs and validation JSON.
set -uo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
out=${OUT:-gpu-results}
mkdir -p "$out"
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; } > "$out/machine.txt" 2>&1
scripts/gpu/build.sh build-gpu > "$out/build.log" 2>&1 || { tail -50 "$out/build.log"; exit 1; }
bin=build-gpu/cli/lorasim
$bin --version | tee -a "$out/machine.txt"
profile="$out/h200.toml"
/usr/bin/time -f "calibrate wall %e s" $bin calibrate --device cuda --out "$profile" 2>&1 | tee "$out/calibrate.log"
[ -f "$profile" ] || { echo "calibration wrote no profile"; exit 1; }
: > "$out/validate.jsonl"
for seq in 512 2048; do
  for B in 4 16 64; do
    echo "== validate B=$B seq=$seq" | tee -a "$out/validate.log"
    $bin validate --profile "$profile" --device cuda --model qwen3-1.7b --effective-batch $B \
      --seq-len $seq --steps ${VALIDATE_STEPS:-3} --format json 2>>"$out/validate.log" \
      | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))' >> "$out/validate.jsonl"
  done
done
python3 scripts/gpu/summarize_validation.py "$out/validate.jsonl" | tee "$out/validate-summary.txt"
