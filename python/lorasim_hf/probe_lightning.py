"""The probe's `lightning` runs (plan key `stack: lightning`, what `lorasim calibrate --stack lightning`
plans): the model the probe built -- the same PEFT LoRA model as an hf-peft run -- trained by a real
PyTorch Lightning `Trainer` (lightning.pytorch, else pytorch_lightning), so that a row measures what
a Lightning training step costs around the model: its loop's hooks, the precision plugin, the loss
scaled by the accumulation, `zero_grad`, clipping.

The LightningModule is the smallest a user writes: `training_step` returns `model(**batch).loss`
(TRL's fused head: its loss per micro-batch), `configure_optimizers` torch.optim.AdamW over the
adapters, lr 5e-5, fused as the probe's Trainer loop has it -- except under "-mixed" precision, where
Lightning refuses to clip the gradients of a fused optimizer (one that could unscale them itself). The Trainer: one device, precision
"bf16-mixed" / "16-mixed" for an autocast run (fp16 weights: 16-mixed) and "bf16-true" / "16-true"
/ "32-true" for the weights' own precision otherwise, accumulate_grad_batches, gradient_clip_val
1.0, max_steps = warm-up + timed steps; no logger, checkpoints, progress bar or sanity check. The
micro-batches are those an hf-peft run draws (length_batches.Draws), in the same order.

A `Callback` times each optimizer step from `on_train_batch_start` of its window's first micro-batch
to `on_train_batch_end` of its last (synchronized on CUDA): what falls between windows -- the first
micro-batch's fetch and copy to the device -- is outside, as for LorasimRecorder. The optimizer time
runs from `on_before_optimizer_step` (after the last backward) to that end: clipping, the step and
the scaler's update (CUDA events on the GPU, so no sync is added mid-step); `micro_batch_time_s` is
(step - optimizer) / accumulation, and so holds Lightning's `zero_grad`, which it runs inside the next
window's first micro-batch. The module keeps the model on its device when Lightning's teardown
would move it to the CPU, and the casts of "bf16-true" / "16-true" are undone after the fit: the
plan's next run trains the model as the probe built it.
"""
import contextlib
import importlib
import itertools
import logging
import time
import warnings

from lorasim_hf import length_batches, probe_runs
from lorasim_hf._deps import MissingDependency, pip_command
from lorasim_hf.probe_quant import fused_adamw

_PACKAGES = ("lightning.pytorch", "pytorch_lightning")
_CLASSES = {}  # package name -> (LightningModule, Callback) subclasses of that package's


def package():
    """lightning.pytorch, else pytorch_lightning; MissingDependency (one line, the pinned install) if neither."""
    for name in _PACKAGES:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name not in (name, name.split(".")[0]):  # installed but broken: say what broke
                raise
    raise MissingDependency(f"missing python package lightning ({pip_command('lightning')})")


def precision_flag(run):
    """Trainer(precision=...) of a run: autocast is Lightning's mixed precision, else the weights' own."""
    if run["autocast"]:  # the probe's autocast is fp16 for fp16 weights, bf16 otherwise
        return "16-mixed" if run["precision"] == "fp16" else "bf16-mixed"
    return {"bf16": "bf16-true", "fp16": "16-true", "fp32": "32-true"}[run["precision"]]


def train(probe, model, vocab, run, lengths=None):
    """One measurement row of `run` trained by a Lightning Trainer (probe.Probe.run's contract:
    torch.cuda.OutOfMemoryError goes through)."""
    pl, torch = package(), probe.torch
    module_class, timer_class = _classes(pl)
    a, warmup = run["accumulation"], run["warmup_steps"]
    draw = length_batches.Draws(torch, run["micro_batch"], run["seq_len"], vocab, lengths)
    batches = [draw() for _ in range(warmup * a)]
    draw.start_timing()
    batches += [draw() for _ in range(run["steps"] * a)]
    precision = precision_flag(run)
    half = torch.float16 if run["precision"] == "fp16" else torch.bfloat16
    if run["fused_lm_head"]:  # Lightning divides by the accumulation: the loss is this micro-batch's
        def loss(batch):
            return probe_runs.fused_loss(torch, model, batch, None, half, run["autocast"], 1)
    else:
        def loss(batch):
            return model(**batch).loss

    def optimizer():
        trainable = [p for p in model.parameters() if p.requires_grad]
        return torch.optim.AdamW(trainable, lr=5e-5, fused=fused_adamw(run))

    seen, hook = probe.watch(model, run)
    timer = timer_class(probe, a, warmup, seen)
    # batch_size=None: each item is a whole micro-batch already; pinned on CUDA, as the probe's loop pins.
    loader = torch.utils.data.DataLoader(batches, batch_size=None, shuffle=False, pin_memory=probe.cuda)
    dtypes = _dtypes(model)
    try:
        with _quiet(pl):
            trainer = pl.Trainer(accelerator="cuda" if probe.cuda else "cpu", devices=1, precision=precision,
                                 accumulate_grad_batches=a, gradient_clip_val=1.0, max_steps=warmup + run["steps"],
                                 callbacks=[timer], logger=False, enable_checkpointing=False,
                                 enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=0)
            trainer.fit(module_class(model, loss, optimizer), train_dataloaders=loader)
    finally:
        hook.remove()
        _restore(model, dtypes)
    return probe.measured_row(run, timer.times, draw.record, seen, timer.peaks)


