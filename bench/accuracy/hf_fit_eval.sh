#!/usr/bin/env bash
# The lorasim side of hf_fit_check.sh, runnable anywhere (no GPU): fits a profile to three
# splits of HF-runs.csv (1x16, 4x4, 16x1), validates it on the other two (2x8, 8x2), and
# fits each four to predict the fifth.
#   bash bench/accuracy/hf_fit_eval.sh LORASIM HF-RUNS.csv OUT-DIR
# writes OUT-DIR/hf-profile.toml, validate-fit.txt, validate-heldout.{txt,json}, loo.txt.
set -uo pipefail
bin=$1
runs=$2
out=$3
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
rm -f "$out/loo.txt" "$out/hf-profile.toml"
# Rows of hf-runs.csv whose micro-batch is in the list (B is fixed, so that names the split).
pick() {
  awk -F, -v want=" $1 " '/^#/ { print; next }
    !header { header = 1; for (i = 1; i <= NF; i++) col[$i] = i; print; next }
    index(want, " " $col["micro_batch"] " ")' "$runs"
}
# Fit to 1x16, 4x4, 16x1 and predict 2x8 and 8x2 (lorasim fit takes three runs or more); the
# leave-one-out fits below check every split in turn.
pick "1 4 16" > "$tmp/fit-runs.csv"
pick "2 8" > "$tmp/heldout-runs.csv"
if $bin fit --measurements "$tmp/fit-runs.csv" --gpu h200 --out "$out/hf-profile.toml"; then
  $bin validate --measurements "$tmp/fit-runs.csv" --profile "$out/hf-profile.toml" | tee "$out/validate-fit.txt"
  $bin validate --measurements "$tmp/heldout-runs.csv" --profile "$out/hf-profile.toml" | tee "$out/validate-heldout.txt"
  $bin validate --measurements "$tmp/heldout-runs.csv" --profile "$out/hf-profile.toml" --format json \
    > "$out/validate-heldout.json"
fi
# Leave one out: fit to four splits, predict the fifth.
loo=$tmp/loo
mkdir -p "$loo"
for mb in 1 2 4 8 16; do
  rest=$(for m in 1 2 4 8 16; do [ "$m" = "$mb" ] || printf '%s ' "$m"; done)
  pick "$rest" > "$loo/fit-$mb.csv"
  pick "$mb" > "$loo/heldout-$mb.csv"
  $bin fit --measurements "$loo/fit-$mb.csv" --gpu h200 --out "$loo/profile-$mb.toml" > "$loo/fit-$mb.log" 2>&1 &&
    $bin validate --measurements "$loo/heldout-$mb.csv" --profile "$loo/profile-$mb.toml" |
    tee -a "$out/loo.txt"
done
