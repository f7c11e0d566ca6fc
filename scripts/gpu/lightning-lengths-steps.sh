#!/usr/bin/env bash
# Issue 30: why the Lightning lengths cell's 16x1 ran 1.31-1.37 s a step on two leases and 0.945 s on a
# third, where 0.92 s is predicted. On one lease: `lorasim calibrate --stack lightning` (this host's
# terms), then the lengths cell's 16x1 and 8x2 for an epoch each, twice in fresh processes, every
# step's time and every micro-batch's padded width in the rows (lightning-bench.jsonl).
# Writes under $OUT: machine.txt, summary.log, lightning.toml, results.tgz.
#   OUT=$OUT bash scripts/gpu/lightning-lengths-steps.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/lightning-lengths-steps}
work=/tmp/lightning-lengths-steps-work
rm -rf "$work"; mkdir -p "$OUT" "$work"
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$PWD/build-carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} LORASIM_PYTHONPATH=$PWD/python
bin=$PWD/build-carry/lorasim
t0=$(date +%s)
stage() { echo "== $1 at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.log"; }
trap 'tar czf "$OUT/results.tgz" -C "$work" . 2>/dev/null' EXIT
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,uuid --format=csv; nproc
  grep -m1 'model name' /proc/cpuinfo; } > "$OUT/machine.txt" 2>&1
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
base=h100-sxm; [[ $card == *H200* ]] && base=h200
stage calibrate
timeout 150 "$bin" calibrate --stack lightning --gpu "$base" --out "$OUT/lightning.toml" \
  --save-measurements "$work/calib-lightning-runs.csv" > "$work/calibrate.log" 2>&1
grep -E "fit over|device_scale|host_per_op|took" "$work/calibrate.log" | tee -a "$OUT/summary.log"
for round in 1 2; do
  stage "lengths round $round"
  timeout 200 python3 bench/lightning/lightning_gpu.py --out-dir "$work/round$round" --lorasim "$bin" --cells lengths \
    --phases truth --splits 16x1,8x2 --budget-s 190 > "$work/round$round.log" 2>&1
  grep -h '"truth"' "$work/round$round/lightning-bench.jsonl" | cut -c1-900 >> "$OUT/summary.log"
done
stage done
cat "$OUT/summary.log"