def _classes(pl):
    """The LightningModule and timing Callback, subclassing `pl`'s (either package may be the one installed)."""
    if pl.__name__ in _CLASSES:
        return _CLASSES[pl.__name__]

    class ProbeModule(pl.LightningModule):
        def __init__(self, model, loss, optimizer):
            super().__init__()
            self.model = model
            self._loss, self._optimizer = loss, optimizer

        def training_step(self, batch, batch_idx):
            return self._loss(batch)

        def configure_optimizers(self):
            return self._optimizer()

        def cpu(self):
            """Stays put: Lightning's teardown (after fit, or after an out-of-memory) moves the module to
            the CPU, and the plan's next run trains this model where the probe built it."""
            return self

    class StepTimer(pl.Callback):
        """(step_s, micro_batch_s, optimizer_s) of each optimizer step after the warm-up, and the peaks."""

        def __init__(self, probe, accumulation, warmup_steps, seen):
            self.probe, self.a, self.warmup, self.seen = probe, accumulation, warmup_steps, seen
            self.times, self.peaks = [], {}
            self._t0 = self._t_opt = None
            cuda = probe.torch.cuda
            self._events = [cuda.Event(enable_timing=True) for _ in range(2)] if probe.cuda else None

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            if batch_idx % self.a:
                return
            self.probe.sync()
            if batch_idx // self.a == self.warmup:  # the first timed step: peaks and shapes from here
                if self.probe.cuda:
                    self.probe.torch.cuda.reset_peak_memory_stats()
                self.seen.active = True
            self._t0 = time.perf_counter()

        def on_before_optimizer_step(self, trainer, pl_module, optimizer):
            if self._events:
                self._events[0].record()
            self._t_opt = time.perf_counter()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if (batch_idx + 1) % self.a:
                return
            if self._events:
                self._events[1].record()
            self.probe.sync()
            t_end = time.perf_counter()
            if batch_idx // self.a < self.warmup:
                return
            step_s = t_end - self._t0
            opt_s = self._events[0].elapsed_time(self._events[1]) / 1e3 if self._events else t_end - self._t_opt
            self.times.append((step_s, (step_s - opt_s) / self.a, opt_s))
            self.peaks = self.probe.peaks()

    _CLASSES[pl.__name__] = ProbeModule, StepTimer
    return ProbeModule, StepTimer


def _tensors(model):
    return itertools.chain(model.named_parameters(), model.named_buffers())


def _dtypes(model):
    """The dtype of each parameter and buffer, which a "-true" precision changes."""
    return {name: t.dtype for name, t in _tensors(model)}


def _restore(model, dtypes):
    """The model's dtypes as the probe built it: a "-true" precision cast its adapters and fp32
    buffers (RoPE's inverse frequencies) for the plan's next run."""
    for name, t in _tensors(model):
        if t.dtype != dtypes[name]:
            t.data = t.data.to(dtypes[name])


@contextlib.contextmanager
def _quiet(pl):
    """Lightning's info lines ("GPU available", "max_steps reached"), its hint to add data loader
    workers and a deprecation inside it off stderr, which carries the probe's progress; put back afterwards."""
    # Lightning's info goes through one logger that the last Lightning package imported names
    # (lightning_utilities' rank_zero_module.log): with both installed, maybe not `pl`'s.
    rank_zero = importlib.import_module(pl.__name__ + ".utilities.rank_zero").rank_zero_module.log
    loggers = {logging.getLogger(pl.__name__), rank_zero}
    levels = {logger: logger.level for logger in loggers}
    for logger in loggers:
        logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*does not have many workers.*")
            warnings.filterwarnings("ignore", message=".*LeafSpec.*is deprecated.*")  # Lightning's own, not the model's
            yield
    finally:
        for logger, level in levels.items():
            logger.setLevel(level)
