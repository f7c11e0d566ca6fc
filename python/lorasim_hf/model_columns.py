"""What a transformers / PEFT model says of itself, as measurement-row columns and lorasim flags:
its adapter (rank, alpha, targets, dropout), its precision, TRL's fused LM head, a quantized base's
recipe, and the allocator the environment asks for. Shared by the callbacks, the tuner and
`training_arguments` (which imports it only when given a model: torch is there then)."""
import os
import re
import warnings

from lorasim_hf._deps import require
from lorasim_hf.targets import MODULE_PARTS, short_names

_torch = require("torch")

# PEFT module names -> lorasim's projections (Phi-3's qkv_proj and gate_up_proj stand for several).
_PROJECTIONS = MODULE_PARTS
_PRECISIONS = {_torch.bfloat16: "bf16", _torch.float16: "fp16", _torch.float32: "fp32"}
_ATTN = ("sdpa", "eager", "flash_attention_2")
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
