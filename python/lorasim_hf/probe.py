"""Short real Hugging Face + PEFT training steps for `lorasim calibrate --stack hf-peft` (and `lightning`).

    python3 -m lorasim_hf.probe --plan PLAN.json
    python3 -m lorasim_hf.probe --plan PLAN.json --lengths lengths.csv --padding longest --seed 0

Each planned run trains a PEFT LoRA model built from its config (random weights, truncated to
`num_layers`) on random tokens, one optimizer step at a time exactly as transformers' `Trainer`
runs it: `model.train()`, the forward under autocast with half-precision outputs cast to fp32
when `autocast` (accelerate's mixed precision), the loss normalised by the tokens of the whole
accumulation window (`num_items_in_batch`), backward (through a GradScaler for fp16), the
per-micro-batch NaN check Trainer makes (a device sync), clipping to max_grad_norm 1.0, the
default optimizer (fused AdamW, lr 5e-5) and linear schedule, `model.zero_grad()`.

With --lengths, each micro-batch holds sequences drawn from the file (lorasim_hf.length_batches:
a seeded order without replacement, right-padded with pad id 0, attention_mask, labels -100) and
each row records the timed micro-batches' collation, padded_lengths and real_tokens, seq_len
being the largest width.

A run may carry its own lengths (`lengths`: [[length, count], ...], `padding`, `lengths_seed`;
what `lorasim calibrate --stack hf-peft` plans), which win over --lengths. Every row records
`new_shapes_per_step`: the timed micro-batches per step whose (rows, width) shape the process had
not trained a model of that width on (lorasim_hf.seen). A run with `fused_lm_head` trains through
TRL's fused LM head as SFTTrainer does (trl.trainer.utils.add_fused_lm_head, the loss from its
per-token log-probs, its entropy and accuracy metrics); without trl installed such runs are
skipped: a line {"skipped": label, "why": ...} stands for each.

A run's `stack` (default "hf-peft": the loop above) may be "lightning" (`lorasim calibrate --stack
lightning`): the same built model is trained by a real Lightning `Trainer` instead, on the same
micro-batches, and its row says `"stack": "lightning"` (lorasim_hf.probe_lightning; it needs
lightning or pytorch_lightning, and takes no `loop` plain or --quant).

stdout: one JSON Lines measurement row per run (docs/measurements.md), flushed as each ends;
stderr: progress. `step_time_s` is the median wall time of the timed steps (synchronized), their
mean when the widths varied; `micro_batch_time_s` likewise, `optimizer_time_s` the median (CUDA
events on the GPU).
Exit 0 when every run was attempted, 1 when some run failed for another reason than memory,
2 when torch, transformers or peft (or, for lightning runs, Lightning) is missing.
"""
import argparse
import gc
import json
import os
import statistics
import sys
import time

from lorasim_hf import length_batches, probe_lightning, probe_runs
from lorasim_hf._deps import MissingDependency, require
from lorasim_hf.probe_quant import QUANTS, PlanError, check_quant, load_quantized, quant_columns
from lorasim_hf.rows import check_row, json_line
from lorasim_hf.seen import SeenBatches, device_columns
from lorasim_hf.targets import peft_target_modules

from lorasim_hf.probe_plan import (LOOPS, RUN_DEFAULTS, RUN_REQUIRED, hf_config_kwargs, load_plan,  # noqa: F401
                                   model_key, set_allocator)


