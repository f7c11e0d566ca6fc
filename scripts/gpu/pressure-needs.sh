#!/usr/bin/env bash
# Issue 28: held-out checkpointed cells at and below what lorasim says they need, after
# pressure-recurring-run1 ran some of them out of memory at varying_need_recurring's share. Each
# cell runs one epoch under the default allocator capped at its predicted allocated peak plus the
# given shares of its activations (bench/hf/pressure-caps-recurring.json, H200 profile units), all
# cells at once (memory only). CELL_SHARES: "cell:share,share,... cell:...".
# Writes under $OUT: machine.txt, summary.log, results.tgz.
#   OUT=$OUT bash scripts/gpu/pressure-needs.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
NAME=pressure-needs
source scripts/gpu/lease.sh
caps=bench/hf/pressure-caps-recurring.json
CELL_SHARES=${CELL_SHARES:-q3-sft-uniform-8x2:0.38,0.427,0.50 q3-sft-longtail-8x2:0.25,0.32,0.427 q3-sft-steps1024-4x4:0.25,0.45,0.734 q25-sft-longtail-16x1:0.20,0.287,0.344}
stage pressure
left=$(( ${BUDGET_S:-300} - ($(date +%s) - t0) ))
pressure_cells "$caps" "$left" "$CELL_SHARES"
stage done
