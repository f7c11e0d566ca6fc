"""A transformers `TrainerCallback` that writes a measurement row of the training it watches.

    trainer = Trainer(model=peft_model, args=args, train_dataset=ds,
                      callbacks=[LorasimCallback("runs.jsonl", model_name="qwen3-1.7b")])
    trainer.train()
    # then: lorasim validate --measurements runs.jsonl --gpu h200

It never changes training: it reads `args`, the model and its PEFT config, times the steady-state
optimizer steps (from `on_step_begin` to `on_step_end`, synchronized on CUDA; the first
`warmup_steps` are left out) and reads peak allocated and reserved memory over the timed steps.
A forward pre-hook records what the model saw in each timed micro-batch (lorasim_hf.seen): the
row's `micro_batch` and `seq_len` are the rows and the largest padded width the model got (TRL's
`packing=True` gives 1 x ~max_length, not per_device_train_batch_size x max_length), with the
padded widths' histogram, the real tokens and the collation; and the device, its memory and the
number of processes. With one shape the row's step time is the median timed step; with many
widths it is their mean, and `new_shapes_per_step` says how many micro-batches per step met a
shape the process had not run before (each pays its kernels' selection once). Works with any `Trainer` subclass (TRL's `SFTTrainer`). One row is appended
at the end of training. Under `torchrun` / `accelerate launch` (data parallel) every rank times its
own steps but only rank 0 (`state.is_world_process_zero`) writes: `processes` is the world size and
`micro_batch` / `accumulation` are each process's, so the row's effective batch is their product.
"""
import json
import os
import statistics
import time
import warnings

from lorasim_hf._deps import require
from lorasim_hf.model_columns import (_ATTN, _base_model, allocator_from_env, fused_lm_head, lora_columns,
                                      model_precision, quant_columns)
from lorasim_hf.model_source import config_bytes
from lorasim_hf.recommend import LorasimError, check_preset, is_config_path, whole_number
from lorasim_hf.rows import RowWriter, check_row, store_config
from lorasim_hf.seen import SeenBatches, device_columns

_torch, _transformers = require("torch", "transformers")

# Every column a row of the callback may carry: an existing CSV's header must have them all.
ROW_COLUMNS = ("model", "seq_len", "micro_batch", "accumulation", "grad_ckpt", "lora_rank", "lora_alpha",
               "lora_targets", "precision", "oom", "step_time_s", "peak_allocated_bytes", "peak_reserved_bytes",
               "stack", "attn_impl", "lora_dropout", "allocator", "autocast", "loop", "fused_lm_head",
               "device", "device_memory_bytes", "processes", "collation", "padded_lengths", "real_tokens",
               "new_shapes_per_step", "model_config_sha256", "quant", "double_quant", "kbit_prepare", "optim",
               "adapter_dtype")


