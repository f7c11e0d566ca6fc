#!/usr/bin/env python3
"""Issue 17's tuner on the GPU: for each workload, every split of its effective batch measured
untuned (a fresh model and trainer per split: the ground truth), then `lorasim_hf.tune` on a fresh
trainer started at the smallest micro-batch, then three optimizer steps after the tune against
three steps of a fresh trainer given the tuner's split directly (adapter weights compared with
torch.equal, deterministic algorithms on for both). One JSON line per phase.

Workloads (each in its own process: an allocator cap is per process):
  cap15   Trainer, qwen3-1.7b, 512 tokens, B=16, no checkpointing, allocator capped at 15 GiB
  sft     SFTTrainer with its defaults, qwen3-1.7b, longtail lengths (max 1024), B=16
  big     Trainer with checkpointing, mistral-7b, 1024 tokens, B=8

    python3 bench/hf/tune_gpu.py --out-dir $OUT --lorasim PATH [--workloads cap15,sft,big] [--budget-s 540] [--tune-first] [--profile TOML]
    python3 bench/hf/tune_gpu.py --out-dir $OUT --lorasim PATH --control sft=16x1,cap15=4x4
    python3 bench/hf/tune_gpu.py --out-dir $OUT --lorasim PATH --identity-only --attn eager --profile TOML
"""
import argparse, json, os, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
GIB = 2 ** 30
WORKLOADS = {
    "cap15": dict(config="bench/hf/configs/qwen3-1.7b.json", trainer="Trainer", seq_len=512, B=16, ckpt=False,
                  cap_gib=15.0, splits=[(16, 1), (8, 2), (4, 4), (2, 8), (1, 16)]),
    "sft": dict(config="bench/hf/configs/qwen3-1.7b.json", trainer="SFTTrainer", dist="longtail", B=16,
                splits=[(16, 1), (8, 2), (4, 4), (2, 8)]),
    "big": dict(config="bench/hf/configs/mistral-7b.json", trainer="Trainer", seq_len=1024, B=8, ckpt=True,
                splits=[(8, 1), (4, 2), (2, 4)]),
}


def emit(out, row):
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")
    print("tune_gpu", json.dumps({k: v for k, v in row.items() if k not in ("table", "steps")}), flush=True)


