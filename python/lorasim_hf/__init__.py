"""lorasim for the Hugging Face stack (Transformers / TRL + PEFT).

- `LorasimCallback`: a `transformers.TrainerCallback` that writes a measurement row of a real
  `Trainer` / `SFTTrainer` run, for `lorasim validate --measurements` and `lorasim fit`.
- `training_arguments(...)`: lorasim's recommended split as `TrainingArguments` keyword arguments.
- `tune(trainer)`: a few trial steps on your device, model and data pick the split; it is set
  on the trainer, and training after it is bit-identical to training with that split.
- `python -m lorasim_hf.probe --plan PLAN.json`: short real training steps, run by
  `lorasim calibrate --stack hf-peft`.
- `write_lengths(source, tokenizer, out)` (`python -m lorasim_hf.lengths`): the `length,count`
  histogram of a data set tokenized as TRL's SFTTrainer does, for `lorasim ... --lengths`.

Importing the package needs neither torch nor transformers; the parts that do import them
when used and name the missing package (`MissingDependency`).
"""
from lorasim_hf._deps import MissingDependency
from lorasim_hf.recommend import LorasimError, quantization_config, training_arguments
from lorasim_hf.rows import RowWriter, write_rows

__all__ = ["LorasimCallback", "LorasimError", "MissingDependency", "RowWriter", "quantization_config", "training_arguments", "tune",
           "write_lengths", "write_rows"]


def __getattr__(name):
    # The callback subclasses transformers.TrainerCallback, so it is imported on first use; the
    # lengths module too, so that `python -m lorasim_hf.lengths` runs it only once.
    if name == "LorasimCallback":
        from lorasim_hf.callback import LorasimCallback
        return LorasimCallback
    if name == "tune":
        from lorasim_hf.tune import tune
        # Importing the submodule bound the package's `tune` to the module; the function is meant.
        globals()["tune"] = tune
        return tune
    if name == "write_lengths":
        from lorasim_hf.lengths import write_lengths
        return write_lengths
    raise AttributeError(f"module 'lorasim_hf' has no attribute '{name}'")
