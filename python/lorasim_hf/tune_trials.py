"""The tuner's trial steps: a few optimizer steps of one split through the trainer's own
`training_step` (its `compute_loss`, loss scaling and backward), on batches of its train dataset
collated by its collator, with a throwaway optimizer of the class its arguments name.

Each micro-batch (forward and backward) and each optimizer step (clipping, the step and
`zero_grad`) is timed on its own -- CUDA events on the GPU's timeline, which do not synchronize
and so keep the overlap of host and GPU between micro-batches; the data loading is left out. A
trial's first micro-batch and first optimizer step are its warm-up; the spread of the others
gives the noise rule of tune_search its standard error. On CUDA the peaks cover the timed steps.
On data of many lengths each trial also runs the split's worst micro-batch -- the `b` longest
examples together (tune_worst.py) -- after the ordinary micro-batches of its first timed step: the
peak covers it, the step time leaves it out. What the trials change is put back by
`tune_state.TrainingState`.
"""
import contextlib
import gc
import random
import statistics
import time

from lorasim_hf._deps import require
from lorasim_hf.seen import _PROCESS_SHAPES
from lorasim_hf.tune_search import Measured, Split
from lorasim_hf.recommend import LorasimError
from lorasim_hf.tune_worst import TimedWidths, example_lengths, input_ids, longest_examples

_torch = require("torch")


