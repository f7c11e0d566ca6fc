"""What an HF Transformers + PEFT LoRA model saves for backward, measured, beside what lorasim
counts for it (docs/hf-stack-memory.md derives lorasim's count; model/hf_analytics.cpp is the one
copy of it).

Builds a causal LM from a config (random weights, layers may be truncated), wraps it in PEFT LoRA
and counts what one forward saves (lorasim_hf.autograd_saved). A second, clean forward + backward
measures the allocator (CUDA only): allocated memory after the forward with the model output held
and after it is dropped, and the peaks of forward and backward.

    python -m lorasim_hf.saved_tensors --config bench/hf/configs/qwen3-1.7b.json --layers 2 \
        --seq-len 512 --micro-batch 1 --precision bf16 --autocast --device cuda --out qwen3.json \
        --lorasim-profile hwprofiles/h200.toml

With --lorasim-profile the forward is counted again at twice the micro-batch, and the growth is
compared with the growth of lorasim's peak allocated between the same two micro-batches, under
that profile with the hf-peft stack's memory terms set so that peak allocated is the static
memory plus lorasim's saved-tensor count and nothing else (`lorasim` in the output).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

from lorasim_hf._deps import MissingDependency, require
from lorasim_hf.autograd_saved import SavedTensorCounter
from lorasim_hf.recommend import LorasimError, find_lorasim

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
ALL_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


# ----------------------------------------------------------------------------------------------
# Model construction
# ----------------------------------------------------------------------------------------------

def load_config_dict(args) -> dict:
    if args.config:
        with open(args.config) as f:
            cfg = json.load(f)
    else:
        cfg = {"model_type": args.model_type, "tie_word_embeddings": bool(args.tie_word_embeddings)}
    if args.vocab_size is not None:
        for k in ("bos_token_id", "eos_token_id", "pad_token_id"):
            cfg.pop(k, None)
    # Shape flags override the config's fields (e.g. a smaller vocabulary for a CPU check).
    for k in ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
              "head_dim", "vocab_size"):
        v = getattr(args, k)
        if v is not None:
            cfg[k] = v
    cfg = {k: v for k, v in cfg.items() if not k.startswith("_")}
    if args.layers:
        cfg["num_hidden_layers"] = args.layers
    return cfg


def build_model(cfg: dict, *, precision: str, attn_impl: str, device: str, rank: int, alpha: int,
                dropout: float, targets, grad_ckpt: bool, seed: int = 0):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed)
    cfg = dict(cfg)
    model_type = cfg.pop("model_type")
    config = AutoConfig.for_model(model_type, **cfg)
    dtype = getattr(torch, DTYPES[precision])
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn_impl)
    model.to(device)
    if grad_ckpt:
        # As Trainer(gradient_checkpointing=True) does: non-reentrant (HF's default), and with it
        # enable_input_require_grads (the embedding output requires grad).
        model.gradient_checkpointing_enable()
    lcfg = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(targets),
                      task_type="CAUSAL_LM")
    model = get_peft_model(model, lcfg)  # autocast_adapter_dtype=True: adapters in fp32
    model.train()
    return model, config


# ----------------------------------------------------------------------------------------------
# Runs
# ----------------------------------------------------------------------------------------------

def _autocast_ctx(args):
    import torch
    if not args.autocast:
        return contextlib.nullcontext()
    dt = torch.float16 if args.precision == "fp16" else torch.bfloat16
    return torch.autocast(args.device, dtype=dt)


def _inputs(args, config):
    import torch
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (args.micro_batch, args.seq_len), generator=g)
    return ids.to(args.device)


def _sdpa_ctx(args):
    if args.sdpa_backend is None or args.attn_impl != "sdpa":
        return contextlib.nullcontext()
    from torch.nn.attention import sdpa_kernel, SDPBackend
    b = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
         "math": SDPBackend.MATH, "cudnn": SDPBackend.CUDNN_ATTENTION}[args.sdpa_backend]
    return sdpa_kernel(b)


def count_saved(args, cfg):
    """Forward under saved_tensors_hooks (checkpointing off, so every block is seen)."""
    model, config = build_model(cfg, precision=args.precision, attn_impl=args.attn_impl, device=args.device,
                                rank=args.rank, alpha=args.alpha, dropout=args.lora_dropout,
                                targets=args.targets, grad_ckpt=False)
    ids = _inputs(args, config)
    counter = SavedTensorCounter(model)
    with counter.hooks(), _autocast_ctx(args), _sdpa_ctx(args):
        out = model(input_ids=ids, labels=ids, use_cache=_use_cache(args))
    loss = out.loss
    del out
    counter.remove()
    counter.walk_graph(loss)
    tokens = args.micro_batch * args.seq_len
    summary, listing = counter.summary(tokens)
    del loss, model  # (no backward needed: the count is of what the forward saved)
    _free(args)
    return config, summary, listing


def count_ckpt_forward(args, cfg):
    """With checkpointing: what the forward keeps. torch.utils.checkpoint's own hooks take over
    inside the blocks (nothing of theirs is seen); each block's inputs are saved just before, in
    XModel.forward (component block_inputs)."""
    model, config = build_model(cfg, precision=args.precision, attn_impl=args.attn_impl, device=args.device,
                                rank=args.rank, alpha=args.alpha, dropout=args.lora_dropout,
                                targets=args.targets, grad_ckpt=True)
    ids = _inputs(args, config)
    counter = SavedTensorCounter(model)
    with counter.hooks(), _autocast_ctx(args), _sdpa_ctx(args):
        out = model(input_ids=ids, labels=ids, use_cache=False)
    loss = out.loss
    del out
    counter.remove()
    tokens = args.micro_batch * args.seq_len
    summary, listing = counter.summary(tokens)
    summary["items"] = [x for x in listing if x["layer"] != "other"]
    del loss, model
    _free(args)
    return summary


def _free(args):
    import gc
    import torch
    gc.collect()
    if args.device == "cuda":
        torch.cuda.empty_cache()


def _use_cache(args):
    return {"config": None, "true": True, "false": False}[args.use_cache]


def measure_memory(args, cfg):
    """Clean forward + backward on CUDA: allocated memory at each point (bytes above the model)."""
    import torch
    if args.device != "cuda":
        return None
    model, config = build_model(cfg, precision=args.precision, attn_impl=args.attn_impl, device=args.device,
                                rank=args.rank, alpha=args.alpha, dropout=args.lora_dropout,
                                targets=args.targets, grad_ckpt=args.grad_ckpt)
    ids = _inputs(args, config)
    res = []
    for it in range(args.repeats):
        model.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        with _autocast_ctx(args), _sdpa_ctx(args):
            out = model(input_ids=ids, labels=ids, use_cache=(False if args.grad_ckpt else _use_cache(args)))
        torch.cuda.synchronize()
        fwd_peak = torch.cuda.max_memory_allocated()
        after_fwd_held = torch.cuda.memory_allocated()
        loss = out.loss
        del out
        after_fwd = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        with _sdpa_ctx(args):
            loss.backward()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        bwd_peak = torch.cuda.max_memory_allocated()
        after_bwd = torch.cuda.memory_allocated()
        del loss
        res.append({
            "base_allocated": base,
            "forward_peak": fwd_peak - base,
            "after_forward_output_held": after_fwd_held - base,
            "after_forward": after_fwd - base,
            "backward_peak": bwd_peak - base,
            "after_backward": after_bwd - base,
            "reserved": torch.cuda.memory_reserved(),
            "seconds": t1 - t0,
        })
    del model
    torch.cuda.empty_cache()
    return res


def activation_bytes(summary):
    """Bytes the forward saved that grow with the micro-batch's tokens: every counted storage but
    the parameters and autocast's weight copies (lorasim has those in its static memory)."""
    return sum(v["total_bytes"] for layer, v in summary.items() if layer not in ("other", "items"))


