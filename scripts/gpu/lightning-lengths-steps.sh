#!/usr/bin/env bash
# Issue 30: why the Lightning lengths cell's 16x1 ran 1.31-1.37 s a step on two leases and 0.945 s on a
# third, where 0.92 s is predicted. On one lease: `lorasim calibrate --stack lightning` (this host's
# terms), then the lengths cell's 16x1 and 8x2 for an epoch each, twice in fresh processes, every
# step's time and every micro-batch's padded width in the rows (lightning-bench.jsonl).
# Writes under $OUT: machine.txt, summary.log, lightning.toml, results.tgz.
#   OUT=$OUT bash scripts/gpu/lightning-lengths-steps.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
NAME=lightning-lengths-steps
source scripts/gpu/lease.sh
calibrate_lightning
for round in 1 2; do
  stage "lengths round $round"
  timeout 200 python3 bench/lightning/lightning_gpu.py --out-dir "$work/round$round" --lorasim "$bin" --cells lengths \
    --phases truth --splits 16x1,8x2 --budget-s 190 > "$work/round$round.log" 2>&1
  grep -h '"truth"' "$work/round$round/lightning-bench.jsonl" | cut -c1-900 >> "$OUT/summary.log"
done
stage done
cat "$OUT/summary.log"
