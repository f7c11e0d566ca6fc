#!/usr/bin/env bash
# Saved-tensor count of the HF + PEFT stack on the GPU (docs/hf-stack-memory.md): runs
# python -m lorasim_hf.saved_tensors over qwen3-1.7b, llama-3.2-1b, qwen2.5-0.5b and mistral-7b
# shaped configs (bench/hf/configs/, truncated to 2 layers) at 512/2048 tokens, micro-batch 1 and 2,
# autocast on/off, dropout 0/0.05, checkpointing on/off, SDPA and eager; one process, about 2 min.
# Writes one JSON per case and summary.md (measured vs lorasim's count when $LORASIM or PATH has
# the binary, hooks vs allocator) under
# $OUT/hf-saved-tensors (or the directory given as $1). Needs torch, transformers, peft in $PYTHON.
#   bench/hf/saved_tensors_gpu.sh            # on the device machine, from the repository root
set -euo pipefail
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-python3}
OUTDIR=${1:-${OUT:-/tmp}/hf-saved-tensors}
LIMIT_S=${LIMIT_S:-150}
"$PYTHON" -c 'import torch, transformers, peft; assert torch.cuda.is_available(), "no CUDA device";
print("torch", torch.__version__, "transformers", transformers.__version__, "peft", peft.__version__, torch.cuda.get_device_name())'
mkdir -p "$OUTDIR"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUTDIR/gpu.txt" 2>/dev/null || true
"$PYTHON" bench/hf/saved_tensors_sweep.py --matrix gpu --outdir "$OUTDIR" --limit-s "$LIMIT_S" 2>&1 | tee "$OUTDIR/log.txt"
