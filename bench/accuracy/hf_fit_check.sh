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

bash bench/accuracy/hf_fit_eval.sh "$bin" "$out/hf-runs.csv" "$out"
echo "total $(( $(date +%s) - start )) s"
