#!/usr/bin/env bash
# Collects the hf-peft stack's measurements on the GPU machine, in stages (STAGES, a space
# separated list; each stage is bounded by its own timeout), writing rows and logs under $OUT:
#   build    scripts/gpu/build.sh (the C++ binaries against the machine's CUDA LibTorch)
#   calib    the probe on bench/hf/calib-plan-*.json (an early form of the calibration plan), timed
#   calibhf  `lorasim calibrate --stack hf-peft --gpu h200` end to end (needs build), timed
#   saved    bench/hf/saved_tensors_gpu.sh (saved-tensor bytes per module), tarred
#   heldout  bench/hf/heldout.py, both allocators (probe step: Trainer's and the plain loop)
#   heldout-default, heldout-expandable  one allocator's half of it
#   ckpt-autocast  llama-3.2-3b and qwen3-4b at 2048 tokens, checkpointing x autocast
#   allocab  two held-out cells in alternating default/expandable processes, twice (allocator cost)
#   trainer  bench/hf/trainer_runs.py --sft (a real Trainer and SFTTrainer with LorasimCallback)
# Wheels the machine lacks (trl and its needs) travel in .whl/ (README of the device tool).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/hf-collect}
mkdir -p "$OUT"
STAGES=${STAGES:-"build calib saved heldout trainer"}
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PWD/python
fi
export PYTHONPATH=${PYTHONPATH:-$PWD/python}
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv; nproc;
  python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__)'; } > "$OUT/machine.txt" 2>&1
stage() { echo "== $1 $(date -u +%T)" >&2; }
for s in $STAGES; do
  case $s in
    build) stage build; ( time bash scripts/gpu/build.sh build-gpu ) > "$OUT/build.log" 2>&1 || echo "build failed" >&2 ;;
    calib)
      stage calib
      for a in default expandable; do
        /usr/bin/time -f "probe $a: %e s wall" timeout 150 python3 -m lorasim_hf.probe --plan bench/hf/calib-plan-$a.json \
          >> "$OUT/calib-rows.jsonl" 2>> "$OUT/calib.log"
      done ;;
    calibhf)
      stage calibhf
      /usr/bin/time -f "calibrate --stack hf-peft: %e s wall" timeout 300 build-gpu/cli/lorasim calibrate --stack hf-peft \
        --gpu h200 --python python3 --out "$OUT/h200-hf.toml" --save-measurements "$OUT/calib-hf-runs.csv" \
        > "$OUT/calibhf.log" 2>&1 ;;
    saved)
      stage saved
      LIMIT_S=${SAVED_LIMIT_S:-80} timeout 150 bash bench/hf/saved_tensors_gpu.sh /tmp/hf-saved > "$OUT/saved.log" 2>&1
      tar czf "$OUT/saved-tensors.tgz" -C /tmp hf-saved ;;
    heldout-expandable)
      stage heldout-expandable
      timeout ${HELDOUT_EXP_S:-230} python3 bench/hf/heldout.py --allocator expandable --budget-s ${HELDOUT_EXP_BUDGET:-160} \
        --out "$OUT/heldout-rows.jsonl" 2>> "$OUT/heldout.log" ;;
    heldout-default)
      stage heldout-default
      timeout ${HELDOUT_DEF_S:-120} python3 bench/hf/heldout.py --allocator default --budget-s ${HELDOUT_DEF_BUDGET:-70} \
        --out "$OUT/heldout-rows.jsonl" 2>> "$OUT/heldout.log" ;;
    heldout)
      stage heldout
      timeout ${HELDOUT_EXP_S:-230} python3 bench/hf/heldout.py --allocator expandable --budget-s ${HELDOUT_EXP_BUDGET:-160} \
        --out "$OUT/heldout-rows.jsonl" 2>> "$OUT/heldout.log"
      timeout ${HELDOUT_DEF_S:-120} python3 bench/hf/heldout.py --allocator default --budget-s ${HELDOUT_DEF_BUDGET:-70} \
        --out "$OUT/heldout-rows.jsonl" 2>> "$OUT/heldout.log" ;;
    allocab)
      # The allocator's own cost: the same cells in alternating processes, default and
      # expandable, so that the lease's drift over minutes shows as the rounds' difference.
      stage allocab
      for round in 1 2; do
        for a in default expandable; do
          timeout 120 python3 bench/hf/heldout.py --allocator $a --cell-list default --cells ${ALLOCAB_CELLS:-0,3} \
            --budget-s 90 --out "$OUT/allocab-rows.jsonl" 2>> "$OUT/allocab.log"
        done
      done ;;
    ckpt-autocast)
      # Two architectures at 2048 tokens with checkpointing and autocast each on and off.
      stage ckpt-autocast
      timeout ${CKPT_AB_S:-200} python3 bench/hf/heldout.py --allocator expandable --cell-list ckpt-autocast \
        --budget-s ${CKPT_AB_BUDGET:-150} --out "$OUT/ckpt-autocast-rows.jsonl" 2>> "$OUT/ckpt-autocast.log" ;;
    heldout-same)
      # A few held-out cells on the lease that calibrated (host speed drifts between leases).
      stage heldout-same
      timeout ${HELDOUT_SAME_S:-150} python3 bench/hf/heldout.py --allocator expandable --cells ${HELDOUT_CELLS:-0,1,3,4} \
        --budget-s 120 --out "$OUT/heldout-same-rows.jsonl" 2>> "$OUT/heldout-same.log" ;;
    trainer)
      stage trainer
      timeout ${TRAINER_S:-150} python3 bench/hf/trainer_runs.py --sft --budget-s ${TRAINER_BUDGET:-100} \
        --out "$OUT/trainer-rows.jsonl" > "$OUT/trainer.log" 2>&1 ;;
    *) echo "unknown stage $s" >&2 ;;
  esac
done
stage done
