"""The tuner's trial steps: a few optimizer steps of one split through the trainer's own
`training_step` (its `compute_loss`, loss scaling and backward), on batches of its train dataset
collated by its collator, with a throwaway optimizer of the class its arguments name.

Each step is timed as `LorasimCallback` times one (the micro-batches' forward and backward,
clipping, the optimizer step and `zero_grad`, CUDA synchronized at both ends; not the data
loading), the first step of a trial is its warm-up, and on CUDA the peaks cover the timed steps.
What the trials change is put back by `tune_state.TrainingState`.
"""
import contextlib
import gc
import random
import statistics
import time

from lorasim_hf._deps import require

_torch = require("torch")


class Trials:
    def __init__(self, trainer, workload):
        self.trainer, self.workload = trainer, workload
        self.args, self.model = trainer.args, trainer.model
        self.cuda = self.args.device.type == "cuda" and _torch.cuda.is_available()
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        self.dataset, self.collate = self._data()
        order = list(range(len(self.dataset)))
        random.Random(self.args.seed).shuffle(order)  # a private generator: no RNG of the training is drawn
        self.order, self.next = order, 0
        self.steps = 0  # optimizer steps run (or begun) by all trials
        self.rows = []  # one measurement row per trial
        self.oom_error = _torch.cuda.OutOfMemoryError

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

    def _batch(self, micro_batch):
        picked = []
        for _ in range(micro_batch):
            picked.append(self.dataset[self.order[self.next % len(self.order)]])
            self.next += 1
        return self.collate(picked)

    @contextlib.contextmanager
    def prepared(self):
        """The model as `trainer.train()` runs it: checkpointing on when asked, the forward under
        accelerate's mixed precision with fp32 outputs (what `accelerator.prepare` installs)."""
        args, model = self.args, self.model
        if args.gradient_checkpointing and not getattr(model, "is_gradient_checkpointing", False):
            kwargs = dict(args.gradient_checkpointing_kwargs or {})
            every, offload = kwargs.pop("every_n_layers", 1), kwargs.pop("offload", False)
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs or None, every_n_layers=every,
                                                offload=offload)
        acc = self.trainer.accelerator
        if getattr(acc, "native_amp", False):
            from accelerate.utils import convert_outputs_to_fp32, get_mixed_precision_context_manager
            ctx = get_mixed_precision_context_manager(acc.native_amp, acc.autocast_handler)
            model.forward = convert_outputs_to_fp32(ctx(model.forward))
        yield  # TrainingState.restore() puts the forward back

    def _optimizer(self):
        cls, kwargs = type(self.trainer).get_optimizer_cls_and_kwargs(self.args, self.model)
        return cls([{"params": self.params, "weight_decay": self.args.weight_decay}], **kwargs)

    def _sync(self):
        if self.cuda:
            _torch.cuda.synchronize()

    def _step(self, micro_batch, accumulation, opt, lens):
        t, args = self.trainer, self.args
        batches = [self._batch(micro_batch) for _ in range(accumulation)]
        batches, n_items = t.get_batch_samples(iter(batches), accumulation, args.device)
        lens.extend(int(b["input_ids"].shape[-1]) for b in batches if "input_ids" in b)
        t.current_gradient_accumulation_steps = len(batches)
        scaler = getattr(t.accelerator, "scaler", None)
        self.steps += 1
        self._sync()
        t0 = time.perf_counter()
        for inputs in batches:
            t.training_step(self.model, inputs, n_items)
        if scaler is not None:
            scaler.unscale_(opt)
        if args.max_grad_norm is not None and args.max_grad_norm > 0:
            _torch.nn.utils.clip_grad_norm_(self.params, args.max_grad_norm)
        if scaler is not None:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        self.model.zero_grad()
        self._sync()
        return time.perf_counter() - t0

    def run(self, micro_batch, accumulation, steps):
        """A measurement row of `steps` optimizer steps (1 warm-up, the rest timed); oom on CUDA OOM."""
        row = dict(self.workload.row, micro_batch=micro_batch, accumulation=accumulation)
        times, lens, opt, oom = [], [], None, False
        if self.cuda:
            _torch.cuda.empty_cache()
        try:
            opt = self._optimizer()
            self._step(micro_batch, accumulation, opt, lens)
            if self.cuda:
                _torch.cuda.reset_peak_memory_stats()
            lens.clear()
            for _ in range(steps - 1):
                times.append(self._step(micro_batch, accumulation, opt, lens))
        except self.oom_error:
            oom = True
        if oom:  # out of the except block: the traceback no longer holds the step's tensors
            self.model.zero_grad(set_to_none=True)
            scaler = getattr(self.trainer.accelerator, "scaler", None)
            if scaler is not None and opt is not None:
                # An OOM between unscale_ and update leaves this optimizer's entry behind; the next
                # trial's optimizer may get the same id and would be refused as already unscaled.
                scaler._per_optimizer_states.pop(id(opt), None)
        del opt
        gc.collect()
        if self.cuda:
            row.update(peak_allocated_bytes=_torch.cuda.max_memory_allocated(),
                       peak_reserved_bytes=_torch.cuda.max_memory_reserved())
            _torch.cuda.empty_cache()
        if oom:
            row.pop("peak_allocated_bytes", None)
            row.pop("peak_reserved_bytes", None)
            return dict(row, oom=True, seq_len=self.workload.seq_len)
        return dict(row, oom=False, step_time_s=statistics.median(times),
                    seq_len=round(statistics.mean(lens)) if lens else self.workload.seq_len)