# lorasim's hf-peft memory terms set so that its peak allocated is its static memory plus its
# saved-tensor count: no fitted scale, no constant, no loss buffer.
UNIT_TERMS = {"saved_scale": "1.0", "logits_scale": "0.0", "workspace_bytes": "0.0"}


def unit_saved_profile(base_text):
    """A profile's TOML text with [stack.hf-peft]'s (and [memory]'s) terms set to UNIT_TERMS."""
    out, section, set_in_stack = [], None, set()
    for line in base_text.splitlines():
        header = re.match(r"\s*\[([^\[\]]+)\]\s*(#.*)?$", line)
        if header:
            section = header.group(1).strip()
        key = line.split("=", 1)[0].strip() if "=" in line and not header else None
        if section in ("memory", "stack.hf-peft") and key in UNIT_TERMS:
            line = f"{key} = {UNIT_TERMS[key]}"
            if section == "stack.hf-peft":
                set_in_stack.add(key)
        if section == "memory" and key == "attention_score_scale":
            line = "attention_score_scale = 0.0"
        out.append(line)
    missing = sorted(set(UNIT_TERMS) - set_in_stack)
    if missing:
        raise ValueError(f"the base profile has no {', '.join(missing)} in [stack.hf-peft]")
    return "\n".join(out) + "\n"


