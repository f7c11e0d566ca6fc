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

from lorasim_hf.model_columns import (_ATTN, allocator_from_env, fused_lm_head, lora_columns, model_precision,
                                      quant_flags)
from lorasim_hf.model_source import write_config
from lorasim_hf.recommend import LorasimError
from lorasim_hf.tune_worst import input_ids

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
    ids = input_ids(example)
    if ids is None:
        raise LorasimError("tune needs a tokenized train dataset (examples with input_ids, or token tensors)")
    return int(ids.shape[-1]) if hasattr(ids, "shape") else len(ids)


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
    return collator_padding(trainer.data_collator, trainer.args)


def collator_padding(collator, args=None):
    """lorasim's --padding for a collator (transformers' or TRL's) and TRL's arguments."""
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
        precision = precision_of(model, args)
        self.describe(
            model, directory, effective_batch=effective_batch(args), precision=precision,
            autocast=bool(args.bf16 or args.fp16),
            grad_ckpt=bool(args.gradient_checkpointing or getattr(base, "is_gradient_checkpointing", False)),
            bf16_because=("its arguments say bf16=True" if args.bf16 else
                          "the model's weights are bfloat16" if precision == "bf16" else None),
            dataset=trainer.train_dataset, seed=args.seed, padding=padding_mode(trainer), cap=max_length(trainer),
            fused=fused_lm_head(model), quant=quant_flags(model, args))

    @classmethod
    def of(cls, model, directory, **parts):
        """A workload of another framework's parts (describe's keywords)."""
        self = cls.__new__(cls)
        self.describe(model, directory, **parts)
        return self

    def describe(self, model, directory, *, effective_batch, precision, autocast, grad_ckpt, bf16_because, dataset,
                 seed, padding, cap=None, fused=False, quant=({}, []), model_flags=None,
                 fp16_hint="train in fp16 (fp16=True, bf16=False, fp32 or fp16 weights)", stack="hf-peft"):
        """model: the (PEFT) transformers model trained, or None with model_flags (["--model", preset] or
        ["--model-config", path]); bf16_because: what makes the training bf16, or None; fp16_hint: how
        to train in fp16 instead, in the framework's words; stack: lorasim's stack of the program
        (hf-peft: Trainer and SFTTrainer; lightning: a Lightning Trainer)."""
        self.effective_batch, self.fp16_hint = effective_batch, fp16_hint
        self.grad_ckpt = bool(grad_ckpt)
        if model_flags is None:
            base = base_model(model)
            self.config_path = write_config(base.config, directory)
            model_flags = ["--model-config", self.config_path]
        lora = lora_columns(model) if model is not None else {}
        self.row = {"model": model_flags[1], "grad_ckpt": self.grad_ckpt, "precision": precision,
                    "autocast": bool(autocast), "allocator": allocator_from_env(), "stack": stack,
                    "loop": "trainer", "fused_lm_head": bool(fused), **lora}
        attn = getattr(getattr(base_model(model), "config", None), "_attn_implementation", None)
        if attn in _ATTN:
            self.row["attn_impl"] = attn
        self.bf16_because = bf16_because
        flags = model_flags + ["--stack", stack, "--precision", precision, "--autocast", _tf(autocast),
                               "--allocator", self.row["allocator"], "--fused-lm-head", _tf(fused)]
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
        quant_row, quant = quant  # a quantized base's recipe, as the model shows it
        self.row.update(quant_row)
        flags += quant
        self.lengths = dataset_lengths(dataset, seed)
        if cap is not None:
            self.lengths = _truncated(self.lengths, cap)
        self.seq_len = max(self.lengths)
        self.padding = padding
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
