#!/usr/bin/env bash
# One lease, two measurements of issue 28 (writes under $OUT: machine.txt, summary.log, results.tgz):
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
NAME=pressure-host
source scripts/gpu/lease.sh
gib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -1)
gib=$(( gib / 1024 ))
STAGES=" ${STAGES:-host pressure} "
want() { [[ $STAGES == *" $1 "* ]]; }
want host && host_pair
if want pressure; then
  stage pressure
  left=$(( 560 - ($(date +%s) - t0) ))
  caps=${CAPS:-bench/hf/pressure-caps-fine.json}
  # the SFTTrainer cells are small; the Trainer FIT cells take up to 28 GiB each
  sft_gib=24; tr_gib=$(( gib - 4 - sft_gib ))
  python3 bench/hf/pressure_runs.py --caps "$caps" --cells sft --shares "${SFT_SHARES:-0.30,0.32,0.34,0.36}" \
    --budget-s $(( left - 20 )) --min-split-s 10 --gpu-budget-gib $sft_gib --out-dir "$work" \
    --rows pressure-sft-rows.jsonl > "$work/pressure-sft.log" 2>&1 &
  python3 bench/hf/pressure_runs.py --caps "$caps" --cells q3-trainer-chat-2x8,q3-trainer-longtail-4x4,q3-trainer-uniform \
    --shares "${TRAINER_SHARES:-0.20,0.25}" --budget-s $(( left - 20 )) --min-split-s 10 --gpu-budget-gib $tr_gib \
    --out-dir "$work" --rows pressure-trainer-rows.jsonl > "$work/pressure-trainer.log" 2>&1 &
  wait
  tail -n 20 "$work/pressure-sft.log" "$work/pressure-trainer.log"
fi
stage done
