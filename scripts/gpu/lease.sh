# Sourced by the one-lease scripts of scripts/gpu/ (after `cd` to the repository root, with NAME set):
# the carried wheels installed, the carried lorasim on the path ($bin), $OUT and a work folder ($work)
# packed into $OUT/results.tgz on exit (the device tool returns a few files only), `stage` lines in
# $OUT/summary.log, the machine in $OUT/machine.txt, and $base: the embedded profile of this card.
OUT=${OUT:-/tmp/$NAME}
work=/tmp/$NAME-work
rm -rf "$work"; mkdir -p "$OUT" "$work"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export LD_LIBRARY_PATH=$PWD/build-carry${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} LORASIM_PYTHONPATH=$PWD/python
bin=$PWD/build-carry/lorasim
t0=$(date +%s)
stage() { echo "== $1 at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/summary.log"; }
trap 'tar czf "$OUT/results.tgz" -C "$work" . 2>/dev/null' EXIT
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version,uuid --format=csv; nproc
  grep -m1 'model name' /proc/cpuinfo
  python3 -c 'import torch, transformers, peft; print("torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__)'
  python3 -c 'import pytorch_lightning as pl; print("pytorch-lightning", pl.__version__)'; } > "$OUT/machine.txt" 2>&1
card=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
base=h100-sxm; [[ $card == *H200* ]] && base=h200
# `lorasim calibrate --stack lightning` on $base: this lease's loop terms in $OUT/lightning.toml.
calibrate_lightning() {
  stage calibrate
  timeout 150 "$bin" calibrate --stack lightning --gpu "$base" --out "$OUT/lightning.toml" \
    --save-measurements "$work/calib-lightning-runs.csv" > "$work/calibrate.log" 2>&1
  grep -E "fit over|device_scale|host_per_op|took" "$work/calibrate.log" | tee -a "$OUT/summary.log"
}
# The host's dispatch timing before and after `lorasim calibrate --stack hf-peft` on $base: a lease's
# timing and its fitted host_per_op_s as a pair (bench/results/gpu-transfer.md).
host_pair() {
  stage host
  python3 bench/hf/host_dispatch.py --device cuda --seconds 3 --out "$work/dispatch-before.json" > "$work/dispatch.log" 2>&1
  timeout 200 "$bin" calibrate --stack hf-peft --gpu "$base" --out "$work/hf.toml" \
    --save-measurements "$work/calib-hf-runs.csv" > "$work/calibrate.log" 2>&1
  echo "calibrate rc $?" >> "$work/calibrate.log"
  python3 bench/hf/host_dispatch.py --device cuda --seconds 3 --out "$work/dispatch-after.json" >> "$work/dispatch.log" 2>&1
  grep -h '"host_per_op_s"' "$work"/dispatch-*.json | tee -a "$OUT/summary.log"
  grep -E '^host_per_op_s' "$work/hf.toml" | tee -a "$OUT/summary.log"
}
# bench/hf/pressure_runs.py per cell at once, each at its own activation shares (memory only):
#   pressure_cells CAPS_FILE SECONDS "cell:share,share,... cell:..."
pressure_cells() {
  local caps=$1 left=$2 item cell shares
  for item in $3; do
    cell=${item%%:*} shares=${item#*:}
    echo "$cell shares $shares" | tee -a "$OUT/summary.log"
    python3 bench/hf/pressure_runs.py --caps "$caps" --cells "$cell" --shares "$shares" --budget-s $(( left - 15 )) \
      --min-split-s 10 --gpu-budget-gib 10 --out-dir "$work" --rows "pressure-$cell-rows.jsonl" \
      > "$work/pressure-$cell.log" 2>&1 &
  done
  wait
  grep -h '^  q' "$work"/pressure-*.log | tee -a "$OUT/summary.log"
}
