"""lorasim's recommended split as `TrainingArguments` keyword arguments.

    from lorasim_hf import training_arguments
    split = training_arguments(model="qwen3-1.7b", effective_batch=32, seq_len=1024, gpu="t4")
    args = TrainingArguments(output_dir="out", **split)

`split` holds every argument the prediction assumed: the two batch sizes,
`gradient_checkpointing` and the mixed precision (`bf16` or `fp16`, by the GPU's support),
so nothing is set by hand. Runs `lorasim recommend --format json` (the binary from
`lorasim=`, else $LORASIM, else PATH).
"""
import copy
import enum
import json
import numbers
import os
import shutil
import subprocess
import sysconfig
import tempfile

from lorasim_hf.model_source import is_config, model_config_of, path_flags, write_config


class LorasimError(RuntimeError):
    """lorasim is missing, failed, or found no split that fits."""


def run_json(cmd):
    """The JSON a `lorasim ... --format json` command prints; LorasimError with its last error line."""
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except OSError as e:
        raise LorasimError(f"cannot run {cmd[0]}: {e}") from None
    if proc.returncode != 0:
        msg = (proc.stderr.strip() or proc.stdout.strip() or f"exit status {proc.returncode}").splitlines()[-1]
        raise LorasimError(f"lorasim {cmd[1]} failed: {msg}")
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise LorasimError(f"lorasim {cmd[1]} --format json printed no JSON: {proc.stdout[:200]}") from None


def find_lorasim(lorasim=None):
    """Path of the lorasim binary: the argument, else $LORASIM, else `lorasim` on PATH or in bin/ (pip install .)."""
    name = lorasim or os.environ.get("LORASIM") or "lorasim"
    path = shutil.which(name) or shutil.which(name, path=sysconfig.get_path("scripts"))
    if path is None:
        where = ("lorasim=" if lorasim else "$LORASIM" if os.environ.get("LORASIM") else "PATH")
        raise LorasimError(f"lorasim binary '{name}' not found (from {where}); build it (cmake --build build) "
                           "and pass lorasim='path/to/lorasim', set $LORASIM, or put it on PATH")
    return path


def known_models(lorasim=None):
    """The names of lorasim's architecture presets (`lorasim models --format json`)."""
    exe = find_lorasim(lorasim)
    try:
        proc = subprocess.run([exe, "models", "--format", "json"], capture_output=True, text=True, check=False)
        names = [m["name"] for m in json.loads(proc.stdout)]
    except (OSError, ValueError, TypeError, KeyError) as e:
        raise LorasimError(f"{exe} models --format json gave no list of presets: {e}") from None
    if proc.returncode != 0 or not names:
        raise LorasimError(f"{exe} models --format json failed: {proc.stderr.strip()}")
    return names


def is_config_path(model):
    """Whether lorasim reads `model` as a config.json path rather than a preset name."""
    return model.endswith(".json") or os.sep in model or bool(os.altsep and os.altsep in model)


