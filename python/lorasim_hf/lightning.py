"""lorasim for PyTorch Lightning: `LorasimTuner` finds the fastest split of the effective batch when
`fit` starts and sets it; `LorasimRecorder` writes a measurement row of the training it watches.

    model = MyLightningModule(batch_size=16)       # wraps a PEFT model; reads self.batch_size
    trainer = L.Trainer(accumulate_grad_batches=4, precision="bf16-mixed",
                        callbacks=[LorasimTuner(), LorasimRecorder("runs.jsonl")])
    trainer.fit(model)

The tuner shares the Hugging Face tuner's search, noise rule, messages and cache (tune_flow.py).
The effective batch is the batch size x `accumulate_grad_batches`; the batch size is read and set
where Lightning's `BatchSizeFinder` finds it (`batch_size` on the LightningModule, its `hparams`,
its datamodule or the datamodule's `hparams`), the accumulation on the Trainer, before the fit
loop builds its dataloader. The trials run through the module's own hooks (lightning_trials.py);
afterwards weights, optimizer, loss scaler, data order and RNG are as they were, so training is
bit-identical to training the chosen split without the tuner. One process only (as
BatchSizeFinder); automatic optimization only. Both callbacks subclass the `Callback` of
`lightning.pytorch` and of `pytorch_lightning`, whichever are installed.
"""
import importlib
import importlib.util
import types

from lorasim_hf._deps import pip_command, require
from lorasim_hf.callback import LorasimCallback
from lorasim_hf.model_columns import model_precision, quant_flags
from lorasim_hf.lightning_trials import trials_of
from lorasim_hf.model_source import is_config, model_config_of
from lorasim_hf.recommend import LorasimError, is_config_path
from lorasim_hf.tune_flow import Tuning
from lorasim_hf.tune_workload import Workload, collator_padding

_torch = require("torch")
_PACKAGES = [p for p in ("lightning.pytorch", "pytorch_lightning") if importlib.util.find_spec(p.split(".")[0])]
if not _PACKAGES:
    raise ImportError(f"lorasim_hf.lightning needs PyTorch Lightning ({pip_command('lightning')})")
_BASES = tuple(importlib.import_module(p).Callback for p in _PACKAGES)
_MIXED = {"bf16-mixed": "bf16", "16-mixed": "fp16"}


def _lightning(trainer):
    """The Lightning package the trainer comes from (lightning.pytorch or pytorch_lightning)."""
    root = type(trainer).__module__.split(".")[0]
    return importlib.import_module("lightning.pytorch" if root == "lightning" else root)


def hf_model(module):
    """The outermost transformers model (a PEFT model: the PeftModel) inside the LightningModule, or None."""
    return next((m for m in module.modules() if m is not module and model_config_of(m) is not None), None)


def _single_process(trainer, who):
    if trainer.world_size != 1:
        raise LorasimError(f"{who} runs in one process; this run has {trainer.world_size}: tune a single-process "
                           "run and start the distributed one with its split")


class LorasimTuner(*_BASES):
    """Tunes the split when `fit` starts. gpu/profile/max_trial_steps/lorasim/cache_dir/memory_limit/
    verbose: as `lorasim_hf.tune`. model: a lorasim preset or a config.json path, needed where the
    LightningModule wraps no transformers model (else its config is read). batch_arg_name: the
    batch size's name, as BatchSizeFinder's. After fit starts, `result` is the TuneResult."""

    def __init__(self, gpu=None, profile=None, max_trial_steps=10, lorasim=None, *, model=None,
                 batch_arg_name="batch_size", cache_dir=None, memory_limit=None, verbose=True):
        self.options = dict(gpu=gpu, profile=profile, max_trial_steps=max_trial_steps, lorasim=lorasim,
                            cache_dir=cache_dir, memory_limit=memory_limit, verbose=verbose)
        self.model, self.batch_arg_name, self.result = model, batch_arg_name, None

    def on_fit_start(self, trainer, pl_module):
        pl = _lightning(trainer)
        parsing = importlib.import_module(pl.__name__ + ".utilities.parsing")
        _single_process(trainer, "LorasimTuner")
        self._check(trainer, pl_module, pl, parsing)
        micro_batch = int(parsing.lightning_getattr(pl_module, self.batch_arg_name))
        dataset, collate = _data(trainer)
        tuning = Tuning(trainer.strategy.root_device, cache_extra=(f"lightning-{pl.__version__}",), **self.options)
        workload = self._workload(trainer, pl_module, tuning.cache.run_dir, micro_batch, dataset, collate)
        tuning.prior(workload)
        with trials_of(trainer, pl_module, workload, dataset, collate) as trials:
            if trials.longest is not None:
                tuning.say(f"  each trial also runs its worst micro-batch, the longest sequences together (up to "
                           f"{trials.longest_tokens} tokens): in its peak, not in its step time")
            results, spent = tuning.search(lambda split, steps: trials.run(split.micro_batch, split.accumulation,
                                                                           steps))
        split, result = tuning.pick(results, spent)
        parsing.lightning_setattr(pl_module, self.batch_arg_name, split.micro_batch)
        trainer.accumulate_grad_batches = split.accumulation
        result.grad_ckpt, result.names = workload.grad_ckpt, (self.batch_arg_name, "accumulate_grad_batches")
        tuning.say(str(result))
        self.result = result

    def _check(self, trainer, pl_module, pl, parsing):
        if not pl_module.automatic_optimization:
            raise LorasimError("LorasimTuner needs automatic optimization (manual optimization has no "
                               "accumulate_grad_batches to set)")
        if any(isinstance(c, pl.callbacks.GradientAccumulationScheduler) for c in trainer.callbacks):
            raise LorasimError("LorasimTuner sets accumulate_grad_batches once; remove the GradientAccumulationScheduler")
        if not trainer.fit_loop._data_source.is_module():
            raise LorasimError("LorasimTuner cannot change the batch size of dataloaders passed to fit(); build them "
                               "in the LightningModule's or the datamodule's train_dataloader() from "
                               f"self.{self.batch_arg_name}")
        if not parsing.lightning_hasattr(pl_module, self.batch_arg_name):
            raise LorasimError(f"LorasimTuner: no {self.batch_arg_name} on the LightningModule, its datamodule or "
                               "their hparams (where BatchSizeFinder looks); add one and build train_dataloader() "
                               "from it, or pass batch_arg_name=")

    def _workload(self, trainer, pl_module, directory, micro_batch, dataset, collate):
        model = hf_model(pl_module)
        flags = None
        if model is None:
            if self.model is None:
                raise LorasimError("LorasimTuner: the LightningModule wraps no transformers model, so its architecture "
                                   "is unknown; pass model= (a lorasim preset, `lorasim models`, or a config.json path)")
            flags = _model_flags(self.model, directory)
        elif self.model is not None:
            flags = _model_flags(self.model, directory)
        mixed = _MIXED.get(str(trainer.precision))
        precision = (model_precision(model) if model is not None else None) or _weights_precision(pl_module)
        because = (f"precision='{trainer.precision}'" if "bf16" in str(trainer.precision) else
                   "the model's weights are bfloat16" if precision == "bf16" else None)
        base = model.get_base_model() if hasattr(model, "get_base_model") else model
        return Workload.of(
            model, directory, effective_batch=micro_batch * int(trainer.accumulate_grad_batches), precision=precision,
            autocast=mixed is not None, grad_ckpt=bool(getattr(base, "is_gradient_checkpointing", False)),
            bf16_because=because, dataset=dataset, seed=0, padding=collator_padding(collate),
            quant=quant_flags(model) if model is not None else ({}, []), model_flags=flags,
            fp16_hint='train in fp16 (precision="16-mixed" with fp32 weights)', stack="lightning")


