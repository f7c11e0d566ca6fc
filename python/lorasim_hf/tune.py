"""`tune(trainer)`: the fastest split of the effective batch, found on your device, model and data
before training, and set on the trainer.

    trainer = Trainer(model=peft_model, args=args, train_dataset=ds)   # or TRL's SFTTrainer
    result = tune(trainer)            # prints one line per trial, then the table
    trainer.train()

lorasim predicts every split of `per_device_train_batch_size x gradient_accumulation_steps`; the
trials start at the predicted fastest that fits and walk up the micro-batches until one runs out
of memory (caught) or `max_trial_steps` optimizer steps are spent (tune_search.py), each step
through the trainer's own `training_step`; on data of many lengths each trial also runs its split's
worst micro-batch (the longest sequences together), so that its peak covers the epoch's worst
(tune_worst.py). The profile is refit on those rows (`lorasim fit
--fit-mode anchored`), and the split set is the measured fastest -- or the largest micro-batch
within its noise -- unless the refit predicts an untried smaller one faster (tune_pick.py).
With gradient checkpointing left at its default, both settings are weighed (`grad_ckpt="auto"`).
The effective batch never changes. Weights, optimizer, scheduler, data order and every RNG are
as they were, so training after `tune` is bit-identical to training with that split without it.
"""
import dataclasses

from lorasim_hf._deps import require
from lorasim_hf.recommend import LorasimError, grad_ckpt_choice
from lorasim_hf.tune_flow import TuneResult, Tuning  # noqa: F401 (TuneResult: tune's result, named here too)
from lorasim_hf.tune_state import TrainingState
from lorasim_hf.tune_trials import Trials
from lorasim_hf.tune_workload import Workload, base_model

_torch = require("torch")


def tune(trainer, gpu=None, profile=None, max_trial_steps=10, lorasim=None, *, grad_ckpt="auto", cache_dir=None,
         memory_limit=None, verbose=True):
    """Sets the fastest split that fits on `trainer.args` and returns a TuneResult.

    gpu: an embedded profile (`lorasim profiles`); profile: a TOML file; neither: the refined
    profile cached for this device and software versions, else the embedded profile of
    torch.cuda.get_device_name (on the CPU give one). A cached refined profile replaces gpu=, with
    a warning. grad_ckpt: "auto" weighs checkpointing on and off where the trainer's arguments leave
    `gradient_checkpointing` at its default, else keeps the trainer's; True/False: that, set on the
    arguments. memory_limit: usable bytes (default: the device's, times torch's per-process memory
    fraction). cache_dir: where refined profiles and trial rows are kept (default
    $LORASIM_CACHE_DIR, else ~/.cache/lorasim/tune). verbose: print a line per trial and the table.
    """
    grad_ckpt = grad_ckpt_choice(grad_ckpt)
    tuning = Tuning(trainer.args.device, gpu=gpu, profile=profile, max_trial_steps=max_trial_steps, lorasim=lorasim,
                    cache_dir=cache_dir, memory_limit=memory_limit, verbose=verbose)
    ds = trainer.train_dataset
    if ds is None or not hasattr(ds, "__len__") or not hasattr(ds, "__getitem__"):
        raise ValueError("tune needs the trainer's train_dataset, one with a length and indexing (a datasets."
                         "Dataset or a map-style torch Dataset; a streaming IterableDataset is not supported)")
    workload = Workload(trainer, tuning.cache.run_dir)
    fixed = None if grad_ckpt == "auto" else grad_ckpt  # tune's own grad_ckpt=True/False: that one setting
    if fixed is not None:
        workload = workload.variant(fixed)
    tuning.prior(workload, _modes(trainer, grad_ckpt))
    state = TrainingState(trainer, trainer.model)  # first: even preparing the trials' data sets attributes
    try:
        trials = Trials(trainer, workload)
        if trials.longest is not None:
            tuning.say(f"  each trial also runs its worst micro-batch, the longest sequences together (up to "
                       f"{trials.longest_tokens} tokens): in its peak, not in its step time")
        state.swap_in_weights()
        with trials.prepared():
            def run_trial(split, steps):
                mode = split.grad_ckpt if split.grad_ckpt is not None else fixed
                return trials.run(split.micro_batch, split.accumulation, steps, grad_ckpt=mode)

            results, spent = tuning.search(run_trial)
    finally:
        state.restore()
    split, result = tuning.pick(results, spent)
    ckpt = _set_checkpointing(grad_ckpt, split.grad_ckpt)
    set_split(trainer, split.micro_batch, split.accumulation, workload.effective_batch, grad_ckpt=ckpt)
    result.grad_ckpt = bool(trainer.args.gradient_checkpointing)
    tuning.say(str(result))
    return result


def checkpointing_at_default(trainer):
    """Whether the trainer leaves gradient checkpointing to its arguments' default: the value equals
    the arguments class's default (False for TrainingArguments, True for TRL's SFTConfig) and the
    model was not switched on by hand against it. A value set equal to the default cannot be told
    from the default: pass grad_ckpt=True/False to keep one."""
    args = trainer.args
    field = {f.name: f for f in dataclasses.fields(args)}.get("gradient_checkpointing")
    default = bool(field.default) if field is not None and field.default is not dataclasses.MISSING else False
    if bool(args.gradient_checkpointing) != default:
        return False
    by_hand = getattr(base_model(trainer.model), "is_gradient_checkpointing", False) and not default
    return not by_hand


def _modes(trainer, grad_ckpt):
    """The checkpointing settings to try: [False, True] when weighed, else [None] (one setting)."""
    if grad_ckpt == "auto" and checkpointing_at_default(trainer):
        return [False, True]
    return [None]


def _set_checkpointing(grad_ckpt, chosen):
    """gradient_checkpointing to set: the weighed mode's, tune's grad_ckpt=True/False, or None (kept)."""
    if chosen is not None:
        return chosen
    return None if grad_ckpt == "auto" else grad_ckpt


def set_split(trainer, micro_batch, accumulation, effective_batch, grad_ckpt=None):
    """per_device_train_batch_size and gradient_accumulation_steps on the trainer's arguments, and
    the batch size the trainer cached from them; refuses a split of another effective batch.
    grad_ckpt True/False: gradient_checkpointing too (off: also on a model that has it on, since
    train() only ever turns it on); None: kept."""
    if micro_batch * accumulation != effective_batch:
        raise LorasimError(f"split {micro_batch}x{accumulation} is not the effective batch {effective_batch}; "
                           "refused (tune never changes the effective batch)")
    values = dict(per_device_train_batch_size=micro_batch, gradient_accumulation_steps=accumulation)
    if grad_ckpt is not None:
        values["gradient_checkpointing"] = bool(grad_ckpt)
    args = trainer.args
    try:
        for k, v in values.items():
            setattr(args, k, v)
    except dataclasses.FrozenInstanceError:
        trainer.args = dataclasses.replace(args, **values)
    if grad_ckpt is False and getattr(trainer.model, "is_gradient_checkpointing", False):
        trainer.model.gradient_checkpointing_disable()
    # Trainer.__init__ keeps args.train_batch_size; train() starts its loop from that copy.
    trainer._train_batch_size = trainer.args.train_batch_size