def check_preset(name, lorasim=None):
    """`name` if it is one of lorasim's presets (or an existing config.json path, which the
    measurement format also takes); else ValueError naming the known presets."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"model_name must be a non-empty string, got {name!r}")
    if is_config_path(name):
        if not os.path.isfile(name):
            raise ValueError(f"model_name '{name}' names no config.json file")
        return name
    known = known_models(lorasim)
    if name not in known:
        close = [k for k in known if k.lower() == str(name).lower()]
        hint = f" (did you mean '{close[0]}'?)" if close else ""
        raise ValueError(f"model_name '{name}' is not a lorasim preset{hint}; known: {', '.join(known)} "
                         "(or leave model_name out, and the row names the model's config.json)")
    return name


def _flag(name):
    return "--" + name.replace("_", "-")


# Options lorasim reads as whole numbers, and those it reads as true/false. Python would turn
# 4.7 into "4.7" (or int() into 4) and 'false' into a true value; each is refused here instead.
_WHOLE = ("effective_batch", "seq_len", "lora_rank")
_BOOLEAN = ("autocast", "fused_lm_head", "double_quant", "kbit_prepare")
_TRAINERS = ("sft", "trainer", "loop")

# The TrainingArguments lorasim's JSON gives (recommended.training_arguments), by type.
_HF_SIZES = ("per_device_train_batch_size", "gradient_accumulation_steps")
_HF_BOOLEANS = ("gradient_checkpointing", "bf16", "fp16")


def whole_number(name, value, minimum=1):
    """`value` if it is an int (not a bool) >= minimum; else TypeError/ValueError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number (int), got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def boolean(name, value):
    """`value` if it is True or False; a string such as 'false' is refused (it is a true value)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r} ({type(value).__name__})")
    return value


def grad_ckpt_choice(value):
    """True, False or "auto" (lorasim weighs both); 'false' and 0 are refused, not read as booleans."""
    if value == "auto" and isinstance(value, str):
        return value
    if not isinstance(value, bool):
        raise TypeError(f"grad_ckpt must be True, False or 'auto', got {value!r} ({type(value).__name__})")
    return value


def model_flags(model, directory=None, lorasim=None):
    """`--model NAME` or `--model-config PATH` for any model training_arguments takes
    (lorasim_hf.model_source); a config or a model's is written into `directory` (None: a fresh
    temporary one, which the caller removes)."""
    config = model if is_config(model) else model_config_of(model)
    if config is not None:
        return ["--model-config", write_config(config, directory or tempfile.mkdtemp(prefix="lorasim-"))]
    if isinstance(model, (str, os.PathLike)) and os.fspath(model):
        return path_flags(os.fspath(model), lambda: known_models(lorasim))
    raise TypeError("model must be a preset name, a config.json path, a save_pretrained folder, a Hub id, a "
                    f"PretrainedConfig or a model, got {model!r} ({type(model).__name__})")


def recommend_command(model, effective_batch, seq_len, gpu=None, profile=None, lorasim=None, workdir=None,
                      **options):
    """The `lorasim recommend` command line for these arguments (a list); a config or a model is
    written into `workdir` (a fresh temporary directory where None: the caller removes it)."""
    if (gpu is None) == (profile is None):
        raise ValueError("give exactly one of gpu= (an embedded profile, e.g. 'h200') or profile= (a TOML file)")
    # Every argument is checked before the binary is looked for: a wrong call is named as such.
    effective_batch, seq_len = whole_number("effective_batch", effective_batch), whole_number("seq_len", seq_len)
    for key in _WHOLE[2:] + _BOOLEAN:
        if options.get(key) is not None:
            options[key] = (whole_number if key in _WHOLE else boolean)(key, options[key])
    if options.get("grad_ckpt") is not None:
        options["grad_ckpt"] = grad_ckpt_choice(options["grad_ckpt"])
    if options.get("trainer") is not None and options["trainer"] not in _TRAINERS:
        raise ValueError(f"trainer must be one of {', '.join(_TRAINERS)}, got {options['trainer']!r}")
    flags = model_flags(model, workdir, lorasim)
    cmd = [find_lorasim(lorasim), "recommend", "--format", "json"] + flags
    cmd += ["--effective-batch", str(effective_batch), "--seq-len", str(seq_len)]
    cmd += ["--gpu", gpu] if gpu is not None else ["--profile", os.fspath(profile)]
    # Only what the caller gives: a lorasim without the stack flags must still answer the rest.
    for key, value in options.items():
        if value is None:
            continue
        if key == "grad_ckpt":  # said either way: recommend's own default is auto
            cmd += ["--grad-ckpt", value if isinstance(value, str) else "true" if value else "false"]
        elif key == "lora_targets" and not isinstance(value, str):
            cmd += ["--lora-targets", ",".join(value)]
        elif isinstance(value, bool):
            cmd += [_flag(key), "true" if value else "false"]
        else:
            cmd += [_flag(key), str(value)]
    return cmd


def hf_arguments(recommended):
    """The TrainingArguments keywords of lorasim's `recommended` JSON object, each checked for its
    type: whole numbers for the sizes and booleans for the flags (LorasimError otherwise)."""
    args = recommended.get("training_arguments") if isinstance(recommended, dict) else None
    if not isinstance(args, dict):
        raise LorasimError("lorasim recommend gave no training_arguments: the binary is older than this package; "
                           "rebuild it (cmake --build build)")
    out = dict(args)
    for key in _HF_SIZES:
        value = args.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise LorasimError(f"lorasim recommend gave {key}={value!r}: not a whole number >= 1")
    for key in _HF_BOOLEANS:
        if not isinstance(args.get(key), bool):
            raise LorasimError(f"lorasim recommend gave {key}={args.get(key)!r}: not true or false")
    if "group_by_length" in args and not isinstance(args["group_by_length"], bool):
        raise LorasimError(f"lorasim recommend gave group_by_length={args['group_by_length']!r}: not true or false")
    if "optim" in args and not isinstance(args["optim"], str):
        raise LorasimError(f"lorasim recommend gave optim={args['optim']!r}: not a string")
    if args["bf16"] and args["fp16"]:
        raise LorasimError("lorasim recommend gave both bf16 and fp16: TrainingArguments takes one")
    return out


# lorasim's no_fit_advice (cli/no_fit_advice.h decides which apply), in this API's keywords.
_REMEDIES = {"grad_ckpt": "grad_ckpt='auto'", "seq_len": "a shorter seq_len", "max_length": "a shorter max_length",
             "quant": "quant='nf4'", "memory": "a GPU with more memory"}


def no_fit_message(result, effective_batch, seq_len, grad_ckpt):
    """The LorasimError text of a recommendation in which nothing fits: lorasim's advice (what would
    change the answer), with its note on a 4-bit base where it has one."""
    limit = result.get("usable_memory_bytes")
    where = f" in {limit / 2**30:.1f} GiB usable" if isinstance(limit, (int, float)) else ""
    tried = " with or without gradient checkpointing" if grad_ckpt in (None, "auto") else ""
    four_bit = [n for n in result.get("notes", []) if isinstance(n, str) and n.startswith("a 4-bit base would fit")]
    keys = [k for k in result.get("no_fit_advice") or [] if k in _REMEDIES]
    if not keys:  # a lorasim older than no_fit_advice: what it said then
        keys = ["grad_ckpt"] * (grad_ckpt is False) + ["seq_len"] + ["quant"] * bool(four_bit) + ["memory"]
    advice = [_REMEDIES[k] for k in keys]
    if four_bit and "quant" in keys:
        advice[keys.index("quant")] += f" ({four_bit[0]})"
    said = ", ".join(advice[:-1]) + " or " + advice[-1] if len(advice) > 1 else advice[0]
    return f"no split of effective batch {effective_batch} at {seq_len} tokens fits{where}{tried}; try {said}"


def _recommended(model, effective_batch, seq_len, gpu, profile, lorasim, grad_ckpt, **options):
    """lorasim's `recommended` object for these arguments; LorasimError when no split fits (saying
    what would, as lorasim decides it)."""
    with tempfile.TemporaryDirectory(prefix="lorasim-") as workdir:
        cmd = recommend_command(model, effective_batch, seq_len, gpu=gpu, profile=profile, lorasim=lorasim,
                                workdir=workdir, grad_ckpt=grad_ckpt, **options)
        result = run_json(cmd)
    best = result.get("recommended")
    if best is None:
        raise LorasimError(no_fit_message(result, effective_batch, seq_len, grad_ckpt))
    return best


def quantization_config(model, effective_batch, seq_len, gpu=None, profile=None, *, quant=None, double_quant=None,
                        lorasim=None, **options):
    """The BitsAndBytesConfig keywords lorasim's recommendation assumed ({"load_in_4bit": True,
    "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True, "bnb_4bit_compute_dtype": "bfloat16"}),
    for `BitsAndBytesConfig(**kw)`; None for a float base. Arguments as training_arguments'."""
    best = _recommended(model, effective_batch, seq_len, gpu, profile, lorasim, options.pop("grad_ckpt", None),
                        quant=quant, double_quant=double_quant, **options)
    config = best.get("quantization_config")
    if config is not None and not isinstance(config, dict):
        raise LorasimError(f"lorasim recommend gave quantization_config={config!r}: not an object")
    return config


