#!/usr/bin/env bash
# The figures of bench/results/hf-anchored-fit.md, from committed rows (no GPU needed):
#   bash bench/accuracy/anchored_fit_check.sh [LORASIM]
# 1. HF Trainer + PEFT: fit to 1x16, 4x4, 16x1 of qwen3-1.7b s512 (hf-peft-run1) anchored on
#    the builtin h200 profile, validate on the file's other rows (2x8, 8x2).
# 2. lorasim's LibTorch runner: fit to three splits of qwen3-1.7b s1024 of the accuracy grid
#    (accuracy-run4) anchored on an H200 datasheet prior, validate on the rest of the grid
#    (other models, lengths, checkpointing).
set -uo pipefail
cd "$(git rev-parse --show-toplevel)"
bin=${1:-build/cli/lorasim}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Rows of $1 for which the awk condition $2 holds (header and comments kept).
rows() {
  awk -F, "/^#/ { print; next } !header { header = 1; for (i = 1; i <= NF; i++) col[\$i] = i; print; next } $2" "$1"
}
hf=bench/results/h200/hf-peft-run1/hf-runs.csv
one='index(" 1 4 16 ", " " $col["micro_batch"] " ")'
rows $hf "$one" > "$tmp/hf-fit.csv"
rows $hf "!($one)" > "$tmp/hf-heldout.csv"
echo "### 1. HF Trainer + PEFT, anchored on --gpu h200"
bash bench/accuracy/anchored_fit_eval.sh "$bin" "$tmp/hf-fit.csv" "$tmp/hf-heldout.csv" --gpu h200

grid=bench/results/h200/accuracy-run4/grid-runs.csv
w='$col["model"] == "qwen3-1.7b" && $col["seq_len"] == 1024 && $col["grad_ckpt"] == "false" && $col["oom"] == "false"'
rows $grid "$w" > "$tmp/grid-fit.csv"
rows $grid "!($w)" > "$tmp/grid-heldout.csv"
echo
echo "### 2. LibTorch runner grid, anchored on an H200 datasheet prior"
bash bench/accuracy/anchored_fit_eval.sh "$bin" "$tmp/grid-fit.csv" "$tmp/grid-heldout.csv" \
  --profile bench/results/h200/anchored-fit/h200-prior.toml