def worker(name, out, lorasim, deadline, tune_first=False, control=None, profile=None, attn="sdpa",
           identity_only=False):
    import torch, transformers, peft
    os.environ["LORASIM"] = lorasim
    sys.path.insert(0, os.path.join(REPO, "python"))
    from lorasim_hf import tune
    w = WORKLOADS[name]
    total = torch.cuda.get_device_properties(0).total_memory
    if w.get("cap_gib"):
        torch.cuda.set_per_process_memory_fraction(w["cap_gib"] * GIB / total, 0)
    with open(os.path.join(REPO, w["config"])) as f:
        d = json.load(f)
    model_type = d.pop("model_type")
    vocab = d["vocab_size"]
    g = torch.Generator().manual_seed(1)
    if w.get("dist"):
        import csv
        lengths = [int(r["length"]) for r in csv.DictReader(open(os.path.join(HERE, "lengths", w["dist"] + ".csv")))
                   for _ in range(int(r["count"]))]
        import random
        random.Random(0).shuffle(lengths)
        lengths = lengths[:1024]
    else:
        lengths = [w["seq_len"]] * 1024
    seqs = [torch.randint(2, vocab, (n,), generator=g).tolist() for n in lengths]

    def build(b, a, steps, workdir):
        transformers.set_seed(0)
        cfg = transformers.AutoConfig.for_model(model_type, **d)
        with torch.device("cuda"):
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16, attn_implementation=attn)
        lora = peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM",
                               target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])
        common = dict(output_dir=workdir, per_device_train_batch_size=b, gradient_accumulation_steps=a, seed=0,
                      max_steps=steps, report_to=[], logging_steps=1000, save_strategy="no")
        import datasets
        ds = datasets.Dataset.from_dict({"input_ids": seqs})
        if w["trainer"] == "SFTTrainer":
            import trl
            from tokenizers import Tokenizer, models
            tok = transformers.PreTrainedTokenizerFast(
                tokenizer_object=Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0")),
                pad_token="t0", eos_token="t1")
            args = trl.SFTConfig(**common, max_length=max(lengths))
            return trl.SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok, peft_config=lora)
        model = peft.get_peft_model(model, lora)
        args = transformers.TrainingArguments(**common, bf16=True, gradient_checkpointing=w["ckpt"],
                                              gradient_checkpointing_kwargs={"use_reentrant": False},
                                              remove_unused_columns=False)

        def collate(features):
            ids = [torch.tensor(f["input_ids"]) for f in features]
            width = max(len(x) for x in ids)
            input_ids = torch.zeros((len(ids), width), dtype=torch.long)
            mask = torch.zeros_like(input_ids)
            for r, x in enumerate(ids):
                input_ids[r, :len(x)] = x
                mask[r, :len(x)] = 1
            return {"input_ids": input_ids, "attention_mask": mask, "labels": input_ids.masked_fill(mask == 0, -100)}
        return transformers.Trainer(model=model, args=args, train_dataset=ds, data_collator=collate)

    class Timer(transformers.TrainerCallback):
        def __init__(self):
            self.times, self.t0 = [], None

        def on_step_begin(self, *a, **k):
            torch.cuda.synchronize()
            self.t0 = time.perf_counter()

        def on_step_end(self, *a, **k):
            torch.cuda.synchronize()
            self.times.append(time.perf_counter() - self.t0)

    def free(*objs):
        import gc
        for o in objs:
            del o
        gc.collect()
        torch.cuda.empty_cache()

    measured = {}

    def truth_phase():
        # 1. the ground truth
        for b, a in w["splits"]:
            if time.time() > deadline - 60:
                emit(out, {"workload": name, "phase": "truth", "split": f"{b}x{a}", "skipped": "budget"})
                continue
            tr = None
            with tempfile.TemporaryDirectory() as wd:
                try:
                    tr = build(b, a, 6, wd)
                    t = Timer()
                    tr.add_callback(t)
                    torch.cuda.reset_peak_memory_stats()
                    tr.train()
                    step = sum(t.times[2:]) / len(t.times[2:])
                    measured[(b, a)] = step
                    emit(out, {"workload": name, "phase": "truth", "split": f"{b}x{a}", "oom": False, "step_time_s": step,
                               "peak_reserved_bytes": torch.cuda.max_memory_reserved(), "steps": t.times})
                except torch.OutOfMemoryError:
                    emit(out, {"workload": name, "phase": "truth", "split": f"{b}x{a}", "oom": True})
                free(tr)

    def tune_phase():
        # 2. the tune, from the smallest micro-batch; 3. bit-identity
        b0 = min(b for b, _ in w["splits"])
        with tempfile.TemporaryDirectory() as wd, tempfile.TemporaryDirectory() as cache:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
            torch.use_deterministic_algorithms(True, warn_only=True)
            tr = build(b0, w["B"] // b0, 3, wd)
            t0 = time.time()
            res = tune(tr, **({"profile": profile} if profile else {"gpu": "h200"}), max_trial_steps=10, cache_dir=cache)
            tune_s = time.time() - t0
            fastest = min(measured, key=measured.get) if measured else None
            pick = (res.micro_batch, res.accumulation)
            emit(out, {"workload": name, "phase": "tune", "profile": profile or "h200", "pick": f"{pick[0]}x{pick[1]}", "trial_steps": res.trial_steps,
                       "tune_s": tune_s, "fastest_measured": f"{fastest[0]}x{fastest[1]}" if fastest else None,
                       "gap": measured[pick] / measured[fastest] - 1 if fastest and pick in measured else None,
                       "table": res.table})
            tr.train()
            after = {k: v.detach().float().cpu() for k, v in tr.model.named_parameters() if v.requires_grad}
            del tr
            free()
            tr2 = build(pick[0], pick[1], 3, wd + "-2")
            tr2.train()
            direct = {k: v.detach().float().cpu() for k, v in tr2.model.named_parameters() if v.requires_grad}
            same = after.keys() == direct.keys() and all(torch.equal(after[k], direct[k]) for k in after)
            maxdiff = max((after[k] - direct[k]).abs().max().item() for k in after) if after.keys() == direct.keys() else None
            emit(out, {"workload": name, "phase": "identical", "attn_impl": attn, "bit_identical": same, "max_abs_diff": maxdiff,
                       "tensors": len(after)})
            del tr2
            free()
            torch.use_deterministic_algorithms(False)

    def control_phase(split):
        # Two untuned trainers of one split, three steps each, deterministic algorithms on: what
        # the kernels alone leave different (the tune's comparison has no other control).
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
        torch.use_deterministic_algorithms(True, warn_only=True)
        runs = []
        for k in range(2):
            with tempfile.TemporaryDirectory() as wd:
                tr = build(split[0], split[1], 3, wd)
                tr.train()
                runs.append({n: v.detach().float().cpu() for n, v in tr.model.named_parameters() if v.requires_grad})
                del tr
                free()
        same = all(torch.equal(runs[0][n], runs[1][n]) for n in runs[0])
        diff = max((runs[0][n] - runs[1][n]).abs().max().item() for n in runs[0])
        emit(out, {"workload": name, "phase": "control", "attn_impl": attn, "split": f"{split[0]}x{split[1]}",
                   "bit_identical": same,
                   "max_abs_diff": diff})
        torch.use_deterministic_algorithms(False)

    if control:
        control_phase(tuple(map(int, control.split("x"))))
        return
    if identity_only:
        tune_phase()
        return
    if tune_first:
        tune_phase()
        truth_phase()
        # the gap, now that the truth is known
        rows = [json.loads(l) for l in open(out)]
        pick = next(r['pick'] for r in rows if r['workload'] == name and r['phase'] == 'tune')
        if measured:
            fastest = min(measured, key=measured.get)
            b, a = map(int, pick.split('x'))
            emit(out, {'workload': name, 'phase': 'gap', 'pick': pick, 'fastest_measured': f'{fastest[0]}x{fastest[1]}',
                       'gap': measured[(b, a)] / measured[fastest] - 1 if (b, a) in measured else None})
    else:
        truth_phase()
        tune_phase()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--lorasim", required=True)
    ap.add_argument("--workloads", default="cap15,sft,big")
    ap.add_argument("--budget-s", type=float, default=540)
    ap.add_argument("--tune-first", action="store_true",
                    help="tune in the fresh process (as a user would, before training), then the ground truth")
    ap.add_argument("--control", help="workload=split,...: two untuned runs of each split compared, nothing else "
                    "(e.g. sft=16x1,cap15=4x4)")
    ap.add_argument("--profile", help="a profile TOML the tuner starts from instead of the embedded h200 (e.g. "
                    "bench/hf/profiles/h200-prior.toml: the H200 as a datasheet prior, issue 17)")
    ap.add_argument("--attn", default="sdpa", help="attn_implementation of every model (eager: deterministic "
                    "kernels, so the bit-identity check is not blurred by cuDNN attention's backward)")
    ap.add_argument("--identity-only", action="store_true", help="the tune and its bit-identity check alone")
    ap.add_argument("--_control", help=argparse.SUPPRESS)
    ap.add_argument("--_worker")
    ap.add_argument("--_deadline", type=float)
    args = ap.parse_args()
    out = os.path.join(args.out_dir, "tune-rows.jsonl")
    if args._worker:
        return worker(args._worker, out, args.lorasim, args._deadline, args.tune_first, args._control,
                      os.path.abspath(args.profile) if args.profile else None, args.attn, args.identity_only)
    os.makedirs(args.out_dir, exist_ok=True)
    deadline = time.time() + args.budget_s
    controls = dict(c.split("=") for c in args.control.split(",")) if args.control else {}
    for name in (controls or args.workloads.split(",")):
        if time.time() > deadline - 90:
            print(f"tune_gpu: budget reached, skipping {name}", flush=True)
            continue
        rc = subprocess.run([sys.executable, __file__, "--out-dir", args.out_dir, "--lorasim", args.lorasim,
                             "--_worker", name, "--_deadline", str(deadline)]
                            + (["--tune-first"] if args.tune_first else [])
                            + (["--profile", args.profile] if args.profile else [])
                            + ["--attn", args.attn] + (["--identity-only"] if args.identity_only else [])
                            + (["--_control", controls[name]] if controls else [])).returncode
        print(f"tune_gpu: {name} exited {rc}", flush=True)


if __name__ == "__main__":
    main()
