#!/usr/bin/env bash
# One lease (issues 28 and 30), timed parts one at a time, memory-only parts together at the end.
# Writes under $OUT: machine.txt, summary.log and results.tgz (every row file and log: the device
# tool returns a few files only).
#   big       issue 28: tune the 7B cell from a profile 2x off in time, then its pick for an epoch
#   loop      issue 30: the fixed 512-token splits of qwen3-1.7b under a real Trainer and under
#             Lightning on this lease, no cap: is a split's error the loop's or this profile's device half?
#   validate  issue 28: the split lorasim recommends under 15 GiB since varying_need_default fell to
#             0.34 (v15-q3-sft-chat-16x1), one epoch, with the Trainer FIT cells of the pressure grid at
#             the shares between where they ran out of memory and where they ran
# STAGES (default "big loop validate"); lorasim and its libraries from build-carry/.
#   OUT=$OUT bash scripts/gpu/boundary-and-loop.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
NAME=boundary-and-loop
source scripts/gpu/lease.sh
STAGES=" ${STAGES:-big loop validate} "
want() { [[ $STAGES == *" $1 "* ]]; }
if want big; then
  stage big
  timeout 240 python3 bench/hf/tune_gpu.py --out-dir "$work/big" --lorasim "$bin" --workloads big --phases tune,epoch \
    --tune-first --profile bench/hf/profiles/h200-2x-slow.toml --budget-s 220 > "$work/big.log" 2>&1
  grep -h '"phase"' "$work/big/tune-rows.jsonl" | cut -c1-400 >> "$OUT/summary.log"
fi
if want loop; then
  stage loop-trainer
  timeout 130 python3 bench/hf/tune_gpu.py --out-dir "$work/loop-trainer" --lorasim "$bin" --workloads cap15 \
    --phases truth --cap-gib 70 --budget-s 120 > "$work/loop-trainer.log" 2>&1
  grep -h '"truth"' "$work/loop-trainer/tune-rows.jsonl" | cut -c1-300 >> "$OUT/summary.log"
  stage loop-lightning
  timeout 130 python3 bench/lightning/lightning_gpu.py --out-dir "$work/loop-lightning" --lorasim "$bin" --cells fixed \
    --phases truth --fixed-1x16 --budget-s 120 > "$work/loop-lightning.log" 2>&1
  grep -h 'truth' "$work/loop-lightning/lightning-bench.jsonl" | cut -c1-300 >> "$OUT/summary.log"
fi
if want validate; then
  stage validate
  timeout 150 python3 bench/hf/pressure_runs.py --plan validate --cells v15-q3-sft-chat-16x1 --budget-s 140 \
    --gpu-budget-gib 20 --out-dir "$work/validate" --rows validate-rows.jsonl > "$work/validate.log" 2>&1 &
  timeout 150 python3 bench/hf/pressure_runs.py --caps bench/hf/pressure-caps-fine.json \
    --cells q3-trainer-chat-2x8,q3-trainer-longtail-4x4,q3-trainer-uniform --shares 0.17,0.20 --budget-s 140 \
    --min-split-s 10 --gpu-budget-gib 52 --out-dir "$work/validate" --rows pressure-trainer-rows.jsonl \
    > "$work/pressure-trainer.log" 2>&1 &
  wait
  grep -h -A12 'done\|^  v15' "$work/validate.log" "$work/pressure-trainer.log" | grep '^  ' >> "$OUT/summary.log"
fi
stage done
cat "$OUT/summary.log"
