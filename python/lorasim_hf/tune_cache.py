"""Where the tuner keeps its refined profiles and trial rows: a per-user cache directory, one
folder per device and software versions (a profile refined on one GPU with one torch,
transformers and peft describes exactly that stack), reused as the base of the next tune there.
"""
import importlib
import os
import re
import time

from lorasim_hf._deps import require

# The embedded profile of a CUDA device, by the words of torch.cuda.get_device_name; first match wins.
_GPU_NAMES = (("h200", "h200"), ("h100", "h100-sxm"), ("a100", None), ("a10g", "a10g"), ("l4", "l4"),
              ("t4", "t4"))


def default_cache_dir():
    """$LORASIM_CACHE_DIR, else $XDG_CACHE_HOME/lorasim/tune, else ~/.cache/lorasim/tune."""
    if os.environ.get("LORASIM_CACHE_DIR"):
        return os.environ["LORASIM_CACHE_DIR"]
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "lorasim", "tune")


def device_name(device):
    torch = require("torch")
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return "cpu"


def embedded_gpu(name, memory_bytes=None):
    """The embedded profile for a CUDA device name, or None when lorasim has none for it."""
    low = name.lower()
    for word, profile in _GPU_NAMES:
        if re.search(rf"\b{word}\b", low):  # whole words: an L40S is no L4
            if word == "a100":
                return "a100-80gb" if (memory_bytes or 0) > 48 * 2**30 or "80g" in low else "a100-40gb"
            return profile
    return None


def cache_key(device, extra=()):
    """The device and the versions of torch, transformers and peft (those installed), then `extra`
    (another framework's name and version: a profile refined under it describes its stack)."""
    torch = require("torch")
    parts = [device_name(device), f"torch-{torch.__version__}"]
    for name in ("transformers", "peft"):
        try:
            parts.append(f"{name}-{importlib.import_module(name).__version__}")
        except ImportError:
            pass
    parts += list(extra)
    return "__".join(re.sub(r"[^A-Za-z0-9.+-]+", "_", p) for p in parts)


class Cache:
    """`profile` (the refined profile of this device and versions, kept between runs) and `run_dir`
    (a new folder for this tune's config, lengths and rows)."""

    def __init__(self, cache_dir, device, extra=()):
        self.root = os.path.join(os.path.abspath(cache_dir or default_cache_dir()), cache_key(device, extra))
        self.profile = os.path.join(self.root, "profile.toml")
        stamp = time.strftime("%Y%m%d-%H%M%S") + f"-{os.getpid()}-{time.perf_counter_ns() % 10**6}"
        self.run_dir = os.path.join(self.root, "runs", stamp)
        os.makedirs(self.run_dir, exist_ok=True)

    def has_profile(self):
        return os.path.isfile(self.profile) and os.path.getsize(self.profile) > 0