def _weights_precision(module):
    return model_precision(module) or "fp32"


def _model_flags(model, directory):
    """lorasim's flags of the model= argument: a preset, a config.json path or a transformers config."""
    if is_config(model):
        from lorasim_hf.model_source import write_config
        return ["--model-config", write_config(model, directory)]
    if not isinstance(model, str):
        raise TypeError(f"model= must be a lorasim preset, a config.json path or a transformers config, got "
                        f"{type(model).__name__}")
    return ["--model-config" if is_config_path(model) else "--model", model]


def _data(trainer):
    """(dataset, collate_fn) of the train dataloader the module or datamodule builds now."""
    loader = trainer.fit_loop._data_source.dataloader()
    dataset, collate = getattr(loader, "dataset", None), getattr(loader, "collate_fn", None)
    if dataset is None or not hasattr(dataset, "__len__") or not hasattr(dataset, "__getitem__"):
        raise LorasimError("LorasimTuner needs train_dataloader() to return one torch DataLoader over a map-style "
                           "dataset (with a length and indexing)")
    return dataset, collate or _torch.utils.data.default_collate


class _LightningRows(LorasimCallback):
    """LorasimCallback's row, of the lightning stack: a Lightning Trainer ran the steps."""
    stack = "lightning"


class LorasimRecorder(*_BASES):
    """Appends one measurement row (.csv or .jsonl `path`) per fit, as `LorasimCallback` does for a
    Trainer: steady-state optimizer steps timed after `warmup_steps`, peaks, what the model saw
    (micro-batch, padded widths, collation), device and processes. The LightningModule must wrap a
    transformers model (its config, LoRA adapter and inputs are read from it). Its rows say `stack`
    lightning, `loop` trainer. model_name: a lorasim
    preset or config path naming the model (default: its config, stored beside the rows)."""

    def __init__(self, path, warmup_steps=2, model_name=None, lorasim=None):
        self.rows = _LightningRows(path, warmup_steps=warmup_steps, model_name=model_name, lorasim=lorasim)
        self.args = self.model = None

    @property
    def row(self):
        return self.rows.row

    def on_train_start(self, trainer, pl_module):
        self.model = hf_model(pl_module)
        if self.model is None:
            raise LorasimError("LorasimRecorder needs the LightningModule to wrap a transformers model (PEFT or not): "
                               "its config, adapter and inputs make the row")
        mixed = _MIXED.get(str(trainer.precision))
        base = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        # What LorasimCallback reads of transformers' TrainingArguments, in Lightning's terms.
        self.args = types.SimpleNamespace(
            device=trainer.strategy.root_device, world_size=trainer.world_size, bf16=mixed == "bf16",
            fp16=mixed == "fp16", gradient_accumulation_steps=int(trainer.accumulate_grad_batches),
            gradient_checkpointing=bool(getattr(base, "is_gradient_checkpointing", False)), optim=None)
        self.rows.on_train_begin(self.args, None, None, model=self.model, train_dataloader=_loader(trainer))

    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        if batch_idx % self.args.gradient_accumulation_steps == 0:
            self.rows.on_step_begin(self.args, None, None)

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if (batch_idx + 1) % self.args.gradient_accumulation_steps == 0:
            self.rows.on_step_end(self.args, None, None)

    def on_train_end(self, trainer, pl_module):
        state = types.SimpleNamespace(is_world_process_zero=trainer.is_global_zero)
        self.rows.on_train_end(self.args, state, None, model=self.model)


def _loader(trainer):
    loader = trainer.train_dataloader
    return loader if hasattr(loader, "collate_fn") else None