class Probe:
    def __init__(self, device, allocator, out=sys.stdout, log=sys.stderr, quant="none", double_quant=True):
        self.torch, self.transformers, self.peft = require("torch", "transformers", "peft")
        self.device, self.allocator, self.out, self.log = device, allocator, out, log
        check_quant(quant, device)
        self.quant, self.double_quant = quant, double_quant
        if device == "cuda" and not self.torch.cuda.is_available():
            raise PlanError("the plan asks for cuda, but torch sees no CUDA device")
        self.cuda = device == "cuda"
        self.device_columns = device_columns(self.torch, device, world_size=1)  # one process, the plan's device
        self._shapes = {}  # shape_key -> the (rows, width) shapes this process trained models of that key on
        # The libraries' objects never become garbage; leaving them out of every collection makes
        # gc.collect() between runs take microseconds instead of a quarter of a second.
        gc.collect()
        gc.freeze()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    def build(self, run):
        torch, transformers, peft = self.torch, self.transformers, self.peft
        kw = hf_config_kwargs(run)
        cfg = transformers.AutoConfig.for_model(kw.pop("model_type"), **kw)
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[run["precision"]]
        torch.manual_seed(0)
        with torch.device(self.device):  # random init where the model runs: seconds, not a minute on the CPU
            model = transformers.AutoModelForCausalLM.from_config(cfg, dtype=dtype,
                                                                   attn_implementation=run["attn_impl"])
        if self.quant != "none":
            model = load_quantized(self, model, run, dtype)
        if run["fused_lm_head"]:
            probe_runs.add_fused_head(model)
        # The module names of this model_type (Phi-3: qkv_proj, gate_up_proj; Gemma 3: the language model's).
        targets = peft_target_modules(run["hf_config"]["model_type"], run["lora_targets"])
        lora = peft.LoraConfig(r=run["lora_rank"], lora_alpha=run["lora_alpha"], lora_dropout=run["lora_dropout"],
                               target_modules=targets, bias="none", task_type="CAUSAL_LM")
        model = peft.get_peft_model(model, lora)
        if run["grad_ckpt"] and self.quant == "none":  # as Trainer does with gradient_checkpointing=True (it also enables input grads)
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        return model, cfg.vocab_size

    def run(self, model, vocab, run, lengths=None):
        """One measurement row; raises torch.cuda.OutOfMemoryError through. `lengths`: a
        length_batches.LengthSampler the micro-batches are drawn from (None: random rows of seq_len)."""
        if run["stack"] == "lightning":
            return probe_lightning.train(self, model, vocab, run, lengths)
        torch = self.torch
        b, a, s = run["micro_batch"], run["accumulation"], run["seq_len"]
        half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(run["precision"], torch.bfloat16)
        trainable = [p for p in model.parameters() if p.requires_grad]
        # Trainer's two groups (decay / no decay, weight_decay 0.0 by default) and default optimizer.
        plain = run["loop"] == "plain"
        if plain:
            opt = torch.optim.AdamW(trainable, lr=5e-5)
        else:
            opt = torch.optim.AdamW([{"params": trainable, "weight_decay": 0.0}, {"params": [], "weight_decay": 0.0}],
                                    lr=5e-5, betas=(0.9, 0.999), eps=1e-8, fused=True)
        sched = self.transformers.get_scheduler("linear", opt, num_warmup_steps=0,
                                                num_training_steps=run["warmup_steps"] + run["steps"])
        scaler = torch.amp.GradScaler(self.device) if run["autocast"] and half == torch.float16 else None
        tr_loss = torch.zeros((), device=self.device)
        draw = length_batches.Draws(torch, b, s, vocab, lengths)

        def forward(batch, n_items):
            inputs = {k: v.to(self.device) for k, v in batch.items()}
            if run["fused_lm_head"]:
                return probe_runs.fused_loss(torch, model, inputs, n_items, half, run["autocast"], a if plain else None)
            if plain:
                if not run["autocast"]:
                    return model(**inputs).loss / a
                with torch.autocast(self.device, dtype=half):
                    return model(**inputs).loss / a
            if not run["autocast"]:
                return model(**inputs, num_items_in_batch=n_items)["loss"]
            with torch.autocast(self.device, dtype=half):
                out = model(**inputs, num_items_in_batch=n_items)
            # accelerate's convert_outputs_to_fp32: every half-precision output (the logits) gets an fp32 copy
            out = {k: v.float() if torch.is_tensor(v) and v.dtype in (torch.float16, torch.bfloat16) else v
                   for k, v in out.items()}
            return out["loss"]

        def step():
            batches = [draw() for _ in range(a)]
            if self.cuda:
                batches = [{k: v.pin_memory() for k, v in x.items()} for x in batches]
            n_items = sum(x["labels"][..., 1:].ne(-100).sum() for x in batches).to(self.device)
            ev = [torch.cuda.Event(enable_timing=True) for _ in range(3)] if self.cuda else None
            self.sync()
            t0 = time.perf_counter()
            if ev:
                ev[0].record()
            for ids in batches:
                model.train()
                loss = forward(ids, n_items)
                (scaler.scale(loss) if scaler else loss).backward()
                loss = loss.detach()
                if not plain and (torch.isnan(loss) or torch.isinf(loss)):  # Trainer's nan/inf filter: a sync
                    pass
                tr_loss.add_(loss)
                del loss
            t1 = time.perf_counter()
            if ev:
                ev[1].record()
            if scaler:
                scaler.unscale_(opt)
            if not plain:
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            if scaler:
                scaler.step(opt)
                scaler.update()
            else:
                opt.step()
            if not plain:
                sched.step()
            model.zero_grad()
            if ev:
                ev[2].record()
            self.sync()
            t2 = time.perf_counter()
            if ev:
                return t2 - t0, ev[0].elapsed_time(ev[1]) / 1e3 / a, ev[1].elapsed_time(ev[2]) / 1e3
            return t2 - t0, (t1 - t0) / a, t2 - t1

        seen, hook = self.watch(model, run)
        try:
            for _ in range(run["warmup_steps"]):
                step()
            if self.cuda:
                torch.cuda.reset_peak_memory_stats()
            draw.start_timing()
            seen.active = True
            times = [step() for _ in range(run["steps"])]
        finally:
            hook.remove()
        return self.measured_row(run, times, draw.record, seen, self.peaks())

    def watch(self, model, run):
        """(SeenBatches, its hook on `model`) for a run about to start, with the CUDA cache emptied."""
        if self.cuda:  # the peak covers this run alone, not what an earlier run left cached
            self.torch.cuda.empty_cache()
        # Which micro-batches meet a shape this process has not trained on (lorasim_hf.seen): the
        # kernels' choice per shape is cached per process, for models of one width alike.
        seen = SeenBatches(self.torch, shapes=self._shapes.setdefault(probe_runs.shape_key(run), set()))
        return seen, model.register_forward_pre_hook(seen, with_kwargs=True)

    def peaks(self):
        """Peak allocated and reserved bytes since the last reset (none without CUDA)."""
        if not self.cuda:
            return {}
        return {"peak_allocated_bytes": self.torch.cuda.max_memory_allocated(),
                "peak_reserved_bytes": self.torch.cuda.max_memory_reserved()}

    def measured_row(self, run, times, record, seen, peaks):
        """The row of a run's timed steps: `times` [(step_s, micro_batch_s, optimizer_s)], `record` the
        length_batches.WidthRecord of their micro-batches (None: random rows of seq_len)."""
        b, a, s = run["micro_batch"], run["accumulation"], run["seq_len"]
        row = self.workload_row(run)
        if record:
            row.update(record.columns(), seq_len=record.largest())
        else:  # random tokens of one length: every timed micro-batch b x s, all real
            row.update(collation="fixed", padded_lengths={s: len(times) * a}, real_tokens=float(b * s))
        # One shape: the median step is the steady state. Many widths: the mean, which is what a
        # prediction from the widths gives, with what the new shapes among them cost (as LorasimCallback).
        varying = bool(record) and len(record.widths) > 1
        centre = statistics.fmean if varying else statistics.median
        row.update(oom=False, step_time_s=centre(t[0] for t in times),
                   micro_batch_time_s=centre(t[1] for t in times),
                   optimizer_time_s=statistics.median(t[2] for t in times),
                   new_shapes_per_step=seen.new_shapes / len(times) if varying else 0.0, **peaks)
        return row

    def workload_row(self, run):
        return {**self.device_columns, "model": run["model"], "num_layers": run["num_layers"], "seq_len": run["seq_len"],
                "micro_batch": run["micro_batch"], "accumulation": run["accumulation"],
                "grad_ckpt": bool(run["grad_ckpt"]), "lora_rank": run["lora_rank"],
                "lora_alpha": float(run["lora_alpha"]), "lora_targets": run["lora_targets"],
                "precision": run["precision"], "stack": run["stack"], "attn_impl": run["attn_impl"],
                "lora_dropout": float(run["lora_dropout"]), "allocator": self.allocator,
                "autocast": bool(run["autocast"]), "fused_lm_head": bool(run["fused_lm_head"]),
                "loop": "plain" if run["loop"] == "plain" else "probe", **self.quant_columns(run)}

    def quant_columns(self, run):
        return quant_columns(self.quant, run, self.double_quant)

    def free(self):
        gc.collect()
        if self.cuda:
            self.torch.cuda.empty_cache()