def _model_quant_options(model, options):
    """What a quantized model says of itself (lorasim_hf.model_columns.quant_columns: PEFT's
    prepare_model_for_kbit_training is seen in its fp32 embeddings), for the options not given."""
    if model_config_of(model) is None or is_config(model):
        return options
    from lorasim_hf.model_columns import quant_columns  # a model: torch is there
    row = quant_columns(model)
    if row.get("quant", "none") == "none":
        return options
    if options.get("kbit_prepare") is None:
        options["kbit_prepare"] = row["kbit_prepare"]
    if options.get("adapter_dtype") is None and "adapter_dtype" in row:
        options["adapter_dtype"] = "compute" if row["adapter_dtype"] == row["precision"] != "fp32" else "fp32"
    return options


def _is_sft_config(args):
    return any(c.__name__ == "SFTConfig" for c in type(args).__mro__)


def with_split(args, split):
    """A copy of TrainingArguments / SFTConfig `args` with `split`'s keywords set."""
    out = copy.deepcopy(args)
    for key, value in split.items():
        current = getattr(out, key, None)
        # TrainingArguments keeps optim as transformers' OptimizerNames; a string would compare
        # equal, but the copy keeps the type the Trainer was given.
        setattr(out, key, type(current)(value) if isinstance(current, enum.Enum) else value)
    return out


