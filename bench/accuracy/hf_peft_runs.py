#!/usr/bin/env python3
"""Times LoRA fine-tuning with Hugging Face Trainer + PEFT for every micro-batch x accumulation
split of the given workloads and writes one row per run in lorasim's measurement format
(docs/measurements.md), for `lorasim fit --measurements` and `lorasim validate --measurements`.

Runs offline: models are built from their published config fields with random weights (bf16, on
the GPU), data is random tokens (labels = input_ids, no padding). LoRA r=16, alpha=32 (flags),
on q,k,v,o,gate,up,down, dropout 0. Trainer defaults otherwise (optimizer, grad clipping, bf16
autocast). Step time: median over the steps after the warm-up ones, from one `on_step_end` to
the next (synchronized), so it includes data loading and the optimizer. Peak memory: over the
measured steps. Each model is built once per (model, gradient checkpointing) and reused; each
split gets a fresh Trainer (and optimizer). An out-of-memory run is a row with oom=true; larger
micro-batches of that sequence length are then skipped. Rows are appended as they finish.

Run on an H200 on 2026-11-30 with torch 2.11, transformers 5.17 and peft 0.21 (results:
bench/results/h200/hf-peft-run1/).

Example: python3 bench/accuracy/hf_peft_runs.py --models qwen3-1.7b --seq-lens 512 \
             --effective-batches 16 --out hf-runs.csv
"""
import argparse, csv, gc, os, statistics, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hf"))
from random_tokens import random_tokens  # noqa: E402  (bench/hf/random_tokens.py)

# The allocator reads this when torch initialises CUDA; set it before importing torch.
ALLOC_CONF_SOURCE = "environment" if "PYTORCH_CUDA_ALLOC_CONF" in os.environ else "set by hf_peft_runs.py"
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")

# lorasim preset name -> transformers config class and the published config.json fields.
_QWEN3 = dict(vocab_size=151936, head_dim=128, num_key_value_heads=8, tie_word_embeddings=True,
              rope_theta=1e6, rms_norm_eps=1e-6, max_position_embeddings=40960)
MODELS = {
    "qwen3-0.6b": ("Qwen3Config", dict(_QWEN3, hidden_size=1024, intermediate_size=3072,
                                       num_hidden_layers=28, num_attention_heads=16)),
    "qwen3-1.7b": ("Qwen3Config", dict(_QWEN3, hidden_size=2048, intermediate_size=6144,
                                       num_hidden_layers=28, num_attention_heads=16)),
    "qwen3-4b": ("Qwen3Config", dict(_QWEN3, hidden_size=2560, intermediate_size=9728,
                                     num_hidden_layers=36, num_attention_heads=32)),
    # Llama-3.2-3B's "llama3" RoPE scaling is left out: it changes the rotary frequencies
    # (computed once), not the cost of a step.
    "llama-3.2-3b": ("LlamaConfig", dict(vocab_size=128256, hidden_size=3072, intermediate_size=8192,
                                         num_hidden_layers=28, num_attention_heads=24,
                                         num_key_value_heads=8, head_dim=128, tie_word_embeddings=True,
                                         rope_theta=5e5, rms_norm_eps=1e-5,
                                         max_position_embeddings=131072)),
}
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
MAX_ACCUM = 32  # as in grid.py: longer accumulation costs minutes of host time per step
# Exactly lorasim's column order (calibrate/measurement_io.cpp); unknown columns are refused.
COLUMNS = ["model", "num_layers", "seq_len", "micro_batch", "accumulation", "grad_ckpt", "lora_rank",
           "lora_alpha", "lora_targets", "precision", "oom", "step_time_s", "micro_batch_time_s",
           "host_time_s", "device_time_s", "optimizer_time_s", "peak_allocated_bytes",
           "peak_reserved_bytes"]


def int_list(text):
    return [int(x) for x in text.split(",") if x]


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default="qwen3-1.7b", help=f"comma list of {', '.join(MODELS)}")
    ap.add_argument("--seq-lens", type=int_list, default=[512], help="comma list, e.g. 256,1024")
    ap.add_argument("--effective-batches", type=int_list, default=[16], help="comma list of B")
    ap.add_argument("--splits", default="",
                    help="comma list of micro_batch x accumulation, e.g. 1x16,4x4 (overrides --effective-batches); "
                         "default: every split of each B with A <= 32")
    ap.add_argument("--grad-ckpt", choices=["off", "on", "both"], default="off")
    ap.add_argument("--steps", type=int, default=6, help="optimizer steps per run, warm-up included")
    ap.add_argument("--warmup", type=int, default=2, help="first steps left out of time and memory")
    ap.add_argument("--lora-rank", type=int, default=16)
    ap.add_argument("--lora-alpha", type=float, default=32)
    ap.add_argument("--budget-s", type=float, default=float("inf"), help="start no run after this many s")
    ap.add_argument("--out", required=True, help="measurement CSV to append to (created with a header)")
    ap.add_argument("--dry-run", action="store_true", help="print the planned runs and exit")
    args = ap.parse_args()
    args.models = [m for m in args.models.split(",") if m]
    for m in args.models:
        if m not in MODELS:
            ap.error(f"unknown model '{m}' (known: {', '.join(MODELS)})")
    if not 1 <= args.warmup < args.steps:
        ap.error("need 1 <= --warmup < --steps")
    if not args.out.endswith(".csv"):
        ap.error("--out must end in .csv (lorasim reads the format from the name)")
    return args


