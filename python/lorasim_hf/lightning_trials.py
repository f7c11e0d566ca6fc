"""The Lightning tuner's trial steps: a few optimizer steps of one split through the LightningModule's
own hooks, as Lightning's automatic optimization runs them -- the batch moved by the strategy (with
the module's batch-transfer hooks and the precision plugin's input conversion), `training_step`
under the precision plugin's context, the loss divided by the accumulation, the strategy's
backward (the fp16 loss scaler's), and the module's `optimizer_step` (unscaling, gradient
clipping by the Trainer's `gradient_clip_val`, the step) and `optimizer_zero_grad` -- on batches of
the train dataloader's dataset collated by its `collate_fn`. Timing, the worst micro-batch and the
rows are tune_trials.TrialLoop's.

What the trials change is put back: tune_state.TrainingState (weights, gradients, RNG, module
flags, the loss scaler), the optimizer's state and hyperparameters (each trial starts from an
empty state, as training's first step does), the Trainer's callbacks (none run during trials, as
in Lightning's BatchSizeFinder) and the module's `log` (the trials' losses are not logged).
"""
import collections
import collections.abc
import contextlib
import copy

from lorasim_hf._deps import require
from lorasim_hf.recommend import LorasimError
from lorasim_hf.tune_state import TrainingState
from lorasim_hf.tune_trials import TrialLoop

_torch = require("torch")


class LightningTrials(TrialLoop):
    def __init__(self, trainer, module, workload, dataset, collate):
        self.trainer, self.module, self.strategy = trainer, module, trainer.strategy
        optimizers = list(trainer.optimizers)
        if len(optimizers) != 1 or not trainer.strategy._lightning_optimizers:
            raise LorasimError(f"LorasimTuner needs one optimizer from configure_optimizers (found {len(optimizers)})")
        self.optimizer, self.lightning_optimizer = optimizers[0], trainer.strategy._lightning_optimizers[0]
        device = trainer.strategy.root_device
        # The data order is drawn from a private generator of seed 0: no RNG of the training is drawn.
        super().__init__(workload, module, dataset, collate, 0, device.type == "cuda" and _torch.cuda.is_available())
        self.batch_index, self.loss = 0, None

    def _scaler(self):
        return getattr(self.trainer.precision_plugin, "scaler", None)

    def _optimizer(self):
        self.optimizer.state = collections.defaultdict(dict)  # a fresh state per trial; restored after
        return self.optimizer

    def _prepare(self, batches):
        return batches  # moved to the device in the timed micro-batch, as the fit loop does before its step

    def _micro_batch(self, inputs, index, count):
        trainer, module = self.trainer, self.module
        batch = trainer.precision_plugin.convert_input(inputs)
        batch = module._on_before_batch_transfer(batch, dataloader_idx=0)
        batch = self.strategy.batch_to_device(batch, dataloader_idx=0)
        out = self.strategy.training_step(batch, self.batch_index)
        loss = out.get("loss") if isinstance(out, collections.abc.Mapping) else out
        if not _torch.is_tensor(loss):
            raise LorasimError("LorasimTuner: training_step returned no loss (a tensor, or a dict with 'loss'); the "
                               "tuner runs automatic optimization only")
        self.strategy.backward(loss / count, self.optimizer)  # Lightning divides by accumulate_grad_batches
        self.loss = loss.detach()
        self.batch_index += 1

    def _optimizer_step(self, opt):
        epoch = self.trainer.current_epoch
        loss = self.loss
        self.module.optimizer_step(epoch, self.batch_index - 1, self.lightning_optimizer, lambda: loss)
        self.module.optimizer_zero_grad(epoch, self.batch_index - 1, self.optimizer)


class _OptimizerState:
    """The optimizer's state, moved to host memory during the trials (they measure the device's),
    and its param groups' hyperparameters (a module's optimizer_step may change the learning rate)."""

    def __init__(self, optimizer):
        self.optimizer, self.state = optimizer, optimizer.state
        self.devices = {}
        for key, values in self.state.items():
            for name, value in values.items():
                if _torch.is_tensor(value):
                    self.devices[key, name] = value.device
                    values[name] = value.to("cpu", copy=True)
        self.groups = [{k: copy.deepcopy(v) for k, v in g.items() if k != "params"} for g in optimizer.param_groups]

    def restore(self):
        for (key, name), device in self.devices.items():
            self.state[key][name] = self.state[key][name].to(device)
        self.optimizer.state = self.state
        for group, saved in zip(self.optimizer.param_groups, self.groups):
            group.update(saved)


@contextlib.contextmanager
def trials_of(trainer, module, workload, dataset, collate):
    """LightningTrials for the duration of the block, everything they change put back after it."""
    state = TrainingState(trainer, module, scaler=getattr(trainer.precision_plugin, "scaler", None))
    callbacks, saved_optimizer = trainer.callbacks, None
    try:
        trials = LightningTrials(trainer, module, workload, dataset, collate)
        saved_optimizer = _OptimizerState(trials.optimizer)
        state.swap_in_weights()
        trainer.callbacks = []
        module.log = module.log_dict = lambda *args, **kwargs: None
        module.train()
        yield trials
    finally:
        for name in ("log", "log_dict"):
            vars(module).pop(name, None)
        trainer.callbacks = callbacks
        if saved_optimizer is not None:
            saved_optimizer.restore()
        state.restore()
