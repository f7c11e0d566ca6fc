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
import os
import shutil
import warnings

from lorasim_hf._deps import require
from lorasim_hf.recommend import LorasimError, find_lorasim, grad_ckpt_choice, whole_number
from lorasim_hf.rows import RowWriter
from lorasim_hf.tune_cache import Cache, device_name, embedded_gpu
from lorasim_hf.tune_lorasim import fit, predict, profile_facts, recommend_measured
from lorasim_hf.tune_pick import final_split
from lorasim_hf.tune_search import Search, Split
from lorasim_hf.tune_state import TrainingState
from lorasim_hf.tune_table import format_table, table_rows
from lorasim_hf.tune_trials import Trials
from lorasim_hf.tune_workload import Workload, base_model

_torch = require("torch")


@dataclasses.dataclass
class TuneResult:
    micro_batch: int
    accumulation: int
    grad_ckpt: bool  # gradient_checkpointing as set on trainer.args
    trial_steps: int  # optimizer steps the trials ran (or began, for one that ran out of memory)
    table: list  # one dict per split (and checkpointing mode): predicted and (where tried) measured time and peak
    rows_path: str  # the trial rows: `lorasim recommend --profile PROFILE --measured ROWS` replays the pick
    profile_path: str  # the refined profile (also kept in the cache as the next tune's base)
    notes: list = dataclasses.field(default_factory=list)  # why this split: the noise rule's verdict

    def __str__(self):
        weighed = any(r["grad_ckpt"] is not None for r in self.table)
        return format_table(self.table, self.micro_batch, self.accumulation, self.grad_ckpt if weighed else None)


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
    max_trial_steps = whole_number("max_trial_steps", max_trial_steps, minimum=2)
    grad_ckpt = grad_ckpt_choice(grad_ckpt)
    if gpu is not None and profile is not None:
        raise ValueError("give at most one of gpu= (an embedded profile) and profile= (a TOML file)")
    ds = trainer.train_dataset
    if ds is None or not hasattr(ds, "__len__") or not hasattr(ds, "__getitem__"):
        raise ValueError("tune needs the trainer's train_dataset, one with a length and indexing (a datasets."
                         "Dataset or a map-style torch Dataset; a streaming IterableDataset is not supported)")
    say = (lambda line: print(line, flush=True)) if verbose else (lambda line: None)
    exe = find_lorasim(lorasim)
    device = trainer.args.device
    cache = Cache(cache_dir, device)
    base_gpu, base_profile, source = _base(cache, device, gpu, profile)
    facts = profile_facts(exe, base_gpu, base_profile)
    memory_limit = memory_limit if memory_limit is not None else _capped_memory(device)
    workload = Workload(trainer, cache.run_dir)
    _check_precision(workload, facts, source)  # before any step
    fixed = None if grad_ckpt == "auto" else grad_ckpt  # tune's own grad_ckpt=True/False: that one setting
    if fixed is not None:
        workload = workload.variant(fixed)
    modes = _modes(trainer, grad_ckpt)
    before = {m: predict(exe, workload if m is None else workload.variant(m), base_gpu, base_profile, memory_limit)
              for m in modes}
    modes.sort(key=lambda m: _predicted_best_s(before[m]))  # the prior's faster mode is walked first
    weighed = "; gradient checkpointing weighed on and off" if len(modes) > 1 else ""
    say(f"lorasim tune: starting from {source}; effective batch {workload.effective_batch}; at most "
        f"{max_trial_steps} trial optimizer steps{weighed}")
    for m in modes:
        say("  " + _prior_line(m, before[m]))
    say("  from the pick the micro-batch grows until one runs out of memory (or the budget ends)")
    if len(modes) > 1:
        say("  then the other setting, only at splits that could beat the best measured and fit (the prior "
            "rescaled by the trials), from the smallest up")
    results, spent = _search(trainer, workload, modes, before, max_trial_steps, fixed, memory_limit, say)
    if not any(r.ran for r in results.values()):
        raise LorasimError(f"every split tried ran out of memory ({', '.join(map(str, results))}); try gradient "
                           "checkpointing, a shorter max_length or a smaller effective batch")
    rows_path = _write_rows(cache.run_dir, "rows.jsonl", results.values())
    refined = _refit(exe, rows_path, cache, base_gpu, base_profile)
    picks = {}
    for m in modes:
        tried = [r for s, r in results.items() if s.grad_ckpt == m and r.row]
        if not tried:  # a mode the search knew without a trial: its prediction stands
            picks[m] = before[m]
            continue
        mode_rows = rows_path if len(modes) == 1 else _write_rows(
            cache.run_dir, f"rows-{'ckpt' if m else 'no-ckpt'}.jsonl", tried)
        picks[m] = recommend_measured(exe, workload if m is None else workload.variant(m), mode_rows,
                                      gpu=None if refined else base_gpu, profile=refined or base_profile,
                                      memory_limit=memory_limit)
    split, notes = final_split(results, picks, refined is not None, workload.effective_batch)
    for line in notes:
        say("lorasim tune: " + line)
    ckpt = _set_checkpointing(grad_ckpt, split.grad_ckpt)
    set_split(trainer, split.micro_batch, split.accumulation, workload.effective_batch, grad_ckpt=ckpt)
    table = table_rows([(m if len(modes) > 1 else None, before[m], picks[m]) for m in modes], results)
    result = TuneResult(split.micro_batch, split.accumulation, bool(trainer.args.gradient_checkpointing), spent,
                        table, rows_path, refined or "", notes)
    say(str(result))
    return result


