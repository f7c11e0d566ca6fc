#!/usr/bin/env bash
# Holds a lorasim build against a reference build of an earlier commit: the README's examples
# (table, JSON and CSV), the catalog commands, the committed profiles' refits and the validation
# behind bench/results must print the same, byte for byte. A refactor that changes no figure
# passes; a change of figures on purpose shows here as a diff to explain in its commit.
#   bash scripts/check-figures.sh OLD_LORASIM [NEW_LORASIM]
# Exit 0 when every output is identical, 1 when any differs (the diffs are printed).
set -uo pipefail
cd "$(dirname "$0")/.."
old=${1:?usage: check-figures.sh OLD_LORASIM [NEW_LORASIM]}
new=$(realpath "${2:-build/cli/lorasim}")
old=$(realpath "$old")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0 n=0
same() {  # label, then the arguments of one lorasim run; @OUT@ names a file it writes
  local label=$1; shift
  n=$((n + 1))
  rm -rf "$tmp/old" "$tmp/new"; mkdir -p "$tmp/old" "$tmp/new"
  "$old" "${@//@OUT@/$tmp/old}" > "$tmp/old.out" 2>&1; echo "exit $?" >> "$tmp/old.out"
  "$new" "${@//@OUT@/$tmp/new}" > "$tmp/new.out" 2>&1; echo "exit $?" >> "$tmp/new.out"
  sed -i "s#$tmp/old#@OUT@#g" "$tmp/old.out"; sed -i "s#$tmp/new#@OUT@#g" "$tmp/new.out"
  if ! diff -u "$tmp/old.out" "$tmp/new.out" > "$tmp/d"; then
    echo "DIFFERS: $label: lorasim $*"; head -40 "$tmp/d"; fail=1
  fi
  if ! diff -ru "$tmp/old" "$tmp/new" > "$tmp/d"; then echo "DIFFERS: $label: files written"; head -40 "$tmp/d"; fail=1; fi
}
root=$PWD
cfg=$root/bench/hf/configs/qwen3-4b.json
for fmt in "" "--format json" "--format csv"; do
  # shellcheck disable=SC2086
  {
    same readme recommend --gpu h200 --model qwen3-1.7b --effective-batch 16 --seq-len 512 $fmt
    same readme simulate --gpu h200 --model qwen3-1.7b --effective-batch 16 --seq-len 512 $fmt
    same readme simulate --profile "$root/hwprofiles/h200.toml" --model qwen3-4b --effective-batch 32 --seq-len 1024 $fmt
    same readme recommend --gpu t4 --model qwen3-1.7b --effective-batch 4 --seq-len 512 $fmt
    same readme simulate --gpu h200 --model qwen3-8b --effective-batch 64 --seq-len 2048 --grad-ckpt $fmt
    same readme simulate --gpu a100-80gb --model-config "$cfg" --effective-batch 32 --seq-len 1024 $fmt
    same readme simulate --gpu h200 --model qwen3-1.7b --effective-batch 16 --autocast false $fmt
    same stack simulate --gpu h200 --model qwen3-1.7b --effective-batch 16 --seq-len 512 --stack lorasim $fmt
    same stack simulate --gpu l4 --model llama-3.2-3b --effective-batch 8 --seq-len 1024 --grad-ckpt --lora-dropout 0.05 $fmt
    same stack recommend --gpu a10g --model qwen3-1.7b --effective-batch 32 --seq-len 1024 --fused-lm-head true $fmt
    same stack simulate --gpu h100-sxm --model mistral-7b --effective-batch 16 --seq-len 2048 --allocator expandable --attn-impl eager $fmt
    same stack simulate --gpu a100-40gb --model qwen3-4b --effective-batch 16 --seq-len 512 --stack lorasim --grad-ckpt $fmt
  }
done
same catalog profiles
same catalog models
same catalog profiles --format json
# The committed profiles refit to the digit (the fit reads only committed rows).
same refit fit --measurements "$root/bench/results/h200/accuracy-run2/calib-runs.csv" \
  --measurements "$root/bench/results/h200/accuracy-run3/calib-runs.csv" \
  --measurements "$root/bench/results/h200/accuracy-run4/calib-runs.csv" --gpu h200 --out @OUT@/refit.toml
same refit-hf fit --measurements "$root/bench/results/h200/hf-peft-run7/calib-hf-runs.csv" --gpu h200 --out @OUT@/refit-hf.toml
same refit-hf8 fit --measurements "$root/bench/results/h200/hf-peft-run8/calib-hf-runs.csv" --gpu h200 --out @OUT@/refit-hf8.toml
# The validations behind bench/results (the runner's grid and the hf-peft held-out sets).
same validate validate --measurements "$root/bench/results/h200/accuracy-run3/grid-runs.csv" --profile "$root/hwprofiles/h200.toml" --format json
same validate validate --measurements "$root/bench/results/h200/accuracy-run3/grid-runs.csv" --profile "$root/hwprofiles/h200.toml"
for f in "$root"/bench/results/h200/hf-peft-run*/*heldout*.jsonl "$root"/bench/results/h200/hf-peft-run*/*trainer*.jsonl "$root"/bench/results/h200/hf-peft-run9/*.jsonl; do
  [ -e "$f" ] || continue
  same validate validate --measurements "$f" --profile "$root/hwprofiles/h200.toml" --format json
done
echo "$n runs compared: $([ $fail = 0 ] && echo all identical || echo SOME DIFFER)"
exit $fail