def lorasim_peaks(config_path, micro_batches, *, seq_len, precision, autocast, attn_impl, rank, alpha, targets,
                  dropout, grad_ckpt, profile_path, lorasim=None):
    """{micro_batch: peak_allocated_bytes} of `lorasim simulate --format json` for these splits."""
    effective = math.lcm(*micro_batches)
    short = [t.replace("_proj", "") for t in targets]
    cmd = [find_lorasim(lorasim), "simulate", "--format", "json", "--profile", profile_path, "--stack", "hf-peft",
           "--model-config", config_path, "--effective-batch", str(effective), "--seq-len", str(seq_len),
           "--lora-rank", str(rank), "--lora-alpha", str(alpha), "--lora-targets", ",".join(short),
           "--precision", precision, "--attn-impl", attn_impl, "--lora-dropout", str(dropout),
           "--autocast", "true" if autocast else "false"] + (["--grad-ckpt"] if grad_ckpt else [])
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise LorasimError(f"lorasim simulate failed: {proc.stderr.strip()}")
    peaks = {s["micro_batch"]: s["peak_allocated_bytes"] for s in json.loads(proc.stdout)["splits"]}
    return {b: peaks[b] for b in micro_batches}


def compare_with_lorasim(args, cfg, base_profile, lorasim=None):
    """The forward's saved bytes at micro-batches b and 2b, measured, and lorasim's peak allocated
    at both under the unit profile: their growths are both what b more sequences save."""
    from lorasim_hf.model_source import write_config
    b = args.micro_batch
    measured = {}
    for mb in (b, 2 * b):
        summary = count_saved(argparse.Namespace(**dict(vars(args), micro_batch=mb)), cfg)[1]
        measured[mb] = activation_bytes(summary)
    with open(base_profile) as f:
        text = unit_saved_profile(f.read())
    with tempfile.TemporaryDirectory() as tmp:
        from transformers import AutoConfig
        kw = dict(cfg)
        config = AutoConfig.for_model(kw.pop("model_type"), **kw)
        config_path = write_config(config, tmp)
        profile_path = os.path.join(tmp, "unit-saved.toml")
        with open(profile_path, "w") as f:
            f.write(text)
        peaks = lorasim_peaks(config_path, (b, 2 * b), seq_len=args.seq_len, precision=args.precision,
                              autocast=args.autocast, attn_impl=args.attn_impl, rank=args.rank, alpha=args.alpha,
                              targets=args.targets, dropout=args.lora_dropout, grad_ckpt=False,
                              profile_path=profile_path, lorasim=lorasim)
    return {"micro_batches": [b, 2 * b], "measured_bytes": measured, "lorasim_peak_allocated_bytes": peaks,
            "measured_growth_bytes": measured[2 * b] - measured[b], "lorasim_growth_bytes": peaks[2 * b] - peaks[b]}


