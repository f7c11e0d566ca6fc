#!/usr/bin/env python3
"""Writes the FIT rows of bench/hf/models_accuracy.py (llama-3.2-3b's QLoRA rows of qlora-run1) as
measurement rows (docs/measurements.md), so that `lorasim fit` fits a quantized base's time terms
from them (calibrate/fit_quant.cpp):

    python3 bench/hf/qlora_fit_rows.py            # -> bench/results/h200/qlora-run1/qlora-fit-rows.csv
    lorasim fit --measurements bench/results/h200/qlora-run1/qlora-fit-rows.csv --gpu h200 --output fit.toml

Each row says what the run did as models_accuracy.py prices it: the Trainer with PEFT's
prepare_model_for_kbit_training (fp32 adapters, checkpointing, Transformers' loss), SFTTrainer
(TRL 1.16) with the base as loaded, bf16 adapters and its fused LM head. Held-out rows are never
written.
"""
import csv
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models_accuracy as MA  # noqa: E402  (is_fit: the one definition of the FIT rows)

RUN = os.path.join(MA.RESULTS, "qlora-run1")
OUT = os.path.join(RUN, "qlora-fit-rows.csv")
COLUMNS = ["model", "seq_len", "micro_batch", "accumulation", "grad_ckpt", "lora_rank", "lora_alpha", "lora_targets",
           "precision", "oom", "step_time_s", "peak_allocated_bytes", "peak_reserved_bytes", "stack", "attn_impl",
           "lora_dropout", "allocator", "autocast", "loop", "fused_lm_head", "device", "quant", "double_quant",
           "kbit_prepare", "adapter_dtype", "optim"]


def measurement(r):
    trainer = r["trainer"] == "Trainer"
    b = lambda v: "true" if v else "false"  # noqa: E731
    return {
        # The config path relative to the rows file (docs/measurements.md).
        "model": os.path.relpath(r["config"], RUN), "seq_len": r["max_length"], "micro_batch": r["micro_batch"],
        "accumulation": r["accumulation"], "grad_ckpt": b(r["grad_ckpt"]), "lora_rank": 16, "lora_alpha": 32,
        "lora_targets": "all", "precision": "bf16", "oom": b(r["oom"]), "step_time_s": repr(r["mean_step_time_s"]),
        "peak_allocated_bytes": r["peak_allocated_bytes"], "peak_reserved_bytes": r["peak_reserved_bytes"],
        "stack": "hf-peft", "attn_impl": r["attn_impl"], "lora_dropout": r["lora"]["lora_dropout"],
        "allocator": r["allocator"], "autocast": "true", "loop": "trainer", "fused_lm_head": b(not trainer),
        "device": r["gpu"], "quant": r["quant"], "double_quant": "true", "kbit_prepare": b(trainer),
        "adapter_dtype": "fp32" if trainer else "bf16", "optim": r.get("optim") or "adamw_torch_fused",
    }


def main():
    rows = []
    with open(os.path.join(RUN, "qlora-rows.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if MA.is_fit(r) and not r.get("oom"):
                rows.append(measurement(r))
    with open(OUT, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"{OUT}: {len(rows)} FIT rows")


if __name__ == "__main__":
    main()
