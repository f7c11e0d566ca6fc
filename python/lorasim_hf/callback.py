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
import re
import statistics
import time
import warnings

from lorasim_hf._deps import require
from lorasim_hf.model_source import config_bytes, write_config  # noqa: F401 (tune_workload's, saved_tensors')
from lorasim_hf.recommend import LorasimError, check_preset, is_config_path, whole_number
from lorasim_hf.rows import RowWriter, check_row, store_config
from lorasim_hf.seen import SeenBatches, device_columns
from lorasim_hf.targets import MODULE_PARTS, short_names

_torch, _transformers = require("torch", "transformers")

# PEFT module names -> lorasim's projections (Phi-3's qkv_proj and gate_up_proj stand for several).
_PROJECTIONS = MODULE_PARTS
_PRECISIONS = {_torch.bfloat16: "bf16", _torch.float16: "fp16", _torch.float32: "fp32"}
_ATTN = ("sdpa", "eager", "flash_attention_2")
# Every column a row of the callback may carry: an existing CSV's header must have them all.
ROW_COLUMNS = ("model", "seq_len", "micro_batch", "accumulation", "grad_ckpt", "lora_rank", "lora_alpha",
               "lora_targets", "precision", "oom", "step_time_s", "peak_allocated_bytes", "peak_reserved_bytes",
               "stack", "attn_impl", "lora_dropout", "allocator", "autocast", "loop", "fused_lm_head",
               "device", "device_memory_bytes", "processes", "collation", "padded_lengths", "real_tokens",
               "new_shapes_per_step", "model_config_sha256", "quant", "double_quant", "kbit_prepare", "optim",
               "adapter_dtype")
# TrainingArguments.optim values lorasim counts (transformers' alias adamw_8bit is adamw_bnb_8bit).
_OPTIMS = {"adamw_torch": "adamw_torch", "adamw_torch_fused": "adamw_torch_fused",
           "paged_adamw_8bit": "paged_adamw_8bit", "paged_adamw_32bit": "paged_adamw_32bit",
           "adamw_bnb_8bit": "adamw_bnb_8bit", "adamw_8bit": "adamw_bnb_8bit"}
