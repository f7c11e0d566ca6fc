#!/usr/bin/env bash
# The hf-peft stack's accuracy on held-out H200 runs, from the committed rows and profile
# (no GPU needed): writes bench/results/hf-accuracy.md and hf-accuracy.json.
#   bash bench/hf/accuracy.sh [path/to/lorasim]
# Sets (bench/results/h200/hf-peft-run*/; every row below is held out of the fit it is scored on):
#   A  run7, the lease whose calibration (30-run plan) is the committed [stack.hf-peft]: 15
#      workloads through the probe's Trainer step and the plain loop, both allocators
#   B  other leases against the committed profile: run6's, run5's and run2's held-out grids, and
#      run8's default-allocator workloads
#   T  real Trainer and SFTTrainer runs timed by LorasimCallback, a fresh model per split (run5,
#      run6, run8: other leases); run3's and run4's reused one model across a cell's splits (see below)
#   C  run6's held-out grid against run6's own calibration (the lease calibrating itself)
#   E  run8: a fresh lease calibrating itself with the shipping plan, then its Trainer/SFTTrainer
#      runs and the default allocator's held-out workloads (the user's path)
#   F  run9: two architectures at 2048 tokens with checkpointing and autocast each on and off
#   R  the calibrated terms of run6, run7 and run8 side by side
#   D  `lorasim fit` of three runs of one workload (run2, qwen3-1.7b s512 1x8, 2x4, 8x1) on the
#      builtin h200 profile, scored on run2's other workloads
#   P  how much one process's step time strays from another's on one lease (run6 allocab rows)
set -euo pipefail
cd "$(dirname "$0")/../.."
L=${1:-build/cli/lorasim}
R=bench/results/h200
T=$(mktemp -d)
mkdir -p "$T/s"
trap 'rm -rf "$T"' EXIT
md=bench/results/hf-accuracy.md
P=hwprofiles/h200.toml
score() {  # name profile rows...
  local name=$1 prof=$2; shift 2
  local js=()
  for f in "$@"; do
    "$L" validate --measurements "$f" --profile "$prof" --format json > "$T/$name-$(basename "$f").json"
    js+=("$T/$name-$(basename "$f").json")
  done
  python3 bench/hf/summarize.py --lorasim "$L" --profile "$prof" --profile-label "${prof/#$T\//fitted by accuracy.sh: }" --title "$name" --markdown "$T/$name.md" "${js[@]}" > "$T/s/$name.json"
}
# The SFTTrainer rows (trainer_runs.py's one SFTTrainer cell: qwen3-1.7b, 1024 tokens, 4 x 2,
# dropout 0.05) were written before LorasimCallback recorded TRL's fused LM head, which
# SFTTrainer (TRL 1.16) always installs; mark them so, as the callback now does itself.
for run in 3 4 5 6 8; do
  python3 - $R/hf-peft-run$run/trainer-rows.jsonl "$T/trainer-run$run.jsonl" <<'PY'
import json, sys
out = open(sys.argv[2], "w")
for line in open(sys.argv[1]):
    r = json.loads(line)
    sft = (r["model"], r["seq_len"], r["micro_batch"], r["accumulation"], r["lora_dropout"]) == ("qwen3-1.7b", 1024, 4, 2, 0.05)
    if sft:
        r.setdefault("fused_lm_head", True)
    out.write(json.dumps(r) + "\n")
PY
done
score "A same lease (run7): probe step and plain loop, 15 workloads" $P $R/hf-peft-run7/heldout-rows.jsonl
score "B1 other lease (run6): probe step and plain loop, 15 workloads" $P $R/hf-peft-run6/heldout-rows.jsonl
score "B2 other lease (run5): probe step and plain loop, 15 workloads" $P $R/hf-peft-run5/heldout-rows.jsonl
score "B3 other lease (run2): probe step and plain loop, 15 workloads" $P $R/hf-peft-run2/heldout-rows.jsonl
score "B4 other lease (run8): probe step and plain loop, the default allocator's 5 workloads" $P $R/hf-peft-run8/heldout-rows.jsonl
score "F other lease (run9): llama-3.2-3b and qwen3-4b at 2048 tokens, checkpointing x autocast" $P \
  $R/hf-peft-run9/ckpt-autocast-rows.jsonl
score "T1 Trainer and SFTTrainer (LorasimCallback), a fresh model per split (run5, run6, run8)" $P \
  "$T/trainer-run5.jsonl" "$T/trainer-run6.jsonl" "$T/trainer-run8.jsonl"
# trainer_runs.py of run3/run4 reused one model across a cell's splits; a model reused after a
# Trainer has run holds memory of that run (bench/results/h200/hf-peft-run4/peak-snapshot.txt: a
# fresh model's Trainer step peaks at the probe's to the MiB), so later splits' peaks are inflated.
score "T2 Trainer and SFTTrainer, a model reused across splits (run3, run4)" $P \
  "$T/trainer-run3.jsonl" "$T/trainer-run4.jsonl"
