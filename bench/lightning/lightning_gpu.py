#!/usr/bin/env python3
"""Issue 30's Lightning experiment ("Done when", GPU): a LightningModule wrapping a PEFT LoRA
qwen3-1.7b (random weights, LoRA r=16 on every linear projection), precision="bf16-mixed",
gradient_clip_val=1.0, effective batch B=16. Each cell runs in its own process (an allocator cap is
per process) and writes one JSON line per measurement to OUT/lightning-bench.jsonl:

  truth      every split untuned: a fresh model and a fresh Lightning Trainer per split, 6 optimizer
             steps, timed by the script (mean of steps 3-6; peak reserved; or oom) and recorded by
             lorasim_hf.lightning.LorasimRecorder (warmup_steps=2) into OUT/rows-<cell>.jsonl, the
             measurement rows `lorasim validate` reads. A split that ran out of memory gets an oom row
             there too (the cell's columns, its split, oom true): the recorder writes none.
  tune       lorasim_hf.lightning.LorasimTuner on a fresh model and trainer from a wrong prior
             (--gpu, default a10g, or --profile FILE), starting at the cell's smallest micro-batch:
             the pick, trial steps, seconds from fit() to the set split, its table; the trials' rows
             to OUT/trials-<cell>.jsonl.
  identical  the tuned fit goes on for 3 optimizer steps; a fresh untuned trainer at the pick, same
             seed, 3 steps; adapters compared with torch.equal. In both fits a callback after the
             tuner's (so the trials run as the truth's splits do) turns on deterministic algorithms
             and SDPA's math kernels (cuDNN's attention backward is not deterministic on the GPU)
             and lifts the allocator cap for the training steps (the math kernels hold more).
  gap        the pick's truth step time against the fastest truth split that ran (both in the process).

Cells (value order: the tuner's cells first):
  cap15     fixed 512 tokens under a 15 GiB allocator cap, no checkpointing, 16x1 .. 1x16; tuned
  lengths   the longtail lengths (10-1024 tokens) padded to each micro-batch's longest, gradient
            checkpointing on, 16x1 .. 2x8; tuned
  fixed     fixed 512 tokens, no cap, no checkpointing, 16x1 .. 2x8 (1x16 too with --fixed-1x16); truth only
  tiny, tiny-lengths   --smoke's (the CPU, bench/hf/configs/smoke.json, 32-bit): every phase, no figure

    python3 bench/lightning/lightning_gpu.py --out-dir $OUT --lorasim build-gpu/cli/lorasim --budget-s 500
    python3 bench/lightning/lightning_gpu.py --out-dir $OUT --lorasim build-gpu/cli/lorasim --cells cap15 --tune-first
    python3 bench/lightning/lightning_gpu.py --out-dir /tmp/lsmoke --lorasim build/cli/lorasim --smoke
then  python3 bench/lightning/summarize.py --lorasim build/cli/lorasim OUT
"""
import argparse, functools, gc, json, logging, os, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "bench", "hf"))
sys.path.insert(0, os.path.join(REPO, "python"))
import tune_gpu  # noqa: E402  (bench/hf: lengths, allocator cap, padding collate, rows)

FOUR = [(16, 1), (8, 2), (4, 4), (2, 8)]
CELLS = {
    "cap15": dict(config=tune_gpu.QWEN, seq_len=512, B=16, ckpt=False, cap_gib=15.0, tune=True,
                  splits=FOUR + [(1, 16)]),
    # A whole epoch of 256 sequences per split: a few steps of varying widths do not rank the splits
    # (lightning-run2: 16x1 1.37 s over 4 steps, 0.945 s over the epoch).
    "lengths": dict(config=tune_gpu.QWEN, dist="longtail", B=16, ckpt=True, tune=True, splits=FOUR, truth_steps=16),
    "fixed": dict(config=tune_gpu.QWEN, seq_len=512, B=16, ckpt=False, tune=False, splits=FOUR),
    # --smoke: lengths divided by `scale` (longtail's 10-1024 tokens become 1-32).
    # tiny: cap15's stand-in, a micro-batch above 2 raising CUDA's out-of-memory error (no cap on the CPU).
    "tiny": dict(config="bench/hf/configs/smoke.json", seq_len=32, B=4, ckpt=False, tune=True, oom_above=2,
                 splits=[(4, 1), (2, 2), (1, 4)]),
    "tiny-lengths": dict(config="bench/hf/configs/smoke.json", dist="longtail", scale=32, B=4, ckpt=True, tune=True,
                         splits=[(4, 1), (2, 2)]),
}
TRUTH_STEPS, SAME_STEPS = 6, 3
# Columns of a recorded row that describe one run's data, not the cell: left out of an oom row.
RUN_COLUMNS = ("step_time_s", "peak_allocated_bytes", "peak_reserved_bytes", "padded_lengths", "real_tokens",
               "new_shapes_per_step")


