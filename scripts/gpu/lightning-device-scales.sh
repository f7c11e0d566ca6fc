#!/usr/bin/env bash
# Issue 30: `lorasim calibrate --stack lightning` (its plan now has a full-depth device-bound run, for
# the loop's device scales) on the builtin h100-sxm/h200 profile, then every Lightning cell's truth on the
# same lease, held out of that fit. Writes under $OUT: machine.txt, summary.log, lightning.toml,
# calib-lightning-runs.csv, results.tgz (the bench's rows and logs).
#   OUT=$OUT bash scripts/gpu/lightning-device-scales.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/lightning-device-scales}
work=/tmp/lightning-device-scales-work
rm -rf "$work"; mkdir -p "$OUT" "$work"
export PYTHONUNBUFFERED=1
export LD_LIBRARY_PATH=$PWD/build-carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} LORASIM_PYTHONPATH=$PWD/python
bin=$PWD/build-carry/lorasim
t0=$(date +%s)
stage() { echo "== $1 at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.log"; }
trap 'tar czf "$OUT/results.tgz" -C "$work" . 2>/dev/null' EXIT
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,uuid --format=csv; nproc
  grep -m1 'model name' /proc/cpuinfo
  python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__)'
  python3 -c 'import pytorch_lightning as pl; print("pytorch-lightning", pl.__version__)'; } > "$OUT/machine.txt" 2>&1
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
base=h100-sxm; [[ $card == *H200* ]] && base=h200
stage calibrate
timeout 150 "$bin" calibrate --stack lightning --gpu "$base" --out "$OUT/lightning.toml" \
  --save-measurements "$OUT/calib-lightning-runs.csv" > "$work/calibrate.log" 2>&1
grep -E "fit over|device_scale|host_per_op|took" "$work/calibrate.log" | tee -a "$OUT/summary.log"
stage truth
timeout 380 python3 bench/lightning/lightning_gpu.py --out-dir "$work/truth" --lorasim "$bin" --cells fixed,cap15,lengths \
  --phases truth --fixed-1x16 --budget-s 360 > "$work/truth.log" 2>&1
grep -h '"truth"' "$work/truth/lightning-bench.jsonl" | cut -c1-260 >> "$OUT/summary.log"
stage done
cat "$OUT/summary.log"