def parse_args(argv=None):
    p = argparse.ArgumentParser(prog="python -m lorasim_hf.saved_tensors", description=__doc__.split("\n")[0])
    p.add_argument("--config", help="HF config.json (needs model_type)")
    p.add_argument("--model-type", default="llama")
    for k in ("hidden-size", "intermediate-size", "num-attention-heads", "num-key-value-heads", "head-dim",
              "vocab-size"):
        p.add_argument("--" + k, type=int)
    p.add_argument("--tie-word-embeddings", action="store_true")
    p.add_argument("--layers", type=int, default=2, help="truncate to this many layers (0: keep)")
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--alpha", type=int, default=32)
    p.add_argument("--targets", default=",".join(ALL_TARGETS))
    p.add_argument("--lora-dropout", type=float, default=0.0)
    p.add_argument("--grad-ckpt", action="store_true")
    p.add_argument("--autocast", action="store_true")
    p.add_argument("--precision", choices=list(DTYPES), default="bf16")
    p.add_argument("--attn-impl", choices=["sdpa", "eager"], default="sdpa")
    p.add_argument("--sdpa-backend", choices=["flash", "efficient", "math", "cudnn"], default=None)
    p.add_argument("--use-cache", choices=["config", "true", "false"], default="config",
                   help="model(..., use_cache=); 'config' passes nothing, as a plain loop does")
    p.add_argument("--device", default="cpu")
    p.add_argument("--repeats", type=int, default=2, help="CUDA memory passes (the first warms up)")
    p.add_argument("--no-items", action="store_true", help="leave the per-tensor list out")
    p.add_argument("--lorasim-profile", help="compare with lorasim's count under this profile (see above)")
    p.add_argument("--lorasim", help="the lorasim binary (default: $LORASIM, else PATH)")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    args.targets = [t for t in args.targets.split(",") if t]
    return args


def run(args):
    """The measurement of one case, as the JSON object the command writes."""
    torch, transformers, peft = require("torch", "transformers", "peft")
    cfg = load_config_dict(args)
    config, summary, listing = count_saved(args, cfg)
    result = {
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__, "peft": peft.__version__},
        "device_name": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "micro_batch": args.micro_batch, "seq_len": args.seq_len, "rank": args.rank, "targets": args.targets,
        "lora_dropout": args.lora_dropout, "autocast": args.autocast, "precision": args.precision,
        "attn_impl": args.attn_impl, "sdpa_backend": args.sdpa_backend, "grad_ckpt": args.grad_ckpt,
        "tokens": args.micro_batch * args.seq_len, "saved": summary,
        # What the allocator should show after the forward (model output dropped): every saved
        # activation plus autocast's saved weight copies (parameters themselves excluded).
        "hook_saved_total": activation_bytes(summary) + summary.get("other", {}).get("components", {}).get(
            "weight_cast", 0),
    }
    if not args.no_items:
        result["items"] = listing
    if args.grad_ckpt:
        result["ckpt_forward"] = count_ckpt_forward(args, cfg)
    result["memory"] = measure_memory(args, cfg)
    if args.lorasim_profile:
        result["lorasim"] = compare_with_lorasim(args, cfg, args.lorasim_profile, args.lorasim)
    return result


def main(argv=None):
    args = parse_args(argv)
    try:
        result = run(args)
    except MissingDependency as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except LorasimError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    result["argv"] = sys.argv[1:] if argv is None else argv
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, default=str)
    print(f"b={args.micro_batch} s={args.seq_len} {args.precision} autocast={args.autocast} {args.attn_impl} "
          f"dropout={args.lora_dropout} ckpt={args.grad_ckpt}")
    for layer in sorted(result["saved"], key=str):
        v = result["saved"][layer]
        print(f"  {layer:>7}: {v['total_bytes']:>14,d} B  {v['per_token_bytes']:>10.1f} B/token")
    if "lorasim" in result:
        c = result["lorasim"]
        print(f"  growth {c['micro_batches'][0]} -> {c['micro_batches'][1]}: measured {c['measured_growth_bytes']:,} B, "
              f"lorasim {c['lorasim_growth_bytes']:,} B")
    if result["memory"]:
        print("  memory", json.dumps(result["memory"][-1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
