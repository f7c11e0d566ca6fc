"""The probe's runs on the calibration plan's own lengths and through TRL's fused LM head
(docs/lengths.md, "Calibrating new shapes and the allocator's hold"): checking a run's keys for
them, its sampler, which models share the kernels' choices per shape, and the fused head's loss
as SFTTrainer computes it. torch is passed in; trl is imported only by a fused-head run.
"""
import importlib
import json

from lorasim_hf import length_batches

# SFTTrainer (TRL 1.16) asks the fused head for these per-token fields: the loss's log-probs and
# the entropy and accuracy metrics it logs.
SFT_OUTPUTS = ("log_probs", "entropy", "is_top1")


def check_run(run, where, error):
    """A run's own lengths ([[length, count], ...]), padding and seed, and its fused-head flag;
    raises `error` naming `where`."""
    if not isinstance(run["fused_lm_head"], bool):
        raise error(f"{where}: fused_lm_head must be true or false")
    if run["lengths"] is None:
        return
    pairs = run["lengths"]
    if not isinstance(pairs, list) or not pairs or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(x, int) and not isinstance(x, bool) for x in p)
            and p[0] >= 1 and p[1] >= 0 for p in pairs) or sum(p[1] for p in pairs) < 1:
        raise error(f"{where}: lengths must be a list of [length >= 1, count >= 0] pairs with some count")
    try:
        length_batches.parse_padding(run["padding"])
    except (ValueError, TypeError) as e:
        raise error(f"{where}: {e}") from None
    if not isinstance(run["lengths_seed"], int) or isinstance(run["lengths_seed"], bool):
        raise error(f"{where}: lengths_seed must be a whole number")


def run_sampler(run):
    """A fresh sampler of the run's own lengths (truncated at its seq_len), or None."""
    if run["lengths"] is None:
        return None
    seqs = [length for length, count in run["lengths"] for _ in range(count)]
    return length_batches.LengthSampler(seqs, run["padding"], run["lengths_seed"], run["seq_len"])


def has_trl():
    try:
        importlib.import_module("trl")
        return True
    except ImportError:
        return False


def shape_key(run):
    """Models whose GEMMs and kernels are alike at one (rows, width), whatever their depth: the
    kernels chosen for a shape by one serve the other."""
    cfg = {k: v for k, v in run["hf_config"].items() if k != "num_hidden_layers" and not isinstance(v, list)}
    return (json.dumps(cfg, sort_keys=True), run["precision"], run["attn_impl"], run["lora_rank"],
            run["lora_targets"], bool(run["fused_lm_head"]), bool(run["autocast"]))


def add_fused_head(model):
    """TRL's fused LM head on the base model, as SFTTrainer installs it (before PEFT wraps it)."""
    from trl.trainer.utils import add_fused_lm_head
    add_fused_lm_head(model, outputs=SFT_OUTPUTS)


def fused_loss(torch, model, inputs, n_items, half, autocast, plain_accumulation=None):
    """SFTTrainer.compute_loss's loss (TRL 1.16): the fused head's per-token log-probs summed over
    the window's tokens (`n_items`; a plain loop: this micro-batch's, over `plain_accumulation`),
    and its entropy and accuracy metrics, each a host sync as SFTTrainer logs them."""
    device = inputs["input_ids"].device.type
    with torch.autocast(device, dtype=half, enabled=autocast):
        out = model(**inputs, fused_lm_head=True)
    valid = out.label_mask.sum()
    (out.entropy.detach().sum() / valid).item()
    (out.is_top1.sum() / valid).item()
    n = n_items if plain_accumulation is None else valid.clamp(min=1) * plain_accumulation
    return -out.log_probs.sum() / n
