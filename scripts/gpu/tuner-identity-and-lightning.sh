#!/usr/bin/env bash
# One lease, two closing measurements (three on an H200: first the host's dispatch timing around
# `calibrate --stack hf-peft`, the H200 machine's pair of bench/results/gpu-transfer.md):
#   issue 28: the Trainer's cap15 tuned from the A10G prior, then bit-identity on the GPU (SDPA's
#             math kernels and deterministic algorithms; tune-run1 had only cuDNN's attention)
#   issue 30: `lorasim calibrate --stack lightning`, then the cap15 and lengths cells (truth, the
#             tuner from the A10G prior, bit-identity) on this lease, scored with its own calibration
# Writes under $OUT: machine.txt, summary.log, lightning.toml, results.tgz. BUDGET_S: the whole script;
# CELLS: the Lightning cells (default cap15,lengths).
#   OUT=$OUT bash scripts/gpu/tuner-identity-and-lightning.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
NAME=tuner-identity-and-lightning
source scripts/gpu/lease.sh
[[ $base == h200 ]] && host_pair  # the H200 machine's pair for bench/results/gpu-transfer.md
stage "trainer cap15 tune"
timeout 150 python3 bench/hf/tune_gpu.py --out-dir "$work/tune" --lorasim "$bin" --workloads cap15 --phases tune \
  --gpu a10g --budget-s 140 > "$work/tune.log" 2>&1
grep -hE '"phase": "(tune|identical)"' "$work/tune/tune-rows.jsonl" | cut -c1-400 | tee -a "$OUT/summary.log"
left=$(( ${BUDGET_S:-560} - ($(date +%s) - t0) ))
(( left < 200 )) && { stage "no time left for Lightning"; exit 0; }
calibrate_lightning
stage "lightning cells"
left=$(( ${BUDGET_S:-560} - ($(date +%s) - t0) ))
timeout $(( left + 10 )) python3 bench/lightning/lightning_gpu.py --out-dir "$work/cells" --lorasim "$bin" \
  --cells "${CELLS:-cap15,lengths}" --budget-s $(( left - 10 )) > "$work/cells.log" 2>&1
grep -h '^lightning_gpu' "$work/cells.log" | cut -c1-300 >> "$OUT/summary.log"
stage done
