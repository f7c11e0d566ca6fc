#!/usr/bin/env python3
"""Which tensors are alive at the allocated peak of a Trainer step vs the probe's step (the
allocator's memory history): the live blocks at the peak, largest first, with the Python line
that allocated each. A diagnostic for differences between the stack's loops.

    python3 bench/hf/peak_snapshot.py --loop trainer|probe --model qwen3-1.7b --seq-len 512 --micro-batch 4
"""
import argparse, json, os, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")

from alloc_history import live_at_peak  # noqa: E402


def where(e):
    frames = [f for f in e.get("frames", []) if f.get("filename", "").endswith(".py")]
    keep = [f for f in frames if "torch/" not in f["filename"] or "torch/nn/functional" in f["filename"]][:3]
    return " <- ".join(f"{os.path.basename(f['filename'])}:{f['line']} {f['name']}" for f in keep)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loop", choices=["trainer", "probe"], required=True)
    ap.add_argument("--model", default="qwen3-1.7b")
    ap.add_argument("--seq-len", type=int, default=512)
    ap.add_argument("--micro-batch", type=int, default=4)
    ap.add_argument("--top", type=int, default=25)
    a = ap.parse_args()
    import torch, transformers, peft
    cfg_d = json.load(open(os.path.join(HERE, "configs", a.model + ".json")))
    cfg = transformers.AutoConfig.for_model(cfg_d.pop("model_type"), **cfg_d)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")
    model = peft.get_peft_model(model, peft.LoraConfig(r=16, lora_alpha=32, task_type="CAUSAL_LM", target_modules=[
        "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]))
    b, s, V = a.micro_batch, a.seq_len, cfg.vocab_size
    if a.loop == "trainer":
        class DS(torch.utils.data.Dataset):
            def __len__(self): return 3 * b
            def __getitem__(self, i):
                x = torch.randint(0, V, (s,))
                return {"input_ids": x, "labels": x}
        args = transformers.TrainingArguments(output_dir="/tmp/snap", per_device_train_batch_size=b, max_steps=3,
                                              bf16=True, report_to="none", logging_strategy="no", save_strategy="no",
                                              remove_unused_columns=False, disable_tqdm=True)
        tr = transformers.Trainer(model=model, args=args, train_dataset=DS(),
                                  data_collator=transformers.default_data_collator)
        torch.cuda.memory._record_memory_history(max_entries=200000)
        tr.train()
    else:
        from lorasim_hf.probe import Probe, load_plan
        pr = Probe("cuda", "expandable")
        _, _, runs = load_plan({"device": "cuda", "runs": [dict(model=a.model, hf_config=json.load(open(os.path.join(
            HERE, "configs", a.model + ".json"))), seq_len=s, micro_batch=b, steps=2, warmup_steps=1)]})
        torch.cuda.memory._record_memory_history(max_entries=200000)
        pr.run(model, V, runs[0])
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    peak, blocks = live_at_peak(snap)
    print(f"{a.loop}: traced peak {peak / 2**30:.2f} GiB, max_memory_allocated {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB, "
          f"n*V = {b * s * V / 2**30:.3f} Gi-elements")
    for e in blocks[:a.top]:
        print(f"  {e['size'] / 2**20:10.1f} MiB  {where(e)}")


if __name__ == "__main__":
    main()