class TrialLoop:
    """The framework-free part of a trial: the data order, the worst micro-batch, timing, out of
    memory and the Measured with its row. A framework's subclass gives `_prepare(batches)` (the
    step's micro-batches as its loop hands them over), `_micro_batch(inputs, index, count)` (forward
    and backward), `_optimizer_step(opt)` (clipping, the step, zero_grad), `_optimizer()`, `_scaler()`
    and `checkpointing(on)`."""

    def __init__(self, workload, model, dataset, collate, seed, cuda):
        self.workload, self.model, self.dataset, self.collate, self.cuda = workload, model, dataset, collate, cuda
        self.params = [p for p in model.parameters() if p.requires_grad]
        order = list(range(len(self.dataset)))
        random.Random(seed).shuffle(order)  # a private generator: no RNG of the training is drawn
        self.order, self.next = order, 0
        self.steps = 0  # optimizer steps run (or begun) by all trials
        self.oom_error = _torch.cuda.OutOfMemoryError
        # Padded to max_length every micro-batch has one shape: the worst is any of them.
        lengths = example_lengths(self.dataset) if workload.padding != "max_length" else []
        varying = bool(lengths) and max(lengths) > min(lengths)
        self.longest = longest_examples(lengths, workload.effective_batch) if varying else None
        self.longest_tokens = max(lengths) if varying else None
        # Rows of padded micro-batches record their widths (lorasim prices them width by width and
        # fits the peak at the widest); padding-free and packed rows keep the mean width.
        self.histogram = varying and (workload.padding == "longest" or workload.padding.startswith("multiple:"))
        self.shapes = []  # (rows, width, real tokens) of the last step's micro-batches, for its TimedWidths

    def checkpointing(self, on):
        raise LorasimError("this framework's tuner does not switch gradient checkpointing")

    def _batch(self, micro_batch):
        picked = []
        for _ in range(micro_batch):
            picked.append(self.dataset[self.order[self.next % len(self.order)]])
            self.next += 1
        return self.collate(picked)

    def worst_batch(self, micro_batch):
        """The `micro_batch` longest examples collated as training collates them, or None where every
        micro-batch is alike (one length, or padding to max_length)."""
        if self.longest is None:
            return None
        return self.collate([self.dataset[i] for i in self.longest[:micro_batch]])

    def _sync(self):
        if self.cuda:
            _torch.cuda.synchronize()

    def _mark(self):
        """A point on the device's timeline: a CUDA event (recorded, not waited for), or the clock."""
        if not self.cuda:
            return time.perf_counter()
        event = _torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def _intervals_s(self, marks):
        if not self.cuda:
            return [b - a for a, b in zip(marks, marks[1:])]
        return [a.elapsed_time(b) / 1e3 for a, b in zip(marks, marks[1:])]  # after the step's synchronize

    def _step(self, micro_batch, accumulation, opt, lens, worst=None, record=None):
        """One optimizer step, `worst` (a collated micro-batch) run after its ordinary micro-batches
        (then the gradients are held, as at any micro-batch of a step but the first): ([seconds per
        micro-batch, the worst's last], seconds of the optimizer step). record: a TimedWidths, to
        which the caller reports the shapes left in `self.shapes`."""
        batches = [self._batch(micro_batch) for _ in range(accumulation)] + ([worst] if worst is not None else [])
        self.shapes = [record.shape_of(b) for b in batches] if record is not None else []
        batches = self._prepare(batches)
        lens.extend(int(ids.shape[-1]) for ids in map(input_ids, batches[:accumulation]) if ids is not None)
        self.steps += 1
        self._sync()
        marks = [self._mark()]
        for k, inputs in enumerate(batches):
            self._micro_batch(inputs, k, len(batches))
            marks.append(self._mark())
        self._optimizer_step(opt)
        marks.append(self._mark())
        self._sync()
        intervals = self._intervals_s(marks)
        return intervals[:-1], intervals[-1]

    def run(self, micro_batch, accumulation, steps, grad_ckpt=None):
        """A Measured of `steps` optimizer steps of this split (the first micro-batch and optimizer
        step the warm-up), its `row` in rows.py's columns; oom on CUDA out-of-memory. grad_ckpt:
        checkpointing on/off for this trial (None: as prepared). With many lengths the worst
        micro-batch runs in the first timed step: in the peak and the row, not in the Measured's
        micro-batch times (an ordinary micro-batch's, what a step of the epoch mostly holds)."""
        split = Split(micro_batch, accumulation, grad_ckpt)
        row = dict(self.workload.row, micro_batch=micro_batch, accumulation=accumulation)
        if grad_ckpt is not None:
            row["grad_ckpt"] = bool(grad_ckpt)
            self.checkpointing(grad_ckpt)
        micro_s, all_s, opt_s, lens, opt, oom, begun = [], [], [], [], None, False, self.steps
        worst = self.worst_batch(micro_batch)
        record = TimedWidths(self.workload.padding, _PROCESS_SHAPES) if self.histogram else None
        if self.cuda:
            _torch.cuda.empty_cache()
        try:
            opt = self._optimizer()
            # The worst in the first step only when there is no other: the second holds the
            # optimizer's state, as every step of the epoch but the first does.
            micro, _ = self._step(micro_batch, accumulation, opt, lens, worst if steps < 2 else None, record)
            self._timed(micro, 1, accumulation, micro_s, all_s, record)
            if self.cuda:
                _torch.cuda.reset_peak_memory_stats()
            lens.clear()
            for k in range(steps - 1):
                micro, optimizer = self._step(micro_batch, accumulation, opt, lens, worst if k == 0 else None, record)
                self._timed(micro, 0, accumulation, micro_s, all_s, record)
                opt_s.append(optimizer)
        except self.oom_error:
            oom = True
        if oom:  # out of the except block: the traceback no longer holds the step's tensors
            self.model.zero_grad(set_to_none=True)
            scaler = self._scaler()
            if scaler is not None and opt is not None:
                # An OOM between unscale_ and update leaves this optimizer's entry behind; the next
                # trial's optimizer may get the same id and would be refused as already unscaled.
                scaler._per_optimizer_states.pop(id(opt), None)
        del opt
        gc.collect()
        peak = None
        if self.cuda and not oom:
            peak = _torch.cuda.max_memory_reserved()
            row.update(peak_allocated_bytes=_torch.cuda.max_memory_allocated(), peak_reserved_bytes=peak)
        if self.cuda:
            _torch.cuda.empty_cache()
        m = Measured(split, self.steps - begun, oom=oom, micro_batch_times_s=[] if oom else micro_s,
                     optimizer_times_s=[] if oom else opt_s, peak_bytes=peak)
        if oom or not m.ran:
            m.row = dict(row, oom=True, seq_len=self.workload.seq_len) if oom else {}
        elif record is not None:  # the row holds every timed micro-batch, the worst too, as its widths do
            step_s = accumulation * statistics.fmean(all_s) + (statistics.fmean(opt_s) if opt_s else 0.0)
            m.row = dict(row, oom=False, step_time_s=step_s, **record.columns(accumulation))
        else:
            m.row = dict(row, oom=False, step_time_s=m.step_time_s,
                         seq_len=round(statistics.mean(lens)) if lens else self.workload.seq_len)
        return m

    def _timed(self, micro, warmup, accumulation, micro_s, all_s, record):
        """A step's micro-batch times after the first `warmup`: the ordinary ones into micro_s, and
        with the worst (the step's last, when it ran) into all_s, the row's; their shapes to `record`."""
        micro_s.extend(micro[warmup:accumulation])
        all_s.extend(micro[warmup:])
        for k, shape in enumerate(self.shapes):
            record.ran(shape, timed=k >= warmup)

