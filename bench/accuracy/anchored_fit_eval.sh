#!/usr/bin/env bash
# `lorasim fit` anchored on a profile vs the full refit (no GPU needed):
#   bash bench/accuracy/anchored_fit_eval.sh LORASIM FIT.csv HELDOUT.csv BASE-ARGS...
# validates on HELDOUT.csv the base profile alone (BASE-ARGS: --gpu NAME or --profile FILE),
# the full refit to FIT.csv (--fit-mode full: what `lorasim fit` did before anchoring) and the
# anchored fit (--fit-mode auto, the default). Prints what each fit moved and the summaries.
set -uo pipefail
bin=$1 fit=$2 heldout=$3
shift 3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "== base profile alone ($*)"
$bin validate --measurements "$heldout" "$@" | tail -3
for mode in full auto; do
  echo "== fit --fit-mode $mode"
  $bin fit --measurements "$fit" "$@" --fit-mode $mode --out "$tmp/$mode.toml" | sed -n '/^anchored\|^refitted/,$p' |
    grep -v '^wrote'
  $bin validate --measurements "$heldout" --profile "$tmp/$mode.toml" | tail -3
done
