#!/usr/bin/env bash
# Issue 30 on one lease: `lorasim calibrate --stack lightning` (this host's terms, and the machine's
# cold start paid before any timed run), then every cell (cap15, lengths over an epoch, fixed) with
# its truth, the tuner from the A10G prior and the bit-identity check; scored with this lease's own
# calibration (bench/lightning/summarize.py --profile lightning.toml).
# CELLS: lightning_gpu.py's cells (default all three); BUDGET_S: the whole script's seconds.
# Writes under $OUT: machine.txt, summary.log, lightning.toml, results.tgz.
#   OUT=$OUT bash scripts/gpu/lightning-one-lease.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
NAME=lightning-one-lease
source scripts/gpu/lease.sh
calibrate_lightning
stage cells
left=$(( ${BUDGET_S:-560} - ($(date +%s) - t0) ))
timeout $(( left + 10 )) python3 bench/lightning/lightning_gpu.py --out-dir "$work/cells" --lorasim "$bin" \
  --cells "${CELLS:-cap15,lengths,fixed}" --budget-s $(( left - 10 )) > "$work/cells.log" 2>&1
grep -h '^lightning_gpu' "$work/cells.log" | cut -c1-300 >> "$OUT/summary.log"
stage done