def lightning():
    try:
        import lightning.pytorch as pl
    except ImportError:
        import pytorch_lightning as pl
    import lorasim_hf.lightning  # noqa: F401  (imports every Lightning package there is: their loggers exist)
    # Their banners, once per fit: each package sets its loggers' levels at import and makes its own
    # rank_zero logger the one lightning_utilities logs to.
    for package in ("lightning.pytorch", "pytorch_lightning", "lightning.fabric", "lightning_fabric"):
        for name in (package, package + ".utilities.rank_zero"):
            logging.getLogger(name).setLevel(logging.WARNING)
    return pl


def module_class(pl, torch):
    class LoRA(pl.LightningModule):
        """A PEFT model, trained on `dataset` in micro-batches of self.batch_size (the tuner sets it);
        oom_above: a micro-batch of more rows raises CUDA's out-of-memory error (--smoke's cap)."""

        def __init__(self, model, batch_size, dataset, collate, oom_above=None):
            super().__init__()
            self.model, self.batch_size, self.dataset, self.collate = model, batch_size, dataset, collate
            self.oom_above = oom_above

        def training_step(self, batch, batch_idx):
            if self.oom_above is not None and batch["input_ids"].shape[0] > self.oom_above:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory (lightning_gpu --smoke's stand-in cap)")
            return self.model(**batch).loss

        def configure_optimizers(self):
            return torch.optim.AdamW([p for p in self.parameters() if p.requires_grad], lr=1e-4)

        def train_dataloader(self):
            return torch.utils.data.DataLoader(self.dataset, batch_size=self.batch_size, shuffle=True,
                                               collate_fn=self.collate)
    return LoRA


SDPA_BACKENDS = ("flash", "mem_efficient", "cudnn", "math")


def callbacks(pl, torch, cuda):
    """(StepTimer, Exact): optimizer steps timed as the recorder times them; Exact, see its doc."""
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    backends = torch.backends.cuda

    class StepTimer(pl.Callback):
        def __init__(self):
            self.times, self.widths, self.t0 = [], [], None

        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            self.widths.append(int(batch["input_ids"].shape[-1]))  # each micro-batch's padded width
            if batch_idx % trainer.accumulate_grad_batches == 0:
                sync()
                self.t0 = time.perf_counter()

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if (batch_idx + 1) % trainer.accumulate_grad_batches == 0 and self.t0 is not None:
                sync()
                self.times.append(time.perf_counter() - self.t0)

    class Exact(pl.Callback):
        """From on_fit_start to on_fit_end: deterministic algorithms and SDPA's math kernels only
        (the cuDNN, flash and memory-efficient backwards are not deterministic), without the
        allocator cap (the math kernels hold more; bits, not memory, are compared). Listed after
        the tuner, it starts after the trials, so they run as the truth's splits do."""

        def __init__(self, cap_gib):
            self.cap_gib, self.saved, self.started = cap_gib, {}, None

        def on_fit_start(self, trainer, module):
            self.started = time.time()  # the tuner's on_fit_start (the tune) has ended
            self.saved = {n: getattr(backends, f"{n}_sdp_enabled")() for n in SDPA_BACKENDS}
            for n in SDPA_BACKENDS:
                getattr(backends, f"enable_{n}_sdp")(n == "math")
            torch.use_deterministic_algorithms(True, warn_only=True)
            if cuda and self.cap_gib:
                torch.cuda.set_per_process_memory_fraction(1.0, 0)

        def on_fit_end(self, trainer, module):
            for n, on in self.saved.items():
                getattr(backends, f"enable_{n}_sdp")(on)
            torch.use_deterministic_algorithms(False)
            if cuda and self.cap_gib:
                tune_gpu.cap_allocator(torch, self.cap_gib)
    return StepTimer, Exact


class Cell:
    """One cell in this process: builds modules and trainers, runs the phases, writes their rows."""

    def __init__(self, name, out_dir, deadline, a):
        import torch
        self.torch, self.pl, self.name, self.deadline, self.a = torch, lightning(), name, deadline, a
        self.out, self.rows = os.path.join(out_dir, "lightning-bench.jsonl"), os.path.join(out_dir, f"rows-{name}.jsonl")
        self.w = dict(CELLS[name])
        if name == "fixed" and a.fixed_1x16:
            self.w["splits"] = FOUR + [(1, 16)]
        if a.splits:
            self.w["splits"] = [sp for sp in self.w["splits"] if tune_gpu.split_name(*sp) in a.splits.split(",")]
        self.cuda = not a.smoke
        if self.cuda and self.w.get("cap_gib"):
            tune_gpu.cap_allocator(torch, self.w["cap_gib"])
        with open(os.path.join(REPO, self.w["config"])) as f:
            self.cfg = json.load(f)
        self.model_type = self.cfg.pop("model_type")
        g = torch.Generator().manual_seed(1)
        self.dataset = [{"input_ids": torch.randint(2, self.cfg["vocab_size"], (n,), generator=g).tolist()}
                        for n in tune_gpu.lengths_of(self.w, a.dataset_size)]
        self.collate = functools.partial(tune_gpu.pad_collate, torch)
        self.LoRA = module_class(self.pl, torch)
        self.StepTimer, self.Exact = callbacks(self.pl, torch, self.cuda)
        self.truth, self.pick = {}, None  # {(b, a): step seconds or None (oom)}; (b, a)

    def row(self, phase, **kw):
        tune_gpu.emit(self.out, dict(cell=self.name, phase=phase, cap_gib=self.w.get("cap_gib"), **kw),
                      tag="lightning_gpu")

    def late(self, margin_s):
        return time.time() > self.deadline - margin_s

    def module(self, b):
        """A fresh LightningModule of micro-batch b around a fresh PEFT LoRA model (seed 0)."""
        import peft, transformers
        torch = self.torch
        transformers.set_seed(0)
        cfg = transformers.AutoConfig.for_model(self.model_type, **self.cfg)
        with torch.device("cuda" if self.cuda else "cpu"):
            model = transformers.AutoModelForCausalLM.from_config(
                cfg, dtype=torch.bfloat16 if self.cuda else torch.float32, attn_implementation=self.a.attn)
        if self.w["ckpt"]:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        lora = peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM",
                               target_modules=tune_gpu.LORA_TARGETS)
        return self.LoRA(peft.get_peft_model(model, lora), b, self.dataset, self.collate, self.w.get("oom_above"))

    def trainer(self, accumulation, steps, cbs):
        self.pl.seed_everything(0, verbose=False)
        return self.pl.Trainer(
            accelerator="gpu" if self.cuda else "cpu", devices=1, max_steps=steps, accumulate_grad_batches=accumulation,
            precision=self.a.precision, gradient_clip_val=1.0, callbacks=cbs, logger=False, enable_checkpointing=False,
            enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)

    def free(self):
        gc.collect()
        if self.cuda:
            self.torch.cuda.empty_cache()

    def truth_phase(self):
        from lorasim_hf.lightning import LorasimRecorder
        ooms = []
        for b, a in self.w["splits"]:
            if self.late(45):
                self.row("truth", split=tune_gpu.split_name(b, a), skipped="budget")
                continue
            timer, oom = self.StepTimer(), False
            recorder = LorasimRecorder(self.rows, warmup_steps=2, lorasim=self.a.lorasim)
            try:
                module = self.module(b)
                trainer = self.trainer(a, self.a.truth_steps or self.w.get("truth_steps", TRUTH_STEPS), [timer, recorder])
                if self.cuda:
                    self.torch.cuda.reset_peak_memory_stats()
                trainer.fit(module)
            except self.torch.OutOfMemoryError:
                oom = True
            peak = self.torch.cuda.max_memory_reserved() if self.cuda else None
            recorded = (recorder.row or {}).get("step_time_s")
            module = trainer = recorder = None  # the recorder holds the model too: all of it freed before the next
            self.free()
            steady = timer.times[2:]
            step = sum(steady) / len(steady) if steady and not oom else None
            self.truth[b, a] = step
            if oom:
                ooms.append((b, a))
            self.row("truth", split=tune_gpu.split_name(b, a), oom=oom, step_time_s=step, steps_run=len(timer.times),
                     peak_reserved_bytes=peak, recorder_step_time_s=recorded,
                     step_times_s=[round(t, 4) for t in timer.times], widths=timer.widths)
        self.oom_rows(ooms)

    def oom_rows(self, ooms):
        """The recorder writes no row for a fit that ran out of memory; one is written here from a
        recorded row of this cell (its model, adapter, device, precision), with the split and oom."""
        from lorasim_hf.rows import RowWriter
        if not ooms or not os.path.exists(self.rows):
            return
        with open(self.rows) as f:
            recorded = [json.loads(line) for line in f if line.strip()]
        if not recorded:
            return
        writer = RowWriter(self.rows)
        for b, a in ooms:
            row = {k: v for k, v in recorded[-1].items() if k not in RUN_COLUMNS}
            writer.write(dict(row, micro_batch=b, accumulation=a, oom=True))

    def tune_phase(self):
        from lorasim_hf.lightning import LorasimTuner
        w = self.w
        b0 = min(b for b, _ in w["splits"])
        prior = {"profile": os.path.abspath(self.a.profile)} if self.a.profile else {"gpu": self.a.gpu}
        with tempfile.TemporaryDirectory() as cache:
            tuner = LorasimTuner(**prior, max_trial_steps=self.a.max_trial_steps, lorasim=self.a.lorasim,
                                 cache_dir=cache)
            module = self.module(b0)
            exact = self.Exact(w.get("cap_gib"))
            trainer = self.trainer(w["B"] // b0, SAME_STEPS, [tuner, exact])
            t0 = time.time()
            trainer.fit(module)  # the tune, then SAME_STEPS steps of its pick
            res = tuner.result
            self.pick = (res.micro_batch, res.accumulation)
            trials = os.path.join(os.path.dirname(self.out), f"trials-{self.name}{os.path.splitext(res.rows_path)[1]}")
            if os.path.exists(res.rows_path):
                shutil.copyfile(res.rows_path, trials)  # the trials' rows (the cache is a temporary folder)
            self.row("tune", prior=prior, pick=tune_gpu.split_name(*self.pick), trial_steps=res.trial_steps,
                     tune_s=exact.started - t0, tune_and_fit_s=time.time() - t0,
                     set_on_trainer=[module.batch_size, trainer.accumulate_grad_batches], notes=res.notes,
                     table=res.table)
            after = adapters(module)
        module = trainer = tuner = None
        self.free()
        module = self.module(self.pick[0])
        self.trainer(self.pick[1], SAME_STEPS, [self.Exact(w.get("cap_gib"))]).fit(module)
        direct = adapters(module)
        module = None
        self.free()
        self.row("identical", pick=tune_gpu.split_name(*self.pick), attn_impl=self.a.attn, sdpa_backend="math",
                 deterministic=True, cap_lifted=bool(w.get("cap_gib")), steps=SAME_STEPS,
                 **tune_gpu.compared(self.torch, after, direct))

    def gap_row(self):
        fields = tune_gpu.gap_fields(self.truth, self.pick)
        if fields:
            self.row("gap", **fields)


def adapters(module):
    return {k: v.detach().float().cpu() for k, v in module.named_parameters() if v.requires_grad}


def worker(name, out_dir, deadline, a):
    # No CUBLAS_WORKSPACE_CONFIG: users do not set it, and ":4096:8" made an H100's host time per
    # micro-batch 45-50% longer (bench/results/h100/README.md, loop-overhead). One stream's GEMMs
    # repeat without it; the identical phase says whether the bits did.
    cell = Cell(name, out_dir, deadline, a)
    phases = a.phases.split(",")
    order = ["tune", "truth"] if a.tune_first else ["truth", "tune"]
    for phase in order:
        if phase not in phases or (phase == "tune" and not cell.w["tune"]):
            continue
        if phase == "tune" and cell.late(90):
            cell.row("tune", skipped="budget")
        else:
            (cell.tune_phase if phase == "tune" else cell.truth_phase)()
    cell.gap_row()


def main():
    ap = argparse.ArgumentParser(description="issue 30's Lightning experiment (module docstring)")
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--lorasim", required=True)
    ap.add_argument("--cells", help="comma list (default cap15,lengths,fixed; --smoke: tiny,tiny-lengths)")
    ap.add_argument("--phases", default="truth,tune", help="comma list of truth, tune (with identical); gap "
                    "is written where both ran")
    ap.add_argument("--budget-s", type=float, default=500, help="wall-clock budget of all cells together")
    ap.add_argument("--tune-first", action="store_true", help="tune in the fresh process, then the truth")
    ap.add_argument("--gpu", default="a10g", help="the embedded profile the tuner starts from (a10g: a wrong prior)")
    ap.add_argument("--profile", help="a profile TOML the tuner starts from instead of --gpu "
                    "(e.g. bench/hf/profiles/h200-2x-slow.toml)")
    ap.add_argument("--max-trial-steps", type=int, default=10)
    ap.add_argument("--truth-steps", type=int,
                    help=f"optimizer steps per truth split, the first two untimed (default {TRUTH_STEPS}; the lengths "
                         "cell 16, an epoch of 256 sequences at B=16)")
    ap.add_argument("--dataset-size", type=int, help="sequences in the dataset (default 256; --smoke 48)")
    ap.add_argument("--attn", default="sdpa", help="attn_implementation of every model (sdpa, eager)")
    ap.add_argument("--precision", help="Lightning precision (default bf16-mixed; --smoke 32-true)")
    ap.add_argument("--fixed-1x16", action="store_true", help="the fixed cell's 1x16 too (about 3 s a step)")
    ap.add_argument("--splits", help="comma list: only these splits of each cell (e.g. 16x1,8x2)")
    ap.add_argument("--smoke", action="store_true", help="the CPU, tiny cells: the script end to end")
    ap.add_argument("--_worker", help=argparse.SUPPRESS)
    ap.add_argument("--_deadline", type=float, help=argparse.SUPPRESS)
    a = ap.parse_args()
    a.dataset_size = a.dataset_size or (48 if a.smoke else 256)
    a.precision = a.precision or ("32-true" if a.smoke else "bf16-mixed")
    a.lorasim = os.path.abspath(a.lorasim)
    if a._worker:
        return worker(a._worker, a.out_dir, a._deadline, a)
    os.makedirs(a.out_dir, exist_ok=True)
    deadline = time.time() + a.budget_s
    names = (a.cells or ("tiny,tiny-lengths" if a.smoke else "cap15,lengths,fixed")).split(",")
    unknown = sorted(set(names) - set(CELLS))
    if unknown:
        sys.exit(f"lightning_gpu: unknown cell {', '.join(unknown)}; use {', '.join(CELLS)}")
    for name in names:
        if time.time() > deadline - 60:
            print(f"lightning_gpu: budget reached, skipping {name}", flush=True)
            continue
        cmd = [sys.executable, __file__] + sys.argv[1:] + ["--_worker", name, "--_deadline", str(deadline)]
        rc = subprocess.run(cmd).returncode
        print(f"lightning_gpu: {name} exited {rc}", flush=True)


if __name__ == "__main__":
    main()
