#!/usr/bin/env bash
# Issue 28: the default allocator's need under a cap where most micro-batches already have the worst
# one's width (long-tailed lengths at large micro-batches): the held-out cells q3-sft-longtail-16x1
# and q3-trainer-longtail-8x2 on a finer grid of activation shares, at once (memory only).
# Writes under $OUT: machine.txt, summary.log, results.tgz.
#   OUT=$OUT bash scripts/gpu/pressure-longtail.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
NAME=pressure-longtail
source scripts/gpu/lease.sh
stage pressure
caps=bench/hf/pressure-caps-fine.json
timeout 200 python3 bench/hf/pressure_runs.py --caps "$caps" --cells q3-sft-longtail-16x1 --shares 0.08,0.10,0.12,0.15 \
  --budget-s 190 --min-split-s 10 --gpu-budget-gib 12 --out-dir "$work" --rows pressure-sft-rows.jsonl \
  > "$work/pressure-sft.log" 2>&1 &
timeout 200 python3 bench/hf/pressure_runs.py --caps "$caps" --cells q3-trainer-longtail-8x2 --shares 0.17,0.19,0.22,0.25 \
  --budget-s 190 --min-split-s 10 --gpu-budget-gib 56 --out-dir "$work" --rows pressure-trainer-rows.jsonl \
  > "$work/pressure-trainer.log" 2>&1 &
wait
grep -h '^  q3' "$work/pressure-sft.log" "$work/pressure-trainer.log" | tee -a "$OUT/summary.log"
stage done
