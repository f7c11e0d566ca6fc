#!/usr/bin/env bash
# Calibrates the GPU machine it runs on with both runners and measures held-out splits, in one
# lease (issue 28: a second calibrated GPU). Writes under $OUT:
#   machine.txt         the card, the CPU, the software
#   dispatch.json       bench/hf/host_dispatch.py: the CPU's host time per dispatched operator
#   runner.toml         `lorasim calibrate --device cuda` (the LibTorch runner: the device half)
#   calib-runs.csv      its measured runs
#   profile.toml        `lorasim calibrate --stack hf-peft --profile runner.toml` (both halves)
#   calib-hf-runs.csv   the probe's measured runs
#   heldout-rows.jsonl  bench/hf/heldout.py (both allocators) and trainer_runs.py --sft: held out
#   logs.tgz            every log
# Budgets in seconds: HELDOUT_EXP_BUDGET (150), HELDOUT_DEF_BUDGET (70), TRAINER_BUDGET (80).
# STAGES (default "dispatch build runner hf heldout trainer") picks stages; without the runner
# stage, hf calibrates on BASE_GPU's embedded device half (default: the profile matching the card).
#   bash scripts/gpu/calibrate-gpu.sh          (on the GPU machine, with .deps/ and .whl/ carried)
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/calibrate-gpu}
logs=/tmp/calibrate-gpu-logs
mkdir -p "$OUT" "$logs"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD/python
export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
t0=$(date +%s)
STAGES=" ${STAGES:-dispatch build runner hf heldout trainer} "
want() { [[ $STAGES == *" $1 "* ]]; }
stage() { echo "== $1 at $(( $(date +%s) - t0 )) s" | tee -a "$logs/stages.log" >&2; }
finish() { tar czf "$OUT/logs.tgz" -C /tmp calibrate-gpu-logs 2>/dev/null; }
trap finish EXIT
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm --format=csv; nproc
  grep -m1 'model name' /proc/cpuinfo
  python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__)'
  python3 -c 'import trl, datasets; print("trl", trl.__version__, "datasets", datasets.__version__)'; } > "$OUT/machine.txt" 2>&1
want dispatch && stage dispatch && python3 bench/hf/host_dispatch.py --device cuda --seconds 4 --out "$OUT/dispatch.json" > "$logs/dispatch.log" 2>&1
want build && stage build && { LORASIM_GPU_TESTS=OFF bash scripts/gpu/build.sh build-gpu > "$logs/build.log" 2>&1 || { tail -30 "$logs/build.log"; exit 1; }; }
bin=$PWD/build-gpu/cli/lorasim
want runner && stage runner && timeout ${RUNNER_S:-200} "$bin" calibrate --device cuda --out "$OUT/runner.toml" --save-measurements "$OUT/calib-runs.csv" \
  > "$logs/runner.log" 2>&1 || echo "runner calibration failed (see logs)" >&2
base=("--profile" "$OUT/runner.toml")
[ -f "$OUT/runner.toml" ] || base=(${BASE_GPU:+--gpu $BASE_GPU})
want hf && stage hf && timeout ${HF_S:-200} "$bin" calibrate --stack hf-peft "${base[@]}" --python python3 --out "$OUT/profile.toml" \
  --save-measurements "$OUT/calib-hf-runs.csv" > "$logs/hf.log" 2>&1 || echo "hf-peft calibration failed (see logs)" >&2
want heldout && stage heldout && timeout $(( ${HELDOUT_EXP_BUDGET:-150} + 60 )) python3 bench/hf/heldout.py --allocator expandable \
  --budget-s ${HELDOUT_EXP_BUDGET:-150} --out "$OUT/heldout-rows.jsonl" 2>> "$logs/heldout.log"
want heldout && timeout $(( ${HELDOUT_DEF_BUDGET:-70} + 50 )) python3 bench/hf/heldout.py --allocator default \
  --budget-s ${HELDOUT_DEF_BUDGET:-70} --out "$OUT/heldout-rows.jsonl" 2>> "$logs/heldout.log"
want trainer && stage trainer && timeout $(( ${TRAINER_BUDGET:-80} + 50 )) python3 bench/hf/trainer_runs.py --sft --budget-s ${TRAINER_BUDGET:-80} \
  --out "$OUT/heldout-rows.jsonl" > "$logs/trainer.log" 2>&1
want dispatch && stage dispatch-again && python3 bench/hf/host_dispatch.py --device cuda --seconds 4 >> "$logs/dispatch.log" 2>&1
stage done
