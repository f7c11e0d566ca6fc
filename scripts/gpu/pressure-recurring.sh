#!/usr/bin/env bash
# Issue 28: the held-out checkpointed cells of varying_need_recurring. Each cell runs one epoch under
# the default allocator capped at its predicted allocated peak plus varying_need_share of its
# activations (the rule's share, RULE_R + reach x (RULE_C - RULE_R)) and at 0.04 and 0.08 below it,
# all cells at once (memory only; bench/results/h100/README.md has the predictions, written before).
# On an H200 lease it first times the host's dispatch around `calibrate --stack hf-peft` (the
# H200 machine's pair for bench/results/gpu-transfer.md).
# Writes under $OUT: machine.txt, summary.log, results.tgz.
#   OUT=$OUT bash scripts/gpu/pressure-recurring.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
NAME=pressure-recurring
source scripts/gpu/lease.sh
caps=bench/hf/pressure-caps-recurring.json
RULE_R=${RULE_R:-0.344} RULE_C=${RULE_C:-0.022}
CELLS=${CELLS:-q3-sft-longtail-8x2 q3-sft-longtail-4x4 q25-sft-longtail-16x1 q3-sft-chat1024-16x1 q3-sft-chat1024-8x2 q3-sft-steps1024-4x4 q3-sft-uniform-8x2}
[[ $base == h200 ]] && host_pair
stage pressure
left=$(( 570 - ($(date +%s) - t0) ))
items=""
for cell in $CELLS; do
  items+=" $cell:$(python3 -c "
import json; v = json.load(open('$caps'))['$cell']; s = $RULE_R + v['worst_width_reach'] * ($RULE_C - $RULE_R)
print(','.join('%.3f' % max(0.0, s - d) for d in (0.08, 0.04, 0.0)))")"
done
pressure_cells "$caps" "$left" "$items"
stage done