"$L" fit --measurements $R/hf-peft-run6/calib-hf-runs.csv --gpu h200 --out "$T/run6.toml" > /dev/null
score "C run6's rows against run6's own calibration" "$T/run6.toml" $R/hf-peft-run6/heldout-rows.jsonl
# E: the user's path on a fresh lease: calibrate with the shipping plan, then train.
"$L" fit --measurements $R/hf-peft-run8/calib-hf-runs.csv --gpu h200 --out "$T/run8.toml" > /dev/null
score "E run8 against run8's own calibration: Trainer and SFTTrainer (LorasimCallback)" "$T/run8.toml" "$T/trainer-run8.jsonl"
score "E2 run8 against run8's own calibration: the default allocator's 5 held-out workloads" "$T/run8.toml" $R/hf-peft-run8/heldout-rows.jsonl
# D: three splits of one workload refine the builtin profile; the other workloads are scored.
python3 - "$R/hf-peft-run2/heldout-rows.jsonl" "$T" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def key(r):
    return (r["model"], r["seq_len"], r["micro_batch"] * r["accumulation"], r["grad_ckpt"], r["lora_dropout"],
            r["autocast"], r["allocator"], r["loop"])
fit_key = ("qwen3-1.7b", 512, 8, False, 0.0, True, "expandable", "probe")
with open(sys.argv[2] + "/three.jsonl", "w") as f3, open(sys.argv[2] + "/others.jsonl", "w") as fo:
    for r in rows:
        (f3 if key(r) == fit_key and r["micro_batch"] in (1, 2, 8) else fo if key(r) != fit_key else open("/dev/null", "w")).write(json.dumps(r) + "\n")
PY
"$L" fit --measurements "$T/three.jsonl" --gpu h200 --out "$T/three.toml" > "$T/three-fit.txt"
score "D fit of three runs of one workload (run2) on the builtin profile, other workloads" "$T/three.toml" "$T/others.jsonl"
{
  echo "# hf-peft stack: accuracy on held-out H200 runs"
  echo
  echo "Produced by \`bash bench/hf/accuracy.sh\` ($(date -u +%Y-%m-%d), $(uname -m), lorasim $("$L" --version | head -1 | awk '{print $2}'))"
  echo "from the committed rows in bench/results/h200/hf-peft-run2..9 and hwprofiles/h200.toml; the runs were"
  echo "measured on NVIDIA H200 leases with torch 2.11, transformers 5.17, peft 0.21 (trl 1.16 for SFTTrainer)."
  echo "No row scored here was used to fit the profile it is scored against. Regimes: the profile's host/device"
  echo "ratio of the split (host-bound > 1.25, device-bound < 0.8)."
  echo
  for f in "$T"/A*.md "$T"/B1*.md "$T"/B2*.md "$T"/B3*.md "$T"/B4*.md "$T"/T1*.md "$T"/T2*.md "$T"/C*.md "$T"/E\ *.md "$T"/E2*.md "$T"/F*.md "$T"/D*.md; do cat "$f"; done
  echo "D's fit moved:"
  echo
  echo '```'
  grep -E "^  stack|refitted" "$T/three-fit.txt"
  echo '```'
  echo
  echo "### R the calibrated terms, lease to lease (the shipping 30-run plan: run7, run8; 28 runs: run6)"
  echo
  echo "| lease | host_fixed_s | host_per_op_s | recompute_host_share | device_scale | head_device_scale | saved_scale | reserved_logits_share |"
  echo "|---|---|---|---|---|---|---|---|"
  for run in 6 7 8; do
    "$L" fit --measurements $R/hf-peft-run$run/calib-hf-runs.csv --gpu h200 --out "$T/terms$run.toml" > /dev/null
    python3 - "$T/terms$run.toml" run$run <<'PY'
import re, sys
text = open(sys.argv[1]).read().split("[stack.hf-peft]")[1]
v = dict(re.findall(r"^(\w+) = ([0-9.e+-]+)$", text, re.M))
keys = ["host_fixed_s", "host_per_op_s", "recompute_host_share", "device_scale", "head_device_scale", "saved_scale", "reserved_logits_share"]
print("| " + sys.argv[2] + " | " + " | ".join(f"{float(v[k]):.3g}" for k in keys) + " |")
PY
  done
  echo
  echo "### P one lease, several processes: the host's speed (run6, \`python3 bench/hf/process_spread.py\`)"
  echo
  echo "The same two held-out cells in four processes, alternating the allocator (default, expandable,"
  echo "default, expandable), minutes apart on one H200 lease:"
  echo
  python3 bench/hf/process_spread.py $R/hf-peft-run6/allocab-rows.jsonl
} > "$md"
python3 - "$T/s" > bench/results/hf-accuracy.json <<'PY'
import glob, json, os, sys
print(json.dumps({os.path.basename(p)[:-5]: json.load(open(p)) for p in sorted(glob.glob(sys.argv[1] + "/*.json"))}, indent=1))
PY
echo "wrote $md and bench/results/hf-accuracy.json"