def splits_of(args):
    """(micro_batch, accumulation) pairs, smallest micro-batch first."""
    if args.splits:
        pairs = [tuple(int(v) for v in s.lower().split("x")) for s in args.splits.split(",") if s]
    else:
        pairs = [(b, B // b) for B in args.effective_batches for b in range(1, B + 1)
                 if B % b == 0 and B // b <= MAX_ACCUM]
    return sorted(set(pairs))


def plan(args):
    ckpts = {"off": [False], "on": [True], "both": [False, True]}[args.grad_ckpt]
    return [(m, c, s, b, a) for m in args.models for c in ckpts for s in args.seq_lens
            for b, a in splits_of(args)]


class CsvOut:
    """Appends rows (header first if the file is new) and flushes each, so a crash loses nothing."""

    def __init__(self, path):
        new = not os.path.exists(path) or os.path.getsize(path) == 0
        self.f = open(path, "a", newline="")
        self.w = csv.DictWriter(self.f, fieldnames=COLUMNS, restval="")
        if new:
            self.w.writeheader()
        self.f.flush()

    def comment(self, text):
        self.f.write(f"# {text}\n")  # lorasim skips lines starting with '#'
        self.f.flush()

    def row(self, **fields):
        self.w.writerow(fields)
        self.f.flush()
        os.fsync(self.f.fileno())


def measure(args, runs, out):
    import torch
    import transformers
    import peft
    from peft import LoraConfig, get_peft_model
    from transformers import (AutoModelForCausalLM, Trainer, TrainerCallback, TrainingArguments,
                              default_data_collator)

    class StepTimer(TrainerCallback):
        # Trainer fetches an accumulation window's batches *before* on_step_begin, so time from one
        # on_step_end to the next; that covers data, forward/backward, clipping and optimizer.
        def __init__(self, warmup):
            self.warmup, self.done, self.last = warmup, 0, None
            self.times, self.peak_alloc, self.peak_reserved = [], None, None

        def on_train_begin(self, args, state, control, **kwargs):
            torch.cuda.synchronize()
            self.last = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            torch.cuda.synchronize()
            now = time.perf_counter()
            self.done += 1
            if self.done == self.warmup:
                torch.cuda.reset_peak_memory_stats()  # peaks over the measured steps only
            elif self.done > self.warmup:
                self.times.append(now - self.last)
                self.peak_alloc = torch.cuda.max_memory_allocated()
                self.peak_reserved = torch.cuda.max_memory_reserved()
            self.last = now

    def build(name, ckpt):
        cls_name, fields = MODELS[name]
        fields = dict(fields)
        theta = fields.pop("rope_theta")
        cls = getattr(transformers, cls_name)
        try:  # transformers 5 keeps RoPE settings in rope_parameters
            cfg = cls(**fields, rope_parameters={"rope_type": "default", "rope_theta": theta}, use_cache=False)
        except TypeError:
            cfg = cls(**fields, rope_theta=theta, use_cache=False)
        with torch.device("cuda"):  # random init on the GPU: seconds instead of a minute on the CPU
            model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation="sdpa")
        if next(model.parameters()).dtype != torch.bfloat16:
            model.to(torch.bfloat16)
        lora = LoraConfig(r=args.lora_rank, lora_alpha=args.lora_alpha, target_modules=LORA_TARGETS,
                          lora_dropout=0.0, bias="none", task_type="CAUSAL_LM")
        model = get_peft_model(model, lora)
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        total = sum(p.numel() for p in model.parameters())
        print(f"built {name} (grad_ckpt={ckpt}): {total / 1e9:.2f} B params, {trainable / 1e6:.2f} M trainable",
              flush=True)
        return model, cfg.vocab_size

    def run_one(model, vocab, seq, b, a, ckpt, workdir):
        """Trains one split; returns (oom, StepTimer)."""
        timer = StepTimer(args.warmup)
        targs = TrainingArguments(
            output_dir=workdir, per_device_train_batch_size=b, gradient_accumulation_steps=a,
            max_steps=args.steps, learning_rate=1e-4, bf16=True, gradient_checkpointing=ckpt,
            gradient_checkpointing_kwargs={"use_reentrant": False} if ckpt else None,
            logging_strategy="no", eval_strategy="no", save_strategy="no", report_to="none",
            dataloader_num_workers=0, remove_unused_columns=False, disable_tqdm=True, seed=0)
        # Accelerate wraps model.forward (bf16 autocast) on every prepare(); undo it afterwards so
        # the wrappers do not nest across splits of the reused model.
        saved = {k: model.__dict__[k] for k in ("forward", "_original_forward") if k in model.__dict__}
        trainer, oom = None, False
        try:
            trainer = Trainer(model=model, args=targs, train_dataset=random_tokens(torch, b * a * args.steps, seq, vocab),
                              data_collator=default_data_collator, callbacks=[timer])
            trainer.train()
        except torch.cuda.OutOfMemoryError:
            oom = True
        finally:
            for k in ("forward", "_original_forward"):
                model.__dict__.pop(k, None)
            model.__dict__.update(saved)
            if trainer is not None:
                trainer.accelerator.free_memory()
            del trainer
        # Outside the except block, so the traceback (and the tensors its frames hold) is gone.
        model.zero_grad(set_to_none=True)
        gc.collect()
        torch.cuda.empty_cache()
        if not oom and len(timer.times) != args.steps - args.warmup:
            raise RuntimeError(f"expected {args.steps - args.warmup} measured steps, got {len(timer.times)}")
        return oom, timer

    gpu = torch.cuda.get_device_name(0)
    info = (f"hf_peft_runs.py {time.strftime('%Y-%m-%d %H:%M')}: {gpu}, torch {torch.__version__}, "
            f"transformers {transformers.__version__}, peft {peft.__version__}, "
            f"PYTORCH_CUDA_ALLOC_CONF={os.environ['PYTORCH_CUDA_ALLOC_CONF']} ({ALLOC_CONF_SOURCE}), "
            f"steps {args.steps} (warm-up {args.warmup}), sdpa attention, Trainer default optimizer")
    print(info, flush=True)
    out.comment(info)
    start = time.monotonic()
    model, built_for, oom_at = None, None, {}
    with tempfile.TemporaryDirectory() as workdir:
        for i, (name, ckpt, seq, b, a) in enumerate(runs):
            elapsed = time.monotonic() - start
            if elapsed > args.budget_s:
                print(f"budget of {args.budget_s:.0f} s reached: {len(runs) - i} runs not started", flush=True)
                break
            tag = f"[{i + 1}/{len(runs)}] {name} seq={seq} grad_ckpt={'on' if ckpt else 'off'} {b}x{a}"
            if (name, ckpt) != built_for:
                model = None
                gc.collect()
                torch.cuda.empty_cache()
                model, vocab = build(name, ckpt)
                built_for, oom_at = (name, ckpt), {}
            if b >= oom_at.get(seq, float("inf")):
                print(f"{tag}: skipped (micro-batch {oom_at[seq]} already ran out of memory)", flush=True)
                continue
            oom, t = run_one(model, vocab, seq, b, a, ckpt, workdir)
            row = dict(model=name, seq_len=seq, micro_batch=b, accumulation=a,
                       grad_ckpt="true" if ckpt else "false", lora_rank=args.lora_rank,
                       lora_alpha=f"{args.lora_alpha:g}", lora_targets="q;k;v;o;gate;up;down",
                       precision="bf16", oom="true" if oom else "false")
            if oom:
                oom_at[seq] = b
                print(f"{tag}: out of memory  ({elapsed:.0f} s)", flush=True)
            else:
                step = statistics.median(t.times)
                row.update(step_time_s=f"{step:.6f}", peak_allocated_bytes=t.peak_alloc,
                           peak_reserved_bytes=t.peak_reserved)
                print(f"{tag}: {step:.4f} s/step (min {min(t.times):.4f}, max {max(t.times):.4f}), "
                      f"peak {t.peak_alloc / 2**30:.2f} GiB allocated, {t.peak_reserved / 2**30:.2f} GiB "
                      f"reserved  ({elapsed:.0f} s)", flush=True)
            out.row(**row)
    print(f"done in {time.monotonic() - start:.0f} s", flush=True)


def main():
    args = parse_args()
    runs = plan(args)
    if args.dry_run:
        for r in runs:
            print("{} grad_ckpt={} seq={} {}x{}".format(*r))
        print(f"{len(runs)} runs")
        return
    measure(args, runs, CsvOut(args.out))


if __name__ == "__main__":
    main()
