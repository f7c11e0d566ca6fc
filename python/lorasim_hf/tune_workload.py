"""The workload of a `Trainer` (or TRL `SFTTrainer`) as lorasim's flags and as a measurement row.

Read from what the trainer will train: the model's config (written as a config.json), the active
LoRA adapter, the frozen weights' dtype and the mixed precision of `args`, gradient checkpointing,
the attention implementation, the allocator, TRL's fused LM head, and the token lengths of the
train dataset (one length: `--seq-len`; many: a `--lengths` file with the collator's padding).
"""
import copy
import os
import random
from collections import Counter

from lorasim_hf.callback import (allocator_from_env, fused_lm_head, lora_columns, model_precision, quant_flags,
                                 write_config, _ATTN)
from lorasim_hf.recommend import LorasimError

# Enough examples for a length histogram whose padded-length statistics are stable; a larger
# dataset is sampled (with a private generator, so no RNG the training uses is drawn from).
LENGTH_SAMPLE = 4096


def base_model(model):
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def effective_batch(args):
    """per_device_train_batch_size x gradient_accumulation_steps; one process only."""
    world = int(getattr(args, "world_size", 1) or 1)
    if world != 1:
        raise LorasimError(f"tune runs in one process; this run has {world} (WORLD_SIZE): tune a single-process "
                           "run and start the distributed one with its split")
    return int(args.per_device_train_batch_size) * int(args.gradient_accumulation_steps)


def _example_length(example):
    ids = example.get("input_ids") if isinstance(example, dict) else None
    if ids is None:
        raise LorasimError("tune needs a tokenized train dataset (examples with input_ids)")
    return len(ids)


def dataset_lengths(dataset, seed):
    """Counter {length: count} of the input_ids of (a sample of) the train dataset."""
    n = len(dataset)
    if n == 0:
        raise LorasimError("the trainer's train dataset is empty")
    index = list(range(n))
    if n > LENGTH_SAMPLE:
        index = random.Random(seed).sample(index, LENGTH_SAMPLE)
    if hasattr(dataset, "column_names") and "input_ids" in (dataset.column_names or ()):
        column = dataset.select(index)["input_ids"] if n > LENGTH_SAMPLE else dataset["input_ids"]
        return Counter(len(ids) for ids in column)
    return Counter(_example_length(dataset[i]) for i in index)


def padding_mode(trainer):
    """lorasim's --padding for the trainer's collator and arguments."""
    args, collator = trainer.args, trainer.data_collator
    if getattr(args, "packing", False):
        return "packed"
    if getattr(collator, "padding_free", False) or getattr(args, "padding_free", False):
        return "padding-free"
    if getattr(collator, "padding", None) == "max_length":
        return "max_length"
    multiple = getattr(collator, "pad_to_multiple_of", None) or getattr(args, "pad_to_multiple_of", None)
    return f"multiple:{int(multiple)}" if multiple else "longest"


def max_length(trainer):
    value = getattr(trainer.args, "max_length", None)  # SFTConfig's; Trainer has none
    return int(value) if isinstance(value, int) and value > 0 else None


def precision_of(model, args):
    """bf16/fp16/fp32 of the frozen weights; fp32 weights with args.bf16/fp16 train under autocast."""
    return model_precision(model) or ("bf16" if args.bf16 else "fp16" if args.fp16 else "fp32")


class Workload:
    """The trainer's workload: `flags` (lorasim simulate/recommend) and `row` (rows.py columns)."""

    def __init__(self, trainer, directory):
        args, model = trainer.args, trainer.model
        base = base_model(model)
        self.effective_batch = effective_batch(args)
        self.config_path = write_config(base.config, directory)
        self.grad_ckpt = bool(args.gradient_checkpointing or getattr(base, "is_gradient_checkpointing", False))
        lora = lora_columns(model)
        self.row = {"model": self.config_path, "grad_ckpt": self.grad_ckpt, "precision": precision_of(model, args),
                    "autocast": bool(args.bf16 or args.fp16), "allocator": allocator_from_env(), "stack": "hf-peft",
                    "loop": "trainer", "fused_lm_head": fused_lm_head(model), **lora}
        attn = getattr(base.config, "_attn_implementation", None)
        if attn in _ATTN:
            self.row["attn_impl"] = attn
        # What makes the training bf16 (a GPU without bf16 cannot run it), or None.
        self.bf16_because = ("its arguments say bf16=True" if args.bf16 else
                             "the model's weights are bfloat16" if self.row["precision"] == "bf16" else None)
        flags = ["--model-config", self.config_path, "--stack", "hf-peft",
                 "--precision", self.row["precision"], "--autocast", _tf(self.row["autocast"]),
                 "--allocator", self.row["allocator"], "--fused-lm-head", _tf(self.row["fused_lm_head"])]
        # Said either way: recommend weighs both settings when none is given, and a trial row then
        # stands for one of two splits of its micro-batch.
        flags += ["--grad-ckpt", _tf(self.grad_ckpt)]
        if "lora_rank" in lora:
            flags += ["--lora-rank", str(lora["lora_rank"]), "--lora-alpha", repr(lora["lora_alpha"]),
                      "--lora-dropout", repr(lora["lora_dropout"])]
        if lora.get("lora_targets"):
            flags += ["--lora-targets", ",".join(lora["lora_targets"])]
        if "attn_impl" in self.row:
            flags += ["--attn-impl", self.row["attn_impl"]]
        quant_row, quant = quant_flags(model, args)  # a quantized base's recipe, as the model shows it
        self.row.update(quant_row)
        flags += quant
        self.lengths = dataset_lengths(trainer.train_dataset, args.seed)
        cap = max_length(trainer)
        if cap is not None:
            self.lengths = _truncated(self.lengths, cap)
        self.seq_len = max(self.lengths)
        self.padding = padding_mode(trainer)
        if len(self.lengths) == 1 and self.padding != "packed":
            flags += ["--seq-len", str(self.seq_len)]
            self.lengths_path = None
        else:
            self.lengths_path = os.path.join(directory, "lengths.csv")
            with open(self.lengths_path, "w") as f:
                f.write("length,count\n" + "".join(f"{n},{c}\n" for n, c in sorted(self.lengths.items())))
            flags += ["--lengths", self.lengths_path, "--padding", self.padding]
            if cap is not None:
                flags += ["--max-length", str(cap)]
        self.flags = flags

    def variant(self, grad_ckpt):
        """This workload with gradient checkpointing on or off (tune weighing both)."""
        other = copy.copy(self)
        other.grad_ckpt = bool(grad_ckpt)
        other.row = dict(self.row, grad_ckpt=other.grad_ckpt)
        at = self.flags.index("--grad-ckpt")
        other.flags = self.flags[:at] + ["--grad-ckpt", _tf(other.grad_ckpt)] + self.flags[at + 2:]
        return other


def _truncated(lengths, cap):
    out = Counter()
    for n, c in lengths.items():
        out[min(n, cap)] += c
    return out


def _tf(value):
    return "true" if value else "false"
