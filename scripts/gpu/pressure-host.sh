#!/usr/bin/env bash
# One lease, two measurements of issue 28 (writes under $OUT):
#   host:     bench/hf/host_dispatch.py before and after `lorasim calibrate --stack hf-peft`, so the
#             lease's dispatch timing and its fitted host_per_op_s are a pair (bench/results/gpu-transfer.md)
#   pressure: bench/hf/pressure_runs.py on a finer grid of caps, the SFTTrainer cells and the Trainer
#             FIT cells apart (their shares differ), at once; memory only (the processes share the GPU)
# The lorasim binary and its two libraries come carried in build-carry/ (../shared/gpu-machine.md).
# STAGES (default "host pressure"); CAPS (default bench/hf/pressure-caps-fine.json);
# SFT_SHARES, TRAINER_SHARES: comma-separated activation shares.
#   OUT=$OUT bash scripts/gpu/pressure-host.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/pressure-host}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export LD_LIBRARY_PATH=$PWD/build-carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} LORASIM_PYTHONPATH=$PWD/python
bin=$PWD/build-carry/lorasim
STAGES=" ${STAGES:-host pressure} "
want() { [[ $STAGES == *" $1 "* ]]; }
t0=$(date +%s)
stage() { echo "== $1 at $(( $(date +%s) - t0 )) s"; }
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc
  grep -m1 'model name' /proc/cpuinfo
  python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__)'; } > "$OUT/machine.txt" 2>&1
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
gib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
gib=$(( gib / 1024 ))
base=h100-sxm; [[ $card == *H200* ]] && base=h200
if want host; then
  stage host
  python3 bench/hf/host_dispatch.py --device cuda --seconds 3 --out "$OUT/dispatch-before.json" > "$OUT/dispatch.log" 2>&1
  timeout 200 "$bin" calibrate --stack hf-peft --gpu "$base" --out "$OUT/hf.toml" \
    --save-measurements "$OUT/calib-hf-runs.csv" > "$OUT/calibrate.log" 2>&1
  echo "calibrate rc $?" >> "$OUT/calibrate.log"
  python3 bench/hf/host_dispatch.py --device cuda --seconds 3 --out "$OUT/dispatch-after.json" >> "$OUT/dispatch.log" 2>&1
  grep -h '"host_per_op_s"' "$OUT"/dispatch-*.json; grep -E 'host_per_op_s|rms' "$OUT/hf.toml" "$OUT/calibrate.log" | head -5
fi
if want pressure; then
  stage pressure
  left=$(( 560 - ($(date +%s) - t0) ))
  caps=${CAPS:-bench/hf/pressure-caps-fine.json}
  # the SFTTrainer cells are small; the Trainer FIT cells take up to 28 GiB each
  sft_gib=24; tr_gib=$(( gib - 4 - sft_gib ))
  python3 bench/hf/pressure_runs.py --caps "$caps" --cells sft --shares "${SFT_SHARES:-0.30,0.32,0.34,0.36}" \
    --budget-s $(( left - 20 )) --min-split-s 10 --gpu-budget-gib $sft_gib --out-dir "$OUT" \
    --rows pressure-sft-rows.jsonl > "$OUT/pressure-sft.log" 2>&1 &
  python3 bench/hf/pressure_runs.py --caps "$caps" --cells q3-trainer-chat-2x8,q3-trainer-longtail-4x4,q3-trainer-uniform \
    --shares "${TRAINER_SHARES:-0.20,0.25}" --budget-s $(( left - 20 )) --min-split-s 10 --gpu-budget-gib $tr_gib \
    --out-dir "$OUT" --rows pressure-trainer-rows.jsonl > "$OUT/pressure-trainer.log" 2>&1 &
  wait
  tail -n 20 "$OUT/pressure-sft.log" "$OUT/pressure-trainer.log"
fi
stage done
