"""The probe's plan: the runs `lorasim calibrate --stack hf-peft|lightning` asks lorasim_hf.probe to train,
checked and completed with their defaults, and each run's config as transformers builds it."""
import json
import os
import sys

from lorasim_hf import probe_runs
from lorasim_hf.probe_quant import PlanError
from lorasim_hf.rows import targets_cell
from lorasim_hf.targets import peft_target_modules

RUN_DEFAULTS = {"num_layers": None, "accumulation": 1, "steps": 3, "warmup_steps": 1, "grad_ckpt": False,
                "lora_rank": 16, "lora_alpha": 32.0, "lora_targets": "all", "lora_dropout": 0.0,
                "precision": "bf16", "autocast": True, "attn_impl": "sdpa",
                "loop": "trainer", "stack": "hf-peft",
                # the plan's own data of many lengths and TRL's fused LM head (docs/lengths.md)
                "fused_lm_head": False, "lengths": None, "padding": "longest", "lengths_seed": 0}
# "trainer": the step transformers' Trainer runs; "plain": the loop most scripts write --
# model(input_ids, labels=...), loss / accumulation, backward, torch.optim.AdamW's default
# (foreach) step, zero_grad -- with no fp32 output copies, clipping, NaN check or scheduler.
LOOPS = ("trainer", "plain")
# Who runs the step: "hf-peft" the probe's own loop (above); "lightning" a Lightning Trainer
# (lorasim_hf.probe_lightning) training the same model.
STACKS = ("hf-peft", "lightning")
RUN_REQUIRED = ("model", "hf_config", "seq_len", "micro_batch")
# Config keys that name files, code or a load-time dtype, not the architecture.
_DROPPED_CONFIG_KEYS = ("torch_dtype", "dtype", "auto_map", "quantization_config", "transformers_version",
                        "_name_or_path", "name_or_path")


def load_plan(source):
    """(device, allocator, runs) from a plan file path or dict, with the run defaults filled in."""
    if isinstance(source, dict):
        plan, name = source, "plan"
    else:
        name = os.fspath(source)
        try:
            with open(name) as f:
                plan = json.load(f)
        except (OSError, ValueError) as e:
            raise PlanError(f"cannot read plan '{name}': {e}") from None
    if not isinstance(plan, dict) or not isinstance(plan.get("runs"), list):
        raise PlanError(f"{name}: expected an object with a list 'runs'")
    device = plan.get("device", "cuda")
    allocator = plan.get("allocator", "expandable")
    if device not in ("cuda", "cpu"):
        raise PlanError(f"{name}: device must be cuda or cpu, got {device!r}")
    if allocator not in ("expandable", "default"):
        raise PlanError(f"{name}: allocator must be expandable or default, got {allocator!r}")
    runs = []
    for i, r in enumerate(plan["runs"], 1):
        where = f"{name}: run {i}"
        if not isinstance(r, dict):
            raise PlanError(f"{where}: expected an object")
        for k in RUN_REQUIRED:
            if r.get(k) is None:
                raise PlanError(f"{where}: missing '{k}'")
        if not isinstance(r["hf_config"], dict) or "model_type" not in r["hf_config"]:
            raise PlanError(f"{where}: hf_config must be a config.json object with model_type")
        run = dict(RUN_DEFAULTS)
        run.update({k: v for k, v in r.items() if v is not None})
        for k in ("seq_len", "micro_batch", "accumulation", "steps", "lora_rank"):
            if not isinstance(run[k], int) or isinstance(run[k], bool) or run[k] < 1:
                raise PlanError(f"{where}: {k} must be a whole number >= 1, got {run[k]!r}")
        if not isinstance(run["warmup_steps"], int) or run["warmup_steps"] < 0:
            raise PlanError(f"{where}: warmup_steps must be a whole number >= 0")
        if run["num_layers"] is not None and (not isinstance(run["num_layers"], int) or run["num_layers"] < 1):
            raise PlanError(f"{where}: num_layers must be null or a whole number >= 1")
        if run["loop"] not in LOOPS:
            raise PlanError(f"{where}: loop must be one of {', '.join(LOOPS)}, got {run['loop']!r}")
        if run["stack"] not in STACKS:
            raise PlanError(f"{where}: stack must be one of {', '.join(STACKS)}, got {run['stack']!r}")
        if run["stack"] == "lightning" and run["loop"] != "trainer":
            raise PlanError(f"{where}: a lightning run's loop is Lightning's; drop loop={run['loop']!r} or the stack")
        if run["precision"] not in ("bf16", "fp16", "fp32"):
            raise PlanError(f"{where}: precision must be bf16, fp16 or fp32")
        try:
            run["lora_targets"] = targets_cell(run["lora_targets"])
            peft_target_modules(run["hf_config"]["model_type"], run["lora_targets"])  # fused modules go whole
        except ValueError as e:
            raise PlanError(f"{where}: {e}") from None
        probe_runs.check_run(run, where, PlanError)
        unknown = sorted(set(r) - set(RUN_DEFAULTS) - set(RUN_REQUIRED))
        if unknown:  # a newer lorasim may plan more; say so, but measure what is understood
            print(f"probe: {where}: ignoring unknown key(s) {', '.join(unknown)}", file=sys.stderr)
        runs.append(run)
    return device, allocator, runs


def model_key(run):
    """Runs with equal keys share one built model (weights, adapters, checkpointing, fused head)."""
    return (json.dumps(run["hf_config"], sort_keys=True), run["num_layers"], run["precision"], run["attn_impl"],
            run["grad_ckpt"], run["lora_rank"], float(run["lora_alpha"]), run["lora_targets"],
            float(run["lora_dropout"]), bool(run["fused_lm_head"]))


def set_allocator(allocator):
    """PYTORCH_CUDA_ALLOC_CONF for the plan's allocator; must run before torch initialises CUDA."""
    for var in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
        parts = [p for p in os.environ.get(var, "").split(",") if p and not p.startswith("expandable_segments")]
        if var == "PYTORCH_CUDA_ALLOC_CONF" and allocator == "expandable":
            parts.append("expandable_segments:True")
        if parts:
            os.environ[var] = ",".join(parts)
        else:
            os.environ.pop(var, None)


def hf_config_kwargs(run):
    """The run's config.json fields, truncated to num_layers, as `AutoConfig.for_model` takes them."""
    d = {k: v for k, v in run["hf_config"].items() if k not in _DROPPED_CONFIG_KEYS}
    # A multimodal wrapper (gemma3) nests the decoder's fields in text_config: truncate those.
    text = d
    if isinstance(d.get("text_config"), dict):
        text = d["text_config"] = dict(d["text_config"])
    full, n = text.get("num_hidden_layers"), run["num_layers"]
    if n is not None:
        text["num_hidden_layers"] = n
        for k, v in text.items():  # per-layer lists (layer_types, ...) shrink with the model
            if isinstance(v, list) and isinstance(full, int) and len(v) == full:
                text[k] = v[:n]
    d["use_cache"] = False  # what Trainer sets (TrainingArguments.use_cache)
    return d
