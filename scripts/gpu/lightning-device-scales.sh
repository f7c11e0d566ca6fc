#!/usr/bin/env bash
# Issue 30: `lorasim calibrate --stack lightning` (its plan now has a full-depth device-bound run, for
# the loop's device scales) on the builtin h100-sxm/h200 profile, then every Lightning cell's truth on the
# same lease, held out of that fit. Writes under $OUT: machine.txt, summary.log, lightning.toml,
# results.tgz (the calibration's runs, the bench's rows and logs).
#   OUT=$OUT bash scripts/gpu/lightning-device-scales.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
NAME=lightning-device-scales
source scripts/gpu/lease.sh
calibrate_lightning
stage truth
timeout 380 python3 bench/lightning/lightning_gpu.py --out-dir "$work/truth" --lorasim "$bin" --cells fixed,cap15,lengths \
  --phases truth --fixed-1x16 --budget-s 360 > "$work/truth.log" 2>&1
grep -h '"truth"' "$work/truth/lightning-bench.jsonl" | cut -c1-260 >> "$OUT/summary.log"
stage done
cat "$OUT/summary.log"
