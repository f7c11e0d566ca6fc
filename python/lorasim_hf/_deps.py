"""The third-party packages the probe and the callback need, pinned to what lorasim is calibrated with."""
import importlib

# Import order matters for the message: peft imports torch and transformers, so a missing
# torch must be named as torch, not as a failing peft.
PINNED = {"torch": "2.11.0", "transformers": "5.17.0", "peft": "0.21.2"}
# Needed by transformers' Trainer and peft, and (datasets) by the lengths helper for Parquet and
# Arrow files; named when it is what fails to import.
ALSO_PINNED = {"accelerate": "1.15.0", "datasets": "4.8.5"}
# Its own extra (`lightning`), not the `hf` one: lorasim_hf.lightning and the probe's lightning runs.
LIGHTNING_PINNED = {"lightning": "2.6.6"}


class MissingDependency(ImportError):
    """A package the probe or the callback needs is not installed; the message says how to install it."""


def pip_command(name):
    return f"pip install {name}=={PINNED.get(name) or ALSO_PINNED.get(name) or LIGHTNING_PINNED[name]}"


def require(*names):
    """Imports each named package (default: torch, transformers, peft) or raises one MissingDependency."""
    modules = []
    for name in names or tuple(PINNED):
        try:
            modules.append(importlib.import_module(name))
        except ImportError as e:
            # The package itself, or a pinned one it needs, being absent is "missing"; any other
            # failure (a broken install) re-raises as is.
            missing = name if getattr(e, "name", None) in (name, None) else e.name
            if missing not in PINNED and missing not in ALSO_PINNED:
                raise
            raise MissingDependency(f"missing python package {missing} ({pip_command(missing)})") from None
    return modules[0] if len(modules) == 1 else modules
