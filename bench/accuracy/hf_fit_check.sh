#!/usr/bin/env bash
# On the GPU machine: can `lorasim fit` learn HF Trainer + PEFT from a few timed runs? Times
# qwen3-1.7b, seq 512, B=16, all five splits with hf_peft_runs.py; fits a profile to three of
# them (1x16, 4x4, 16x1) and checks its predictions on the other two (2x8, 8x2) with
# `lorasim validate --measurements`; also fits to each four and predicts the fifth (loo.txt).
# Writes to $OUT (or ./hf-fit-results), at most eight files: hf-runs.csv (all five),
# hf-profile.toml, validate-fit.txt (in-sample), validate-heldout.{txt,json}, loo.txt
# (leave-one-out), run.log.
set -uo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
out=${OUT:-hf-fit-results}
mkdir -p "$out"
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export PYTHONUNBUFFERED=1
exec > >(tee "$out/run.log") 2>&1
start=$(date +%s)
tmp=$(mktemp -d)
# Build first: a parallel build would steal the CPU that HF's host-bound splits need.
LORASIM_GPU_TESTS=OFF scripts/gpu/build.sh build-gpu > /tmp/lorasim-build.log 2>&1 ||
  { tail -30 /tmp/lorasim-build.log; exit 1; }
bin=build-gpu/cli/lorasim
echo "build took $(( $(date +%s) - start )) s"

python3 bench/accuracy/hf_peft_runs.py --models qwen3-1.7b --seq-lens 512 --effective-batches 16 \
  --grad-ckpt off --steps 6 --out "$out/hf-runs.csv" || exit 1

# Rows of hf-runs.csv whose micro-batch is in the list (B is fixed, so that names the split).
pick() {
  awk -F, -v want=" $1 " '/^#/ { print; next }
    !header { header = 1; for (i = 1; i <= NF; i++) col[$i] = i; print; next }
    index(want, " " $col["micro_batch"] " ")' "$out/hf-runs.csv"
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
echo "total $(( $(date +%s) - start )) s"