class LorasimCallback(_transformers.TrainerCallback):
    """Appends one lorasim measurement row (.csv or .jsonl `path`) per training run.

    model_name: a lorasim preset (`lorasim models`) naming the model, or a config.json path;
    without a preset the config is stored beside the rows by content hash
    (`<rows-stem>.configs/<hash>.json`) and the row names it relative to the rows file, with its
    `model_config_sha256`, so the rows file moves with its folder. The name is checked
    against the presets of the lorasim binary (`lorasim=`, else $LORASIM, else PATH) when one is
    found. The path is checked here and again when training begins: a row that cannot be written
    is refused before the run, not lost after it.
    """

    stack = "hf-peft"  # the rows' `stack`: the program that trains (LorasimRecorder's rows: lightning)

    def __init__(self, path, warmup_steps=2, model_name=None, lorasim=None):
        warmup_steps = whole_number("warmup_steps", warmup_steps, minimum=0)
        self.path, self.warmup_steps, self.model_name = os.fspath(path), warmup_steps, model_name
        self.writer = self._checked_writer()
        if model_name is not None:
            try:
                check_preset(model_name, lorasim)
            except LorasimError as e:  # no binary here (training elsewhere): say so, keep going
                warnings.warn(f"LorasimCallback: model_name '{model_name}' not checked against lorasim's "
                              f"presets: {e}")
        self.row = None
        self._reset()

    def _checked_writer(self):
        writer = RowWriter(self.path)  # refuses a bad extension or an unknown header column
        writer.check(ROW_COLUMNS)
        return writer

    def _reset(self):
        self._done, self._t0, self._timing, self._hook, self._cuda = 0, None, False, None, False
        self._times, self._peaks, self._collator = [], None, None
        self._seen = SeenBatches(_torch)

    def _sync(self):
        if self._cuda:
            _torch.cuda.synchronize()

    def on_train_begin(self, args, state, control, model=None, train_dataloader=None, **kwargs):
        self.writer = self._checked_writer()  # the file may have changed since construction
        self._reset()
        self._cuda = args.device.type == "cuda" and _torch.cuda.is_available()
        self._collator = getattr(train_dataloader, "collate_fn", None)
        if model is not None:
            self._hook = model.register_forward_pre_hook(self._seen, with_kwargs=True)
        if self.warmup_steps == 0:
            self._start_timing()

    def _start_timing(self):
        self._timing = self._seen.active = True
        if self._cuda:
            self._sync()
            _torch.cuda.reset_peak_memory_stats()

    def on_step_begin(self, args, state, control, **kwargs):
        if self._timing:
            self._sync()
            self._t0 = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):
        if self._timing and self._t0 is not None:
            self._sync()
            self._times.append(time.perf_counter() - self._t0)
            if self._cuda:
                self._peaks = (_torch.cuda.max_memory_allocated(), _torch.cuda.max_memory_reserved())
        self._done += 1
        self._t0 = None
        if not self._timing and self._done >= self.warmup_steps:
            self._start_timing()

    def on_train_end(self, args, state, control, model=None, **kwargs):
        if self._hook is not None:
            self._hook.remove()
            self._hook = None
        self._timing = self._seen.active = False
        if not state.is_world_process_zero:
            return
        if not self._times or not self._seen.shapes:
            why = (f"no step after the {self.warmup_steps} warm-up steps was timed ({self._done} steps ran)"
                   if not self._times else "no training forward with input_ids was seen, so no seq_len")
            warnings.warn(f"LorasimCallback: {why}; no row written to {self.path}")
            return
        row = self.workload_row(args, model)
        # One shape: the median step is the steady state. Many widths: the mean, which is what a
        # prediction from the widths (or the lengths) gives, with the new shapes' share of it.
        varying = len({w for _, w in self._seen.shapes}) > 1
        row.update(oom=False, step_time_s=statistics.fmean(self._times) if varying else statistics.median(self._times),
                   new_shapes_per_step=self._seen.new_shapes / len(self._times) if varying else 0.0)
        if self._peaks:
            row.update(peak_allocated_bytes=self._peaks[0], peak_reserved_bytes=self._peaks[1])
        self.row = check_row(row)
        self.writer.write(self.row)

    def workload_row(self, args, model):
        base = _base_model(model)
        config = base.config
        row = {"accumulation": int(args.gradient_accumulation_steps),
               "grad_ckpt": bool(args.gradient_checkpointing or getattr(base, "is_gradient_checkpointing", False)),
               "precision": model_precision(model), "autocast": bool(args.bf16 or args.fp16),
               "allocator": allocator_from_env(), "stack": self.stack, "loop": "trainer",
               "fused_lm_head": fused_lm_head(model)}
        row.update(self.model_columns(config))
        row.update(self._seen.columns(args, self._collator))  # micro_batch, seq_len: what the model saw
        row.update(device_columns(_torch, args.device, getattr(args, "world_size", None)))
        row.update(lora_columns(model))
        row.update(quant_columns(model, args))  # a bitsandbytes base: its compute dtype is the precision
        attn = getattr(config, "_attn_implementation", None)
        if attn in _ATTN:
            row["attn_impl"] = attn
        else:
            warnings.warn(f"LorasimCallback: attention implementation {attn!r} is not one lorasim models "
                          f"({', '.join(_ATTN)}); attn_impl left out")
        return row

    def model_columns(self, config):
        """model (and model_config_sha256 for a config): a preset as given; a config stored beside the rows."""
        if self.model_name and not is_config_path(self.model_name):
            return {"model": self.model_name}
        if self.model_name:
            with open(self.model_name, "rb") as f:
                data = f.read()
        else:
            data = config_bytes(config)
        name, digest = store_config(data, self.path)
        return {"model": name, "model_config_sha256": digest}
