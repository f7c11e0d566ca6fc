"""The probe's quantized base (`python -m lorasim_hf.probe --quant nf4|fp4|int8`, issue 18): each
model built from its config is saved, reloaded through bitsandbytes as a QLoRA user loads it, and
prepared by PEFT; refused clearly where bitsandbytes cannot run (the CPU, or not installed)."""
import importlib
import tempfile

from lorasim_hf._deps import MissingDependency

QUANTS = ("none", "nf4", "fp4", "int8")


class PlanError(ValueError):
    """A plan (or a probe option) that cannot be run; the probe's own error type."""


def check_quant(quant, device):
    """Refuses --quant where bitsandbytes cannot run it: on the CPU, or without bitsandbytes installed."""
    if quant not in QUANTS:
        raise PlanError(f"--quant must be one of {', '.join(QUANTS)}, got {quant!r}")
    if quant == "none":
        return
    if device != "cuda":
        raise PlanError(f"--quant {quant}: bitsandbytes quantizes on CUDA only; the plan runs on {device} "
                        "(calibrate a quantized base on the GPU: `lorasim calibrate --stack hf-peft --device cuda`)")
    try:
        importlib.import_module("bitsandbytes")
    except ImportError:
        raise MissingDependency(f"--quant {quant} needs the python package bitsandbytes (pip install bitsandbytes)") \
            from None


def load_quantized(probe, model, run, dtype):
    """`model` saved and reloaded through bitsandbytes (BitsAndBytesConfig with the probe's double
    quantization, QLoRA's by default, compute dtype = the run's precision), then prepared by
    peft.prepare_model_for_kbit_training with its defaults (fp32 non-quantized parameters,
    reentrant checkpointing) -- what a QLoRA script does to a checkpoint."""
    torch, transformers, peft = probe.torch, probe.transformers, probe.peft
    if not run["grad_ckpt"]:
        raise PlanError(f"--quant {probe.quant}: prepare_model_for_kbit_training turns checkpointing on; "
                        "plan the runs with grad_ckpt true")
    if probe.quant == "int8":
        bnb = transformers.BitsAndBytesConfig(load_in_8bit=True)
    else:
        bnb = transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=probe.quant,
                                              bnb_4bit_use_double_quant=probe.double_quant, bnb_4bit_compute_dtype=dtype)
    with tempfile.TemporaryDirectory(prefix="lorasim-probe-") as d:
        model.save_pretrained(d)
        del model
        probe.free()
        model = transformers.AutoModelForCausalLM.from_pretrained(
            d, quantization_config=bnb, dtype=dtype, device_map={"": torch.cuda.current_device()},
            attn_implementation=run["attn_impl"])
    return peft.prepare_model_for_kbit_training(model)


def fused_adamw(run):
    """Whether the run's AdamW is fused: Trainer's default is; the plain loop's default is not, nor a
    lightning run's under mixed precision (Lightning refuses to clip the gradients of an optimizer
    that could unscale them itself, a fused one)."""
    lightning_mixed = run["stack"] == "lightning" and run["autocast"]
    return run["loop"] != "plain" and not lightning_mixed


def quant_columns(quant, run, double_quant=True):
    """The row's quant and optim columns: the probe's optimizer is torch's AdamW (fused_adamw); a
    quantized base is QLoRA's recipe, prepared."""
    row = {"optim": "adamw_torch_fused" if fused_adamw(run) else "adamw_torch", "quant": quant}
    if quant != "none":
        row.update(double_quant=quant != "int8" and double_quant, kbit_prepare=True)
    return row
