#!/usr/bin/env python3
"""How many operators the host dispatches per decoder layer, architecture by architecture: a
diagnostic of lorasim's host-op count (model/analytics.cpp, model/hf_analytics.cpp), whose cost per
operator is calibrated on qwen3 shapes only.

Each architecture of bench/hf/configs/ is built shrunk (hidden 64, 4 heads; its structure as it is:
norms, fused projections, eager attention, soft-capping) at 1 and at 3 layers, with PEFT LoRA on the
projections a user adapts (r 16, dropout 0, fp32 adapters), on the CPU under bf16 autocast; one
training micro-batch (forward, loss, backward) runs under a dispatch mode that counts every aten
operator, and under forward hooks that count every module call. Per layer: (3-layer count - 1-layer
count) / 2. Prints, per architecture, the aten operators and module calls per layer, their ratio to
qwen3-1.7b's, and lorasim's host operators per layer and their ratio (`lorasim simulate --format
json` prints host time, not the count: `per_layer_ops` takes the host time a layer adds).

    python3 bench/hf/count_ops.py [--lorasim build/cli/lorasim] [--grad-ckpt]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ARCHS = [("qwen3-1.7b", "sdpa", None), ("qwen2.5-1.5b", "sdpa", None), ("llama-3.2-3b", "sdpa", None),
         ("phi-3-mini", "sdpa", ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]),
         ("gemma-3-1b", "sdpa", None), ("gemma-2-2b", "eager", None)]
LLAMA = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def shrunk(cfg, layers):
    d = dict(cfg)
    heads, kv = d["num_attention_heads"], d.get("num_key_value_heads", d["num_attention_heads"])
    d.update(hidden_size=64, intermediate_size=128, num_hidden_layers=layers, num_attention_heads=4,
             num_key_value_heads=max(1, 4 * kv // heads), vocab_size=512)
    if "head_dim" in d:
        d["head_dim"] = 16
    if "query_pre_attn_scalar" in d:
        d["query_pre_attn_scalar"] = 16
    if "sliding_window_pattern" in d:  # keep one local and one global layer among three
        d["sliding_window_pattern"] = 2
    d["pad_token_id"] = 0  # inside the shrunk vocabulary (Phi-3's config defaults to 32000)
    return d


def count(torch, transformers, peft, name, attn, targets, layers, grad_ckpt):
    from torch.utils._python_dispatch import TorchDispatchMode

    with open(os.path.join(HERE, "configs", name + ".json")) as f:
        cfg = json.load(f)
    model_type = cfg.pop("model_type")
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(
        transformers.AutoConfig.for_model(model_type, **shrunk(cfg, layers)), dtype=torch.bfloat16,
        attn_implementation=attn)
    model = peft.get_peft_model(model, peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0,
                                                       target_modules=targets or LLAMA, task_type="CAUSAL_LM"))
    if grad_ckpt:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    model.train()
    ids = torch.randint(0, 512, (2, 32))

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))

    calls = [0]
    hooks = [m.register_forward_pre_hook(lambda *a: calls.__setitem__(0, calls[0] + 1)) for m in model.modules()]
    with Count(), torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(input_ids=ids, labels=ids)
        out.loss.backward()
    for h in hooks:
        h.remove()
    return Count.n, calls[0]


def per_layer_ops(lorasim, name, attn, grad_ckpt):
    """lorasim's host time per layer: a micro-batch's host time at 3 layers less at 2 (its per-micro-batch
    constant cancels), that is its host operators per layer times the profile's host_per_op_s."""
    import subprocess
    import tempfile
    with open(os.path.join(HERE, "configs", name + ".json")) as f:
        cfg = json.load(f)
    times = []
    for layers in (2, 3):
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(dict(cfg, num_hidden_layers=layers), f)
        cmd = [lorasim, "simulate", "--gpu", "h200", "--model-config", f.name, "--seq-len", "32", "--effective-batch",
               "1", "--format", "json", "--lora-dropout", "0", "--lora-targets", "all", "--fused-lm-head", "false",
               "--attn-impl", attn]
        if grad_ckpt:
            cmd.append("--grad-ckpt")
        j = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        os.unlink(f.name)
        times.append(j["splits"][0]["host_time_s"])
    return times[1] - times[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lorasim", default="build/cli/lorasim")
    ap.add_argument("--grad-ckpt", action="store_true", help="with gradient checkpointing (the recompute counted)")
    args = ap.parse_args()
    import torch
    import transformers
    import peft
    transformers.logging.set_verbosity_error()
    rows = []
    for name, attn, targets in ARCHS:
        a1, m1 = count(torch, transformers, peft, name, attn, targets, 1, args.grad_ckpt)
        a3, m3 = count(torch, transformers, peft, name, attn, targets, 3, args.grad_ckpt)
        host = per_layer_ops(args.lorasim, name, attn, args.grad_ckpt)
        rows.append((name, attn, (a3 - a1) / 2, (m3 - m1) / 2, host))
    q = rows[0]
    print("| model | attention | aten ops / layer | ratio to qwen3 | module calls / layer | ratio | lorasim host s / layer | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for name, attn, ops, mods, host in rows:
        print(f"| {name} | {attn} | {ops:.0f} | {ops / q[2]:.3f} | {mods:.0f} | {mods / q[3]:.3f} | {host * 1e6:.0f} us | "
              f"{host / q[4]:.3f} |")


if __name__ == "__main__":
    main()
