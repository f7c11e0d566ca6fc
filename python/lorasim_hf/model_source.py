"""What `training_arguments(model=...)` accepts, as the flag `lorasim recommend` reads it.

A preset name (`lorasim models`), a config.json path, a `save_pretrained` folder (its config.json;
a PEFT adapter folder, its base model), a transformers `PretrainedConfig`, a model (a PEFT model:
its base model's config), or a Hugging Face Hub id: its preset where one has the id's name, else a
ValueError saying to pass the config or a local folder -- lorasim downloads nothing. Needs neither
torch nor transformers: a config or a model comes with them.
"""
import json
import os
import re

# "Qwen/Qwen3-1.7B": an organisation and a repository name, nothing on disk.
_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")
# A fine-tuned variant has its base's architecture: "Llama-3.1-8B-Instruct" is llama-3.1-8b.
_VARIANTS = ("-instruct", "-chat", "-base", "-hf", "-it")


def config_bytes(config):
    """The model's config.json as lorasim reads it (with a top-level rope_theta), in a stable form:
    equal configs give equal bytes, so they share one stored file."""
    d = config.to_dict()
    rope = d.get("rope_parameters") or {}
    if "rope_theta" not in d and isinstance(rope, dict) and "rope_theta" in rope:
        d["rope_theta"] = rope["rope_theta"]
    for k in ("_name_or_path", "name_or_path", "transformers_version"):  # where it came from, not what it is
        d.pop(k, None)
    return (json.dumps(d, indent=2, sort_keys=True, default=str) + "\n").encode()


def write_config(config, directory):
    """Writes the model's config.json (config_bytes) into `directory` and returns its absolute path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.abspath(os.path.join(directory, getattr(config, "model_type", None) or "model") + ".json")
    with open(path, "wb") as f:
        f.write(config_bytes(config))
    return path


def base_model(model):
    """The transformers model under a PEFT model (the model itself otherwise)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def is_config(obj):
    """Whether `obj` is a transformers PretrainedConfig (or quacks like one)."""
    return callable(getattr(obj, "to_dict", None)) and isinstance(getattr(obj, "model_type", None), str)


def model_config_of(obj):
    """The PretrainedConfig of a model or a PEFT model; None for anything else."""
    config = getattr(base_model(obj), "config", None)
    return config if is_config(config) else None


def hub_preset(hub_id, presets):
    """The preset whose name is the Hub id's repository name (any case, a chat/instruct variant's
    base), or None."""
    name = hub_id.rsplit("/", 1)[-1].lower()
    for candidate in [name] + [name[:-len(v)] for v in _VARIANTS if name.endswith(v)]:
        if candidate in presets:
            return candidate
    return None


def _folder_flags(folder, presets):
    config = os.path.join(folder, "config.json")
    if os.path.isfile(config):
        return ["--model-config", config]
    adapter = os.path.join(folder, "adapter_config.json")
    if os.path.isfile(adapter):  # PEFT's save_pretrained: the adapter alone, its base named
        with open(adapter) as f:
            base = json.load(f).get("base_model_name_or_path")
        if isinstance(base, str) and base:
            return path_flags(base, presets)
    raise ValueError(f"model folder '{folder}' has no config.json (save_pretrained writes one) and no "
                     "adapter_config.json naming a base model: pass the folder the model was saved to")


def path_flags(model, presets):
    """The lorasim flags of a string model: `presets` is a callable giving lorasim's preset names
    (only asked for a Hub id). ValueError for a folder without a config or an unknown Hub id."""
    if os.path.isdir(model):
        return _folder_flags(model, presets)
    if os.path.isfile(model):
        return ["--model-config", model]
    if model.endswith(".json"):
        raise ValueError(f"model '{model}' names no config.json file")
    if _HUB_ID.fullmatch(model) and not model.startswith("."):
        known = presets()
        preset = hub_preset(model, known)
        if preset is None:
            raise ValueError(f"model '{model}' is a Hugging Face Hub id that no lorasim preset matches ({', '.join(known)}),"
                             f" and lorasim downloads nothing: pass its config (AutoConfig.from_pretrained('{model}')),"
                             " the model itself, or a local folder with its config.json")
        return ["--model", preset]
    if os.sep in model or (os.altsep and os.altsep in model):
        raise ValueError(f"model '{model}' is neither a file nor a folder")
    return ["--model", model]