def label(run):
    return (f"{run['model']} L={run['num_layers'] or 'all'} s={run['seq_len']} b={run['micro_batch']} "
            f"a={run['accumulation']}{' ckpt' if run['grad_ckpt'] else ''}{' fused-head' if run['fused_lm_head'] else ''}"
            f"{' lengths' if run['lengths'] else ''}{' lightning' if run['stack'] == 'lightning' else ''}")


def run_plan(plan, out=sys.stdout, log=sys.stderr, lengths=None, quant="none", double_quant=True):
    """Measures every run of `plan` (a path or dict); returns (rows, failures). Rows go to `out` as they end.
    `lengths`: a function of no argument giving each run a fresh length_batches.LengthSampler.

    Runs sharing a model are measured together (first appearance order), so each model is
    built once; every row names its whole workload.
    """
    t_start = time.perf_counter()
    device, allocator, runs = load_plan(plan)
    if "torch" in sys.modules and device == "cuda":
        print("probe: torch was imported before the plan set the allocator; it may not apply", file=log)
    set_allocator(allocator)
    if any(r["stack"] == "lightning" for r in runs):
        if quant != "none":
            raise PlanError("--quant is for hf-peft runs only; the plan has lightning runs (calibrate them apart)")
        probe_lightning.package()  # missing: one line before any run; imported before Probe freezes the gc
    probe = Probe(device, allocator, out, log, quant, double_quant)
    t_imports = time.perf_counter() - t_start
    order, groups = [], {}
    for i, r in enumerate(runs, 1):
        key = model_key(r)
        if key not in groups:
            order.append(key)
            groups[key] = []
        groups[key].append((i, r))
    rows, failures, t_build = [], 0, 0.0
    trl = probe_runs.has_trl() if any(r["fused_lm_head"] for r in runs) else True
    for key in order:
        first = groups[key][0][1]
        if first["fused_lm_head"] and not trl:  # the rest of the plan still calibrates
            for i, r in groups[key]:
                why = "TRL's fused LM head needs trl (pip install trl)"
                out.write(json.dumps({"skipped": label(r), "why": why}) + "\n")
                out.flush()
                print(f"[{i}/{len(runs)}] {label(r)}: skipped: {why}", file=log, flush=True)
            continue
        t0 = time.perf_counter()
        try:
            model, vocab = probe.build(first)
        except probe.torch.cuda.OutOfMemoryError:
            model = None
        except Exception as e:  # a config transformers cannot build: its runs fail, the others go on
            print(f"probe: error: cannot build {label(first)}: {type(e).__name__}: {e}", file=log)
            failures += len(groups[key])
            continue
        t_build += time.perf_counter() - t0
        for i, r in groups[key]:
            row, error = None, None
            sampler = probe_runs.run_sampler(r) or (lengths() if lengths else None)
            try:
                if model is None:
                    raise probe.torch.cuda.OutOfMemoryError("building the model")
                row = probe.run(model, vocab, r, sampler)
            except probe.torch.cuda.OutOfMemoryError:
                row = dict(probe.workload_row(r), oom=True)
                if sampler:
                    row.update(collation=sampler.padding, seq_len=length_batches.max_width(sampler))
            except Exception as e:
                error = f"{type(e).__name__}: {e}"
            if model is not None:
                model.zero_grad(set_to_none=True)
            probe.free()  # after the except block: the traceback no longer holds the step's tensors
            if error:
                failures += 1
                print(f"[{i}/{len(runs)}] {label(r)}: error: {error}", file=log, flush=True)
                continue
            row = check_row(row)  # None (not measured) dropped, as in the line written
            out.write(json_line(row) + "\n")
            out.flush()
            rows.append(row)
            print(f"[{i}/{len(runs)}] {label(r)}: {progress(row)}", file=log, flush=True)
        del model
        probe.free()
    print(f"probe: {len(rows)} of {len(runs)} runs in {time.perf_counter() - t_start:.1f} s "
          f"(imports {t_imports:.1f} s, {len(order)} models built in {t_build:.1f} s)", file=log, flush=True)
    return rows, failures