def _base(cache, device, gpu, profile):
    """(gpu, profile, what it is in words): profile=, else the cached refined one, else gpu=/the device's."""
    if profile is not None:
        return None, os.fspath(profile), f"the profile file {os.fspath(profile)}"
    if cache.has_profile():
        if gpu is not None:
            warnings.warn(f"tune: the refined profile cached for this device ({cache.profile}) replaces gpu='{gpu}'; "
                          "to start from gpu= again, delete that file or pass another cache_dir=", stacklevel=3)
        return None, cache.profile, f"the refined profile cached for this device ({cache.profile})"
    if gpu is not None:
        return gpu, None, f"the embedded profile '{gpu}' (gpu=)"
    if device.type != "cuda":
        raise ValueError("tune on the CPU needs gpu= (an embedded profile, e.g. 'h200') or profile= (a TOML file) "
                         "as the base to refine")
    name = device_name(device)
    found = embedded_gpu(name, _torch.cuda.get_device_properties(device).total_memory)
    if found is None:
        raise ValueError(f"lorasim has no embedded profile for '{name}'; pass gpu= (the closest of `lorasim "
                         "profiles`) or profile= (e.g. from `lorasim calibrate --stack hf-peft`)")
    return found, None, f"the embedded profile '{found}' (of this device, {name})"


def _check_precision(workload, facts, source):
    """A base profile of a GPU without bf16 cannot predict (nor its GPU run) a bf16 training."""
    if workload.bf16_because and not facts["bf16_supported"]:
        raise LorasimError(f"the trainer trains in bf16 ({workload.bf16_because}) but {source} is of the "
                           f"{facts['display_name']}, which has no bf16; train in fp16 (fp16=True, bf16=False, "
                           "fp32 or fp16 weights) on that GPU, or pass gpu=/profile= of a GPU with bf16")


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


def _predicted_best_s(prediction):
    best = prediction.get("recommended")
    return float("inf") if best is None else best["step_time_s"]


def _prior_line(mode, prediction):
    what = "" if mode is None else " with checkpointing" if mode else " without checkpointing"
    best = prediction.get("recommended")
    if best is None:
        return f"the prior{what}: no split predicted to fit; the trials start at the smallest micro-batch"
    return (f"the prior's pick{what}: {best['micro_batch']}x{best['accumulation']} "
            f"({best['step_time_s']:.4f} s/step predicted)")


def _search(trainer, workload, modes, before, budget, fixed, memory_limit, say):
    """{Split: Measured} of the trials, and the optimizer steps they spent; fixed: the one
    checkpointing setting of every trial, or None (each split's own, or the trainer's). A trial
    whose peak passes memory_limit ran, but it is the boundary all the same."""
    plans, priors = [], {}
    for m in modes:
        splits = [Split(s["micro_batch"], s["accumulation"], m)
                  for s in sorted(before[m]["splits"], key=lambda s: s["micro_batch"])]
        best = before[m].get("recommended")
        start = None if best is None else Split(best["micro_batch"], best["accumulation"], m)
        plans.append((splits, start))
        for s in before[m]["splits"]:  # what the other mode's trials are judged by, rescaled by the first's
            priors[Split(s["micro_batch"], s["accumulation"], m)] = (s["step_time_s"], s.get("worst_reserved_bytes"))
    usable = before[modes[0]].get("usable_memory_bytes")
    state = TrainingState(trainer, trainer.model)  # first: even preparing the trials' data sets attributes
    try:
        trials = Trials(trainer, workload)
        if trials.longest is not None:
            say(f"  each trial also runs its worst micro-batch, the longest sequences together (up to "
                f"{trials.longest_tokens} tokens): in its peak, not in its step time")
        state.swap_in_weights()
        with trials.prepared():
            def run_trial(split, steps):
                mode = split.grad_ckpt if split.grad_ckpt is not None else fixed
                m = trials.run(split.micro_batch, split.accumulation, steps, grad_ckpt=mode)
                m.over_limit = bool(memory_limit and m.peak_bytes and m.peak_bytes > memory_limit)
                return m

            search = Search(plans, budget, run_trial, report=say, priors=priors, usable_bytes=usable)
            results = search.run()
    finally:
        state.restore()
    return results, search.spent


def _write_rows(directory, name, measured):
    path = os.path.join(directory, name)
    writer = RowWriter(path)
    for m in measured:
        if m.row:
            writer.write(m.row)
    return path


def _capped_memory(device):
    """The device's memory when torch caps this process below it (set_per_process_memory_fraction)."""
    if device.type != "cuda":
        return None
    fraction = _torch.cuda.get_per_process_memory_fraction(device)
    if fraction >= 1.0:
        return None
    return int(_torch.cuda.get_device_properties(device).total_memory * fraction)


def _refit(exe, rows_path, cache, gpu, profile):
    out = os.path.join(cache.run_dir, "profile.toml")
    try:
        fit(exe, rows_path, out, gpu=gpu, profile=profile)
    except LorasimError as e:
        warnings.warn(f"tune: the profile was not refined ({e}); the measured splits still decide")
        return None
    tmp = cache.profile + ".tmp"
    shutil.copyfile(out, tmp)
    os.replace(tmp, cache.profile)  # whole or not at all: the next tune reads it as its base
    return out


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
