#!/usr/bin/env python3
"""Held-out HF runs timed the way a user times them: a real transformers `Trainer` (and one TRL
`SFTTrainer`) with `LorasimCallback` writing the measurement rows (bench/hf/README.md).

Offline: models are built from config.json files with random weights (bf16, on the GPU), data
is random tokens; SFTTrainer gets pre-tokenized rows and a tokenizer built in memory, so nothing
is downloaded. Each split gets a freshly built model and a fresh Trainer: a model reused after a
Trainer has run holds on to memory of that run, so later splits' peaks would be too high.

    python3 bench/hf/trainer_runs.py --budget-s 150 --out rows-trainer.jsonl [--sft]
"""
import argparse, gc, json, os, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from random_tokens import random_tokens  # noqa: E402  (bench/hf/, this script's folder)
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")

# (model, config, seq, splits, ckpt, dropout, trainer class)
CELLS = [
    ("qwen3-1.7b", "configs/qwen3-1.7b.json", 512, [(1, 8), (2, 4), (8, 1)], False, 0.0, "Trainer"),
    ("llama-3.2-3b", "configs/llama-3.2-3b.json", 2048, [(1, 4), (4, 1)], True, 0.05, "Trainer"),
    ("bench/hf/configs/qwen2.5-1.5b.json", "configs/qwen2.5-1.5b.json", 1024, [(2, 4), (8, 1)], False, 0.0,
     "Trainer"),
    ("mistral-7b", "configs/mistral-7b.json", 1024, [(4, 1)], False, 0.0, "Trainer"),
    ("qwen3-1.7b", "configs/qwen3-1.7b.json", 1024, [(4, 2)], False, 0.05, "SFTTrainer"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget-s", type=float, default=150)
    ap.add_argument("--steps", type=int, default=5, help="optimizer steps per split, warm-up included")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--sft", action="store_true", help="also the SFTTrainer cell (needs trl)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--smoke", action="store_true", help="a tiny model on the CPU: checks the script, measures nothing")
    args = ap.parse_args()
    device = "cpu" if args.smoke else "cuda"

    import torch, transformers, peft
    from lorasim_hf.callback import LorasimCallback

    def build(cfg_path, ckpt, dropout):
        with open(os.path.join(HERE, cfg_path)) as f:
            d = json.load(f)
        cfg = transformers.AutoConfig.for_model(d.pop("model_type"), **d)
        with torch.device(device):
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.float32 if args.smoke else torch.bfloat16, attn_implementation="sdpa")
        lora = peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=dropout, task_type="CAUSAL_LM",
                               target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
        return peft.get_peft_model(model, lora), cfg.vocab_size

    def tokenizer(vocab):
        from tokenizers import Tokenizer, models
        tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
        return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="t0", eos_token="t1")

    start = time.monotonic()
    cells = [c for c in CELLS if args.sft or c[6] == "Trainer"]
    if args.smoke:
        cells = [("tiny", "configs/smoke.json", 32, [(1, 2), (2, 1)], True, 0.05, "Trainer"),
                 ("tiny", "configs/smoke.json", 32, [(2, 1)], False, 0.0, "SFTTrainer")]
    with open(args.out, "a") as _, tempfile.TemporaryDirectory() as workdir:
        for name, cfg_path, seq, splits, ckpt, dropout, kind in cells:
            for b, a in splits:
                model, vocab = build(cfg_path, ckpt, dropout)
                if time.monotonic() - start > args.budget_s:
                    print(f"trainer_runs: budget reached, skipping {name} {b}x{a}", flush=True)
                    continue
                cb = LorasimCallback(args.out, warmup_steps=args.warmup,
                                     model_name=None if name.endswith(".json") else name)
                common = dict(output_dir=workdir, per_device_train_batch_size=b, gradient_accumulation_steps=a,
                              max_steps=args.steps, learning_rate=1e-4, bf16=not args.smoke, use_cpu=args.smoke, gradient_checkpointing=ckpt,
                              gradient_checkpointing_kwargs={"use_reentrant": False} if ckpt else None,
                              logging_strategy="no", eval_strategy="no", save_strategy="no", report_to="none",
                              dataloader_num_workers=0, disable_tqdm=True, seed=0)
                saved = {k: model.__dict__[k] for k in ("forward", "_original_forward") if k in model.__dict__}
                trainer = None
                t0 = time.monotonic()
                try:
                    if kind == "SFTTrainer":
                        import datasets, trl
                        ids = torch.randint(0, vocab, (b * a * args.steps, seq)).tolist()
                        ds = datasets.Dataset.from_dict({"input_ids": ids})
                        targs = trl.SFTConfig(**common, max_length=seq, packing=False, dataset_text_field=None)
                        trainer = trl.SFTTrainer(model=model, args=targs, train_dataset=ds,
                                                 processing_class=tokenizer(vocab), callbacks=[cb])
                    else:
                        targs = transformers.TrainingArguments(**common, remove_unused_columns=False)
                        trainer = transformers.Trainer(model=model, args=targs,
                                                       train_dataset=random_tokens(torch, b * a * args.steps, seq, vocab),
                                                       data_collator=transformers.default_data_collator,
                                                       callbacks=[cb])
                    trainer.train()
                    msg = f"{cb.row['step_time_s']:.4f} s/step" if cb.row else "no row"
                except torch.OutOfMemoryError:
                    msg = "out of memory (no row: the callback writes rows of finished runs)"
                finally:
                    for k in ("forward", "_original_forward"):
                        model.__dict__.pop(k, None)
                    model.__dict__.update(saved)
                    if trainer is not None:
                        trainer.accelerator.free_memory()
                    del trainer
                model.zero_grad(set_to_none=True)
                gc.collect()
                if not args.smoke:
                    torch.cuda.empty_cache()
                print(f"trainer_runs [{time.monotonic() - start:.0f} s] {kind} {name} s={seq} {b}x{a}"
                      f"{' ckpt' if ckpt else ''} dropout={dropout}: {msg} ({time.monotonic() - t0:.0f} s)", flush=True)
                del model
            gc.collect()
            if not args.smoke:
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
