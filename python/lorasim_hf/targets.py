"""LoRA targets: lorasim's projection names (q, k, v, o, gate, up, down) and the module names PEFT
matches in each model_type. Phi-3 fuses q/k/v into one `qkv_proj` and gate/up into `gate_up_proj`;
a fused module is adapted whole, so its parts go together (model/analytics.h: block_projections)."""
import re

SHORT_NAMES = ("q", "k", "v", "o", "gate", "up", "down")
# Every module name lorasim knows, with the projections it stands for.
MODULE_PARTS = {"q_proj": ("q",), "k_proj": ("k",), "v_proj": ("v",), "o_proj": ("o",), "gate_proj": ("gate",),
                "up_proj": ("up",), "down_proj": ("down",), "qkv_proj": ("q", "k", "v"),
                "gate_up_proj": ("gate", "up")}
_PLAIN = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
_FUSED = ("qkv_proj", "o_proj", "gate_up_proj", "down_proj")
_FUSED_TYPES = ("phi3",)
# Multimodal wrappers whose vision tower has modules of the same names: adapt the language model only.
_TEXT_ONLY = {"gemma3": "language_model"}


def modules(model_type):
    """The block's linear modules in `model_type`, in lorasim's order."""
    return _FUSED if model_type in _FUSED_TYPES else _PLAIN


def short_names(module_names):
    """lorasim's projection names for PEFT module names (unknown ones are left out)."""
    out = []
    for n in module_names:
        out += [p for p in MODULE_PARTS.get(n, ()) if p not in out]
    return out


def peft_target_modules(model_type, short_targets):
    """PEFT's target_modules for lorasim's projections ('all', a list of short names or a rows
    cell 'q;v') in `model_type`: a list of module names, or a regex when a vision tower shares
    the names. Raises ValueError when only part of a fused module is asked for."""
    if isinstance(short_targets, str) and short_targets != "all":
        short_targets = short_targets.split(";")
    chosen = set(SHORT_NAMES if short_targets == "all" else short_targets)
    names = []
    for module in modules(model_type):
        parts = MODULE_PARTS[module]
        n = sum(p in chosen for p in parts)
        if n == len(parts):
            names.append(module)
        elif n:
            raise ValueError(f"{model_type} fuses {', '.join(parts)} into {module}: adapt all of them "
                             f"({module}) or none")
    if model_type in _TEXT_ONLY:
        return rf".*{_TEXT_ONLY[model_type]}\..*\.({'|'.join(map(re.escape, names))})"
    return names