def training_arguments(model, effective_batch, seq_len, gpu=None, profile=None, *, args=None, grad_ckpt=None,
                       trainer=None, lora_rank=None, lora_alpha=None, lora_targets=None, precision=None, stack=None,
                       attn_impl=None, lora_dropout=None, allocator=None, autocast=None, fused_lm_head=None,
                       memory_limit=None, safety_margin=None, quant=None, double_quant=None, kbit_prepare=None,
                       adapter_dtype=None, optim=None, lorasim=None):
    """lorasim's fastest split that fits, as every TrainingArguments keyword its prediction assumed:
    {"per_device_train_batch_size": b, "gradient_accumulation_steps": a, "gradient_checkpointing": ...,
    "bf16": ..., "fp16": ...}, so `TrainingArguments(output_dir=..., **split)` trains what was predicted.
    With `args=` (a TrainingArguments or TRL SFTConfig), a copy of it with those keywords set instead
    (an SFTConfig is trainer="sft" unless `trainer` says otherwise).

    `model` is a preset name (`lorasim models`), a config.json path, a `save_pretrained` folder, a
    transformers PretrainedConfig, a model (a PEFT model: its base's config; a quantized one also says
    whether prepare_model_for_kbit_training ran), or a Hub id with a preset of its name (lorasim
    downloads nothing). Options left at None are not passed (lorasim's defaults apply: grad_ckpt None
    is "auto", checkpointing weighed on and off). With TRL's SFTTrainer pass trainer="sft" (its
    defaults: fused LM head, checkpointing weighed). A quantized base: quant="nf4" (or "fp4", "int8";
    double_quant, kbit_prepare, adapter_dtype as lorasim's flags), and the result says `optim`;
    quantization_config() gives its BitsAndBytesConfig.
    Raises LorasimError when the binary is missing, fails, or no split fits.
    """
    if trainer is None and args is not None and _is_sft_config(args):
        trainer = "sft"
    options = _model_quant_options(model, {"kbit_prepare": kbit_prepare, "adapter_dtype": adapter_dtype})
    best = _recommended(model, effective_batch, seq_len, gpu, profile, lorasim, grad_ckpt, trainer=trainer,
                        lora_rank=lora_rank, lora_alpha=lora_alpha, lora_targets=lora_targets, precision=precision,
                        stack=stack, attn_impl=attn_impl, lora_dropout=lora_dropout, allocator=allocator,
                        autocast=autocast, fused_lm_head=fused_lm_head, memory_limit=memory_limit,
                        safety_margin=safety_margin, quant=quant, double_quant=double_quant, optim=optim, **options)
    split = hf_arguments(best)
    return split if args is None else with_split(args, split)
