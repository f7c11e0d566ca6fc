#!/usr/bin/env python3
"""Issue 28's tuner experiment ("Done when"): for each workload, in its own process (an allocator
cap is per process), one JSON line per measurement in OUT/tune-rows.jsonl:

  truth      every split untuned, a fresh model and trainer per split, under the workload's cap, 6
             optimizer steps (step time: the mean of steps 3-6; peak reserved; or oom). Where the
             workload leaves checkpointing at the trainer's default (SFTTrainer's), every split with
             it on and off, since tune weighs both there.
  tune       lorasim_hf.tune on a fresh trainer from the prior (--gpu NAME or --profile FILE):
             the pick and its checkpointing, trial steps, seconds, notes and table. A workload that
             fixes checkpointing passes it as grad_ckpt=True/False, so tune weighs what the truth ran.
  identical  three optimizer steps after the tune against three of a fresh trainer given the pick
             (adapters compared with torch.equal; deterministic algorithms on for both).
  gap        the pick's truth step time against the fastest truth split that ran (both phases run).
  epoch      one whole epoch of the dataset (--dataset-size sequences) with one split under the cap:
             oom or not, steps run, mean step time, peak reserved. Its splits: --epoch-splits, else
             the tune's pick of this process.
  control    (--control only) two untuned runs of one split compared, as `identical` compares.

Workloads:
  cap15     Trainer, qwen3-1.7b, 512 tokens, B=16, no checkpointing, allocator capped at 15 GiB
  sft       SFTTrainer with its defaults (checkpointing weighed), qwen3-1.7b, longtail lengths (max 1024), B=16
  sft9      as sft, allocator capped at 9 GiB
  big       Trainer with checkpointing, mistral-7b, 1024 tokens, B=8, allocator capped at 18 GiB
  tiny, tiny-sft   --smoke's (the CPU, bench/hf/configs/smoke.json): the script end to end, no figure

    python3 bench/hf/tune_gpu.py --out-dir $OUT --lorasim PATH [--workloads cap15,sft9,big] [--gpu a10g |
        --profile bench/hf/profiles/h200-2x-slow.toml] [--phases truth,tune,epoch] [--tune-first] [--budget-s 540]
    python3 bench/hf/tune_gpu.py --out-dir $OUT --lorasim PATH --phases epoch --epoch-splits sft9=16x1:ckpt,cap15=4x4
    python3 bench/hf/tune_gpu.py --out-dir $OUT --lorasim PATH --control sft=16x1,cap15=4x4
    python3 bench/hf/tune_gpu.py --out-dir /tmp/smoke --lorasim build/cli/lorasim --smoke
"""
import argparse, csv, gc, json, os, random, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
GIB = 2 ** 30
QWEN = "bench/hf/configs/qwen3-1.7b.json"
SFT_SPLITS = [(16, 1), (8, 2), (4, 4), (2, 8)]  # 1x16 left out: ~14 s a step with checkpointing
WORKLOADS = {
    "cap15": dict(config=QWEN, trainer="Trainer", seq_len=512, B=16, ckpt=False, cap_gib=15.0,
                  splits=[(16, 1), (8, 2), (4, 4), (2, 8), (1, 16)]),
    "sft": dict(config=QWEN, trainer="SFTTrainer", dist="longtail", max_len=1024, B=16, ckpt=None, splits=SFT_SPLITS),
    "sft9": dict(config=QWEN, trainer="SFTTrainer", dist="longtail", max_len=1024, B=16, ckpt=None, cap_gib=9.0,
                 splits=SFT_SPLITS),
    # 18 GiB: the boundary between 8x1 (about 20 GiB reserved) and 4x2 (about 17).
    "big": dict(config="bench/hf/configs/mistral-7b.json", trainer="Trainer", seq_len=1024, B=8, ckpt=True,
                cap_gib=18.0, splits=[(8, 1), (4, 2), (2, 4)]),
    # --smoke: lengths divided by `scale` (longtail's 10-1024 tokens become 1-32).
    "tiny": dict(config="bench/hf/configs/smoke.json", trainer="Trainer", dist="longtail", scale=32, B=4, ckpt=False,
                 splits=[(4, 1), (2, 2), (1, 4)]),
    "tiny-sft": dict(config="bench/hf/configs/smoke.json", trainer="SFTTrainer", dist="longtail", scale=32,
                     max_len=32, B=4, ckpt=None, splits=[(4, 1), (2, 2)]),
}
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def emit(out, row, tag="tune_gpu"):
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(tag, json.dumps({k: v for k, v in row.items() if k not in ("table", "steps")}), flush=True)