_DTYPE_NAMES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def allocator_from_env(env=None):
    """'expandable' when PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF turns expandable segments on."""
    env = os.environ if env is None else env
    conf = ",".join(env.get(v, "") for v in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"))
    settings = dict(p.split(":", 1) for p in conf.replace(" ", "").split(",") if ":" in p)
    return "expandable" if settings.get("expandable_segments", "").lower() == "true" else "default"


def _base_model(model):
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def _lora_config(model):
    """The active adapter's PEFT config (PeftModel, or a transformers model with add_adapter), or None."""
    configs = getattr(model, "peft_config", None)
    if not configs:
        return None
    active = getattr(model, "active_adapter", None)
    if callable(active):  # transformers' integration has it as a method
        active = active()
    if isinstance(active, (list, tuple)):
        active = active[0] if active else None
    return configs.get(active) or next(iter(configs.values()))


def lora_columns(model):
    """lora_rank, lora_alpha, lora_targets, lora_dropout of the model's LoRA adapter (empty if none)."""
    cfg = _lora_config(model)
    if cfg is None or str(getattr(cfg, "peft_type", "")).split(".")[-1] != "LORA":
        warnings.warn("LorasimCallback: the model has no LoRA adapter; the row gets lorasim's LoRA defaults")
        return {}
    if getattr(cfg, "use_dora", False):
        warnings.warn("LorasimCallback: DoRA adapters cost more than the LoRA lorasim models")
    targets = cfg.target_modules
    if isinstance(targets, str):
        # A pattern PEFT full-matches against module paths (Gemma 3: the language model's only).
        matched = {n.rsplit(".", 1)[-1] for n, _ in model.named_modules() if re.fullmatch(targets, n)}
        names = _PROJECTIONS if targets == "all-linear" else [
            p for p in _PROJECTIONS if p in matched or re.fullmatch(targets, p) or re.search(rf"(^|\.){p}$", targets)]
    else:
        names = [t.split(".")[-1] for t in targets]
    short = short_names(names)
    unknown = sorted(set(names) - set(_PROJECTIONS))
    if unknown:
        warnings.warn(f"LorasimCallback: LoRA targets {', '.join(unknown)} are not projections lorasim models; "
                      "left out of lora_targets")
    row = {"lora_rank": int(cfg.r), "lora_alpha": float(cfg.lora_alpha), "lora_dropout": float(cfg.lora_dropout)}
    if short:
        row["lora_targets"] = short  # the writer puts them in lorasim's order
    return row


def fused_lm_head(model):
    """Whether TRL's fused LM head drives the loss: SFTTrainer (TRL 1.x) patches the base model's
    forward with one that computes per-token log-probs in tiles, never the full logits."""
    forward = getattr(_base_model(model), "forward", None)
    code = getattr(getattr(forward, "__func__", forward), "__code__", None)
    return getattr(code, "co_name", "") == "_fused_forward"


def model_precision(model):
    """bf16/fp16/fp32 of the frozen weights (PEFT keeps adapters in fp32 under a half-precision model)."""
    params = list(model.parameters())
    frozen = [p for p in params if not p.requires_grad and p.is_floating_point()] or params
    return _PRECISIONS.get(frozen[0].dtype) if frozen else None


def _quantization_config(base):
    return getattr(base, "quantization_config", None) or getattr(base.config, "quantization_config", None)


def _qget(qc, key, default=None):
    return qc.get(key, default) if isinstance(qc, dict) else getattr(qc, key, default)


def _dtype_name(dtype):
    """'bf16' of torch.bfloat16 or 'bfloat16' / 'torch.bfloat16'; None otherwise."""
    if dtype in _PRECISIONS:
        return _PRECISIONS[dtype]
    return _DTYPE_NAMES.get(str(dtype).replace("torch.", "")) if dtype is not None else None


def quant_columns(model, args=None):
    """quant, double_quant, kbit_prepare (and the compute precision) of a bitsandbytes base, and optim.

    A quantized base is what transformers says it loaded (is_loaded_in_4bit / is_loaded_in_8bit, else
    its quantization_config). prepare_model_for_kbit_training leaves the embeddings in fp32 under a
    half-precision compute dtype: that is how its preparation is seen."""
    base = _base_model(model)
    row = {}
    optim = getattr(getattr(args, "optim", None), "value", getattr(args, "optim", None)) if args is not None else None
    if optim is not None:
        if str(optim) in _OPTIMS:
            row["optim"] = _OPTIMS[str(optim)]
        else:
            warnings.warn(f"LorasimCallback: optimizer {optim!r} is not one lorasim counts "
                          f"({', '.join(sorted(set(_OPTIMS.values())))}); optim left out")
    qc = _quantization_config(base)
    four = bool(getattr(base, "is_loaded_in_4bit", False))
    eight = bool(getattr(base, "is_loaded_in_8bit", False))
    if qc is not None and not (four or eight):
        four, eight = bool(_qget(qc, "load_in_4bit", False)), bool(_qget(qc, "load_in_8bit", False))
    if not (four or eight):
        row["quant"] = "none"
        return row
    if four:
        row["quant"] = str(_qget(qc, "bnb_4bit_quant_type", "fp4")) if qc is not None else "nf4"
        row["double_quant"] = bool(_qget(qc, "bnb_4bit_use_double_quant", False)) if qc is not None else False
        compute = _dtype_name(_qget(qc, "bnb_4bit_compute_dtype")) if qc is not None else None
    else:
        row["quant"], row["double_quant"] = "int8", False
        compute = _dtype_name(getattr(base.config, "dtype", None) or getattr(base.config, "torch_dtype", None))
    # BitsAndBytesConfig computes a 4-bit base in fp32 unless told otherwise.
    row["precision"] = compute or "fp32"
    embeddings = base.get_input_embeddings() if hasattr(base, "get_input_embeddings") else None
    weight = getattr(embeddings, "weight", None)
    row["kbit_prepare"] = bool(weight is not None and weight.dtype == _torch.float32 and row["precision"] != "fp32") \
        or (row["precision"] == "fp32" and bool(getattr(base, "is_gradient_checkpointing", False)))
    # TRL's SFTTrainer keeps a quantized base's adapters in the compute dtype; PEFT casts them to fp32.
    params = getattr(model, "parameters", None)
    trainable = next((p for p in params() if p.requires_grad), None) if callable(params) else None
    if trainable is not None:
        row["adapter_dtype"] = _dtype_name(trainable.dtype) or "fp32"
    return row


def quant_flags(model, args=None):
    """(row columns, lorasim flags) of a quantized base as the model shows it: whether
    prepare_model_for_kbit_training ran (its fp32 embeddings), the adapters' dtype and optim; ({}, [])
    for a float base, whose config carries nothing to reconcile."""
    row = quant_columns(model, args)
    if row.get("quant", "none") == "none":
        return {}, []
    compute = row["adapter_dtype"] == row["precision"] != "fp32" if "adapter_dtype" in row else False
    flags = ["--kbit-prepare", "true" if row["kbit_prepare"] else "false",
             "--adapter-dtype", "compute" if compute else "fp32"]
    if "optim" in row:
        flags += ["--optim", row["optim"]]
    return row, flags


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