class Trials(TrialLoop):
    """Trials through a transformers `Trainer`'s own `training_step`, with a throwaway optimizer."""

    def __init__(self, trainer, workload):
        self.trainer, self.args = trainer, trainer.args
        cuda = self.args.device.type == "cuda" and _torch.cuda.is_available()
        super().__init__(workload, trainer.model, *self._data(), self.args.seed, cuda)

    def _data(self):
        # As Trainer._get_dataloader prepares them, minus the accelerator's wrapping (whose
        # gradient state a dataloader left half-read would change).
        t, ds = self.trainer, self.trainer.train_dataset
        try:
            import datasets
            is_hf_dataset = isinstance(ds, datasets.Dataset)
        except ImportError:
            is_hf_dataset = False
        if is_hf_dataset:
            return t._remove_unused_columns(ds, description="training"), t.data_collator
        return ds, t._get_collator_with_removed_columns(t.data_collator, description="training")

    def checkpointing(self, on):
        """Gradient checkpointing on or off, as `trainer.train()` turns it on (with the arguments'
        kwargs); TrainingState puts the model's own setting back."""
        model = self.model
        if on and not getattr(model, "is_gradient_checkpointing", False):
            kwargs = dict(self.args.gradient_checkpointing_kwargs or {})
            every, offload = kwargs.pop("every_n_layers", 1), kwargs.pop("offload", False)
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs or None, every_n_layers=every,
                                                offload=offload)
        elif not on and getattr(model, "is_gradient_checkpointing", False):
            model.gradient_checkpointing_disable()

    @contextlib.contextmanager
    def prepared(self):
        """The model as `trainer.train()` runs it: checkpointing on when asked, the forward under
        accelerate's mixed precision with fp32 outputs (what `accelerator.prepare` installs)."""
        if self.args.gradient_checkpointing:
            self.checkpointing(True)
        acc = self.trainer.accelerator
        if getattr(acc, "native_amp", False):
            from accelerate.utils import convert_outputs_to_fp32, get_mixed_precision_context_manager
            ctx = get_mixed_precision_context_manager(acc.native_amp, acc.autocast_handler)
            self.model.forward = convert_outputs_to_fp32(ctx(self.model.forward))
        yield  # TrainingState.restore() puts the forward back

    def _optimizer(self):
        cls, kwargs = type(self.trainer).get_optimizer_cls_and_kwargs(self.args, self.model)
        return cls([{"params": self.params, "weight_decay": self.args.weight_decay}], **kwargs)

    def _scaler(self):
        return getattr(self.trainer.accelerator, "scaler", None)

    def _prepare(self, batches):
        t = self.trainer
        batches, self.n_items = t.get_batch_samples(iter(batches), len(batches), self.args.device)
        t.current_gradient_accumulation_steps = len(batches)
        return batches

    def _micro_batch(self, inputs, index, count):
        self.trainer.training_step(self.model, inputs, self.n_items)

    def _optimizer_step(self, opt):
        scaler = self._scaler()
        if scaler is not None:
            scaler.unscale_(opt)
        if self.args.max_grad_norm is not None and self.args.max_grad_norm > 0:
            _torch.nn.utils.clip_grad_norm_(self.params, self.args.max_grad_norm)
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        self.model.zero_grad()