def split_name(b, a, ckpt=None):
    return f"{b}x{a}" + ("" if ckpt is None else ":ckpt" if ckpt else ":nockpt")


def parse_split(text):
    """'16x1', '16x1:ckpt' or '16x1:nockpt' -> (16, 1, None/True/False)."""
    shape, _, mode = text.partition(":")
    b, a = map(int, shape.split("x"))
    return b, a, {"": None, "ckpt": True, "nockpt": False}[mode]


def lengths_of(w, n):
    if not w.get("dist"):
        return [w["seq_len"]] * n
    with open(os.path.join(HERE, "lengths", w["dist"] + ".csv")) as f:
        lengths = [int(r["length"]) for r in csv.DictReader(f) for _ in range(int(r["count"]))]
    random.Random(0).shuffle(lengths)
    scale = w.get("scale", 1)
    return [max(1, -(-n_ // scale)) for n_ in lengths[:n]]


def compared(torch, first, second):
    """Two runs' adapters (name -> tensor): bit_identical, the largest difference, the tensors."""
    same_keys = first.keys() == second.keys()
    return dict(bit_identical=same_keys and all(torch.equal(first[k], second[k]) for k in first),
                max_abs_diff=max((first[k] - second[k]).abs().max().item() for k in first) if same_keys else None,
                tensors=len(first))


def gap_fields(truth, pick):
    """The pick's truth step time against the fastest split that ran ({split: seconds, None: oom});
    None when nothing ran or nothing was picked."""
    ran = {k: s for k, s in truth.items() if s is not None}
    if not ran or pick is None:
        return None
    fastest = min(ran, key=ran.get)
    picked = truth.get(pick)
    return dict(pick=split_name(*pick), fastest_truth=split_name(*fastest),
                pick_truth_oom=pick in truth and picked is None,
                gap=picked / ran[fastest] - 1 if picked is not None else None)


def cap_allocator(torch, cap_gib):
    """Caps this process's CUDA caching allocator at cap_gib (as a GPU of that memory would)."""
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(cap_gib * GIB / total, 0)


def pad_collate(torch, features):
    """Examples of input_ids padded to the longest of the micro-batch; padding masked out of the loss."""
    ids = [torch.tensor(f["input_ids"]) for f in features]
    width = max(len(x) for x in ids)
    input_ids = torch.zeros((len(ids), width), dtype=torch.long)
    mask = torch.zeros_like(input_ids)
    for r, x in enumerate(ids):
        input_ids[r, :len(x)] = x
        mask[r, :len(x)] = 1
    return {"input_ids": input_ids, "attention_mask": mask, "labels": input_ids.masked_fill(mask == 0, -100)}


class Run:
    """One workload in this process: builds trainers, runs the phases, writes their rows."""

    def __init__(self, name, out, deadline, a):
        import torch
        self.torch, self.name, self.out, self.deadline, self.a = torch, name, out, deadline, a
        self.w = dict(WORKLOADS[name])
        if a.cap:
            self.w["cap_gib"] = a.cap
        self.cuda = not a.smoke
        if self.cuda and self.w.get("cap_gib"):
            cap_allocator(torch, self.w["cap_gib"])
        with open(os.path.join(REPO, self.w["config"])) as f:
            self.cfg = json.load(f)
        self.model_type = self.cfg.pop("model_type")
        g = torch.Generator().manual_seed(1)
        self.seqs = [torch.randint(2, self.cfg["vocab_size"], (n,), generator=g).tolist()
                     for n in lengths_of(self.w, a.dataset_size)]
        self.truth, self.pick = {}, None  # {(b, a, ckpt): step seconds or None (oom)}; (b, a, ckpt)

    def row(self, phase, **kw):
        emit(self.out, dict(workload=self.name, phase=phase, cap_gib=self.w.get("cap_gib"), **kw))

    def late(self, margin_s):
        return time.time() > self.deadline - margin_s

    def build(self, b, a, workdir, steps=None, ckpt=None):
        """A fresh model and trainer of split b x a; steps None: one epoch; ckpt None: the workload's."""
        import datasets, peft, transformers
        torch, w = self.torch, self.w
        transformers.set_seed(0)
        cfg = transformers.AutoConfig.for_model(self.model_type, **self.cfg)
        dtype = torch.bfloat16 if self.cuda else torch.float32
        with torch.device("cuda" if self.cuda else "cpu"):
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation=self.a.attn)
        lora = peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM", target_modules=LORA_TARGETS)
        common = dict(output_dir=workdir, per_device_train_batch_size=b, gradient_accumulation_steps=a, seed=0,
                      max_steps=steps if steps else -1, num_train_epochs=1, report_to=[], logging_steps=1000,
                      save_strategy="no", use_cpu=not self.cuda, disable_tqdm=True)
        ckpt = w["ckpt"] if ckpt is None else ckpt
        ds = datasets.Dataset.from_dict({"input_ids": self.seqs})
        if w["trainer"] == "SFTTrainer":
            import trl
            from tokenizers import Tokenizer, models
            vocab = self.cfg["vocab_size"]
            tok = transformers.PreTrainedTokenizerFast(
                tokenizer_object=Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0")),
                pad_token="t0", eos_token="t1")
            extra = {} if ckpt is None else {"gradient_checkpointing": ckpt}  # None: SFTConfig's default
            args = trl.SFTConfig(**common, **extra, max_length=w["max_len"], **({} if self.cuda else {"bf16": False}))
            return trl.SFTTrainer(model=model, args=args, train_dataset=ds, processing_class=tok, peft_config=lora)
        model = peft.get_peft_model(model, lora)
        args = transformers.TrainingArguments(**common, bf16=self.cuda, gradient_checkpointing=ckpt,
                                              gradient_checkpointing_kwargs={"use_reentrant": False},
                                              remove_unused_columns=False)
        return transformers.Trainer(model=model, args=args, train_dataset=ds, data_collator=self.collate)

    def collate(self, features):
        return pad_collate(self.torch, features)

    def timer(self):
        import transformers
        sync = self.torch.cuda.synchronize if self.cuda else (lambda: None)

        class Timer(transformers.TrainerCallback):
            def __init__(self):
                self.times, self.t0 = [], None

            def on_step_begin(self, *a, **k):
                sync()
                self.t0 = time.perf_counter()

            def on_step_end(self, *a, **k):
                sync()
                self.times.append(time.perf_counter() - self.t0)
        return Timer()

    def free(self):
        gc.collect()
        if self.cuda:
            self.torch.cuda.empty_cache()

    def peak(self):
        return self.torch.cuda.max_memory_reserved() if self.cuda else None

    def timed_train(self, b, a, steps, ckpt):
        """(step seconds, peak reserved, steps run, oom) of a fresh trainer; steps None: one epoch."""
        with tempfile.TemporaryDirectory() as wd:
            t, tr, oom = self.timer(), None, False
            try:
                tr = self.build(b, a, wd, steps, ckpt)
                tr.add_callback(t)
                if self.cuda:
                    self.torch.cuda.reset_peak_memory_stats()
                tr.train()
            except self.torch.OutOfMemoryError:
                oom = True
            peak = self.peak()
            del tr
            self.free()
        steady = t.times[2:] or t.times
        return (sum(steady) / len(steady) if steady and not oom else None), peak, len(t.times), oom

    def modes(self):
        return [True, False] if self.w["ckpt"] is None else [None]

    def truth_phase(self):
        for ckpt in self.modes():
            for b, a in self.w["splits"]:
                key = (b, a, ckpt)
                if self.late(60):
                    self.row("truth", split=split_name(*key), skipped="budget")
                    continue
                step, peak, _, oom = self.timed_train(b, a, 6, ckpt)
                self.truth[key] = step
                self.row("truth", split=split_name(*key), oom=oom, step_time_s=step, peak_reserved_bytes=peak)

    def adapters_after(self, trainer):
        trainer.train()
        return {k: v.detach().float().cpu() for k, v in trainer.model.named_parameters() if v.requires_grad}

    def deterministic(self, on):
        # Deterministic algorithms and SDPA's math kernels (the cuDNN, flash and memory-efficient
        # backwards are not deterministic on a GPU), the allocator cap lifted meanwhile (the math
        # kernels hold more; bits, not memory, are compared): after the trials, so they ran as the truth.
        torch = self.torch
        torch.use_deterministic_algorithms(on, warn_only=True)
        for n in ("flash", "mem_efficient", "cudnn"):
            getattr(torch.backends.cuda, f"enable_{n}_sdp")(not on)
        if torch.cuda.is_available() and self.w.get("cap_gib"):
            if on:
                torch.cuda.set_per_process_memory_fraction(1.0, 0)
            else:
                cap_allocator(torch, self.w["cap_gib"])

    def compare(self, phase, first, second, **kw):
        self.row(phase, attn_impl=self.a.attn, **compared(self.torch, first, second), **kw)

    def tune_phase(self):
        sys.path.insert(0, os.path.join(REPO, "python"))
        from lorasim_hf import tune
        w = self.w
        b0 = min(b for b, _ in w["splits"])
        prior = {"profile": os.path.abspath(self.a.profile)} if self.a.profile else {"gpu": self.a.gpu}
        grad_ckpt = "auto" if w["ckpt"] is None else w["ckpt"]
        with tempfile.TemporaryDirectory() as wd, tempfile.TemporaryDirectory() as cache:
            tr = self.build(b0, w["B"] // b0, wd, steps=3)
            t0 = time.time()
            res = tune(tr, **prior, max_trial_steps=self.a.max_trial_steps, cache_dir=cache, grad_ckpt=grad_ckpt,
                       lorasim=self.a.lorasim)
            ckpt = res.grad_ckpt if w["ckpt"] is None else None
            self.pick = (res.micro_batch, res.accumulation, ckpt)
            self.row("tune", prior=prior, grad_ckpt_arg=grad_ckpt, pick=split_name(*self.pick),
                     trial_steps=res.trial_steps, tune_s=time.time() - t0, notes=res.notes, table=res.table)
            self.deterministic(True)
            after = self.adapters_after(tr)
            del tr
            self.free()
            direct = self.adapters_after(self.build(res.micro_batch, res.accumulation, wd + "-2", 3, ckpt))
            self.free()
            self.deterministic(False)
            self.compare("identical", after, direct, pick=split_name(*self.pick))

    def gap_row(self):
        fields = gap_fields(self.truth, self.pick)
        if fields:
            self.row("gap", **fields)

    def epoch_phase(self, splits):
        for b, a, ckpt in splits:
            step = self.truth.get((b, a, ckpt))  # its truth step time, where known: the epoch's length
            if self.late(30 + (1.5 * step * len(self.seqs) // (b * a) if step else 60)):
                self.row("epoch", split=split_name(b, a, ckpt), skipped="budget")
                continue
            t0 = time.time()
            step, peak, steps, oom = self.timed_train(b, a, None, ckpt)
            self.row("epoch", split=split_name(b, a, ckpt), sequences=len(self.seqs), oom=oom, steps_run=steps,
                     steps_in_epoch=len(self.seqs) // (b * a), step_time_s=step, peak_reserved_bytes=peak,
                     epoch_s=time.time() - t0)

    def control_phase(self, split):
        # Two untuned trainers of one split, three steps each, deterministic algorithms on: what
        # the kernels alone leave different (the tune's comparison has no other control).
        b, a, ckpt = split
        self.deterministic(True)
        runs = []
        for k in range(2):
            with tempfile.TemporaryDirectory() as wd:
                runs.append(self.adapters_after(self.build(b, a, wd, 3, ckpt)))
                self.free()
        self.deterministic(False)
        self.compare("control", runs[0], runs[1], split=split_name(b, a, ckpt))


def worker(name, out, deadline, a):
    # No CUBLAS_WORKSPACE_CONFIG: users do not set it, and ":4096:8" made an H100's host time per
    # micro-batch 45-50% longer (bench/results/h100/README.md, loop-overhead). One stream's GEMMs
    # repeat without it; the identical phase says whether the bits did.
    run = Run(name, out, deadline, a)
    if a.control_split:
        return run.control_phase(parse_split(a.control_split))
    phases = a.phases.split(",")
    order = ["tune", "truth"] if a.tune_first else ["truth", "tune"]
    for phase in order:
        if phase == "tune" and "tune" in phases and run.late(120):
            run.row("tune", skipped="budget")
        elif phase in phases:
            (run.tune_phase if phase == "tune" else run.truth_phase)()
    run.gap_row()
    if "epoch" in phases:
        given = [parse_split(s) for s in a.epoch_splits.get(name, "").split("+") if s]
        run.epoch_phase(given or ([run.pick] if run.pick else []))


def main():
    ap = argparse.ArgumentParser(description="issue 28's tuner experiment (module docstring)")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--lorasim", required=True)
    ap.add_argument("--workloads", help="comma list (default cap15,sft9,big; --smoke: tiny,tiny-sft)")
    ap.add_argument("--phases", default="truth,tune", help="comma list of truth, tune (with identical), epoch")
    ap.add_argument("--budget-s", type=float, default=540, help="wall-clock budget of all workloads together")
    ap.add_argument("--tune-first", action="store_true", help="tune in the fresh process (as a user would, "
                    "before training), then the ground truth")
    ap.add_argument("--gpu", default="h200", help="the embedded profile tune starts from (e.g. a10g: a wrong prior)")
    ap.add_argument("--profile", help="a profile TOML tune starts from instead of --gpu (e.g. "
                    "bench/hf/profiles/h200-2x-slow.toml: every time 2x, bench/hf/profiles/time_scaled.py)")
    ap.add_argument("--max-trial-steps", type=int, default=10)
    ap.add_argument("--epoch-splits", default="", help="workload=BxA[:ckpt|:nockpt][+BxA...],...: the epoch "
                    "phase's splits (default: the tune's pick in the same process)")
    ap.add_argument("--dataset-size", type=int, help="sequences in the train dataset: an epoch's length "
                    "(default 256; --smoke 48)")
    ap.add_argument("--cap-gib", type=float, help="an allocator cap (GiB) for every workload run, replacing theirs")
    ap.add_argument("--attn", default="sdpa", help="attn_implementation of every model (eager: deterministic "
                    "kernels, so the bit-identity check is not blurred by cuDNN attention's backward)")
    ap.add_argument("--control", help="workload=split,...: two untuned runs of each split compared, nothing else")
    ap.add_argument("--smoke", action="store_true", help="the CPU, tiny workloads: the script end to end")
    ap.add_argument("--_worker", help=argparse.SUPPRESS)
    ap.add_argument("--_deadline", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--_control", help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.cap = args.cap_gib
    args.dataset_size = args.dataset_size or (48 if args.smoke else 256)
    args.lorasim = os.path.abspath(args.lorasim)
    args.epoch_splits = dict(s.split("=", 1) for s in args.epoch_splits.split(",") if s)
    args.control_split = args._control
    out = os.path.join(args.out_dir, "tune-rows.jsonl")
    if args._worker:
        return worker(args._worker, out, args._deadline, args)
    os.makedirs(args.out_dir, exist_ok=True)
    deadline = time.time() + args.budget_s
    controls = dict(c.split("=") for c in args.control.split(",")) if args.control else {}
    names = list(controls) or (args.workloads or ("tiny,tiny-sft" if args.smoke else "cap15,sft9,big")).split(",")
    passed = sys.argv[1:]
    for name in names:
        if time.time() > deadline - 90:
            print(f"tune_gpu: budget reached, skipping {name}", flush=True)
            continue
        cmd = [sys.executable, __file__] + passed + ["--_worker", name, "--_deadline", str(deadline)]
        if controls:
            cmd += ["--_control", controls[name]]
        rc = subprocess.run(cmd).returncode
        print(f"tune_gpu: {name} exited {rc}", flush=True)


if __name__ == "__main__":
    main()