def progress(row):
    if row.get("oom"):
        return "out of memory"
    text = f"{row['step_time_s']:.4f} s/step"
    if "peak_reserved_bytes" in row:
        text += f", {row['peak_reserved_bytes'] / 2**30:.1f} GiB"
    return text


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m lorasim_hf.probe", description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", required=True, help="plan JSON written by `lorasim calibrate --stack hf-peft`")
    ap.add_argument("--lengths", help="train on sequences of these token lengths (a lengths file, docs/lengths.md)")
    ap.add_argument("--padding", default="longest", help="with --lengths: longest, multiple:N or max_length")
    ap.add_argument("--max-length", type=int, help="with --lengths: truncate sequences at this many tokens")
    ap.add_argument("--seed", type=int, default=0, help="with --lengths: seeds the order of the sequences")
    ap.add_argument("--quant", default="none", choices=QUANTS,
                    help="reload each model through bitsandbytes (QLoRA: double quantization, compute dtype = the "
                         "run's precision, prepare_model_for_kbit_training); CUDA and bitsandbytes only")
    ap.add_argument("--double-quant", default="true", choices=("true", "false"),
                    help="with --quant nf4 or fp4: bnb_4bit_use_double_quant (QLoRA's recipe: true)")
    args = ap.parse_args(argv)
    lengths = None
    try:
        if args.lengths:
            seqs = length_batches.read_lengths(args.lengths)
            length_batches.LengthSampler(seqs, args.padding, args.seed, args.max_length)  # refused before any run
            lengths = lambda: length_batches.LengthSampler(seqs, args.padding, args.seed, args.max_length)  # noqa: E731
        elif args.padding != "longest" or args.max_length is not None:
            raise ValueError("--padding and --max-length need --lengths FILE")
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    try:
        _, failures = run_plan(args.plan, lengths=lengths, quant=args.quant, double_quant=args.double_quant == "true")
    except MissingDependency as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except PlanError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
