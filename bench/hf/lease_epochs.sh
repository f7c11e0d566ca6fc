#!/usr/bin/env bash
# Issue 16's epoch target on one GPU machine, as a user meets it: `lorasim calibrate --stack hf-peft`
# there first, then one full epoch per split, each in a fresh process (bench/hf/lengths_runs.py
# --plan epochs), so bench/hf/epochs_accuracy.py can score the epochs against the profile of the
# same machine as well as against the embedded one. Run by the device tool in the repository root,
# with .whl/ and .deps/ carried (bench/hf/README.md); rows and logs go to $OUT.
#   OUT=/tmp/x BUDGET_S=560 bash bench/hf/lease_epochs.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:?set OUT to the folder for rows and logs}
BUDGET_S=${BUDGET_S:-560}
STAGES="build calibhf" OUT=$OUT bash scripts/gpu/hf-collect.sh
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
export PYTHONPATH=/tmp/site:$PWD/python PYTHONUNBUFFERED=1
left=$((BUDGET_S - SECONDS))
echo "== epochs $(date -u +%T), ${left} s left" >&2
timeout $((left + 20)) python3 bench/hf/lengths_runs.py --plan epochs --budget-s "$left" --min-split-s 35 \
  --out-dir "$OUT" > "$OUT/epochs.log" 2>&1
echo "== done $(date -u +%T) after ${SECONDS} s" >&2
