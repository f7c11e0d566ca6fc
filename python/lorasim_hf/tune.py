"""`tune(trainer)`: the fastest split of the effective batch, found on your device, model and data
before training, and set on the trainer.

    trainer = Trainer(model=peft_model, args=args, train_dataset=ds)   # or TRL's SFTTrainer
    result = tune(trainer)            # prints the table; trainer.args now carries the split
    trainer.train()

lorasim predicts every split of `per_device_train_batch_size x gradient_accumulation_steps`; the
two or three worth trying (the predicted fastest that fits and its neighbours) run a few optimizer
steps through the trainer's own `training_step` (largest micro-batch first, out-of-memory caught),
at most `max_trial_steps` in all. The profile is refit on those rows (`lorasim fit --fit-mode
anchored`) and lorasim picks again with the measured splits at their measured time and peak.
The effective batch never changes. Weights, optimizer, scheduler, data order and every RNG are
as they were, so training after `tune` is bit-identical to training with that split without it.
"""
import dataclasses
import os
import shutil
import warnings

from lorasim_hf._deps import require
from lorasim_hf.recommend import LorasimError, find_lorasim, whole_number
from lorasim_hf.rows import RowWriter
from lorasim_hf.tune_cache import Cache, device_name, embedded_gpu
from lorasim_hf.tune_lorasim import candidates, fit, predict, recommend_measured
from lorasim_hf.tune_state import TrainingState
from lorasim_hf.tune_table import format_table, table_rows
from lorasim_hf.tune_trials import Trials
from lorasim_hf.tune_workload import Workload

_torch = require("torch")


@dataclasses.dataclass
class TuneResult:
    micro_batch: int
    accumulation: int
    trial_steps: int  # optimizer steps the trials ran (or began, for one that ran out of memory)
    table: list  # one dict per split: predicted and (where tried) measured time and peak, or oom
    rows_path: str  # the trial rows: `lorasim recommend --profile PROFILE --measured ROWS` replays the pick
    profile_path: str  # the refined profile (also kept in the cache as the next tune's base)

    def __str__(self):
        return format_table(self.table, self.micro_batch, self.accumulation)


def tune(trainer, gpu=None, profile=None, max_trial_steps=10, lorasim=None, *, cache_dir=None, memory_limit=None,
         verbose=True):
    """Sets the fastest split that fits on `trainer.args` and returns a TuneResult.

    gpu: an embedded profile (`lorasim profiles`); profile: a TOML file; neither: the refined
    profile cached for this device and software versions, else the embedded profile of
    torch.cuda.get_device_name (on the CPU give one). memory_limit: usable bytes (default: the
    device's, times torch's per-process memory fraction). cache_dir: where refined profiles and
    trial rows are kept (default $LORASIM_CACHE_DIR, else ~/.cache/lorasim/tune).
    """
    max_trial_steps = whole_number("max_trial_steps", max_trial_steps, minimum=2)
    if gpu is not None and profile is not None:
        raise ValueError("give at most one of gpu= (an embedded profile) and profile= (a TOML file)")
    ds = trainer.train_dataset
    if ds is None or not hasattr(ds, "__len__") or not hasattr(ds, "__getitem__"):
        raise ValueError("tune needs the trainer's train_dataset, one with a length and indexing (a datasets."
                         "Dataset or a map-style torch Dataset; a streaming IterableDataset is not supported)")
    exe = find_lorasim(lorasim)
    device = trainer.args.device
    cache = Cache(cache_dir, device)
    base_gpu, base_profile = _base(cache, device, gpu, profile)
    memory_limit = memory_limit if memory_limit is not None else _capped_memory(device)
    workload = Workload(trainer, cache.run_dir)
    before = predict(exe, workload, base_gpu, base_profile, memory_limit)
    trials = _run_trials(trainer, workload, before, max_trial_steps)
    rows_path = os.path.join(cache.run_dir, "rows.jsonl")
    writer = RowWriter(rows_path)
    for row in trials.rows:
        writer.write(row)
    if all(r["oom"] for r in trials.rows):
        raise LorasimError(f"every split tried ran out of memory ({_splits(trials.rows)}); try gradient "
                           "checkpointing, a shorter max_length or a smaller effective batch")
    refined = _refit(exe, rows_path, cache, base_gpu, base_profile)
    pick = recommend_measured(exe, workload, rows_path, gpu=None if refined else base_gpu,
                              profile=refined or base_profile, memory_limit=memory_limit)
    b, a = _checked_pick(pick, trials.rows, workload.effective_batch, refined=refined is not None)
    set_split(trainer, b, a, workload.effective_batch)
    table = table_rows(before, pick, trials.rows)
    result = TuneResult(b, a, trials.steps, table, rows_path, refined or "")
    if verbose:
        print(result, flush=True)
    return result


def _base(cache, device, gpu, profile):
    """(gpu, profile) the prediction starts from: profile=, else the cached refined one, else gpu=/the device's."""
    if profile is not None:
        return None, os.fspath(profile)
    if cache.has_profile():
        return None, cache.profile
    if gpu is not None:
        return gpu, None
    if device.type != "cuda":
        raise ValueError("tune on the CPU needs gpu= (an embedded profile, e.g. 'h200') or profile= (a TOML file) "
                         "as the base to refine")
    name = device_name(device)
    found = embedded_gpu(name, _torch.cuda.get_device_properties(device).total_memory)
    if found is None:
        raise ValueError(f"lorasim has no embedded profile for '{name}'; pass gpu= (the closest of `lorasim "
                         "profiles`) or profile= (e.g. from `lorasim calibrate --stack hf-peft`)")
    return found, None


def _capped_memory(device):
    """The device's memory when torch caps this process below it (set_per_process_memory_fraction)."""
    if device.type != "cuda":
        return None
    fraction = _torch.cuda.get_per_process_memory_fraction(device)
    if fraction >= 1.0:
        return None
    return int(_torch.cuda.get_device_properties(device).total_memory * fraction)


def _run_trials(trainer, workload, prediction, budget):
    wanted = min(3, budget // 2)  # splits that run: lorasim fit needs three
    planned = candidates(prediction, count=wanted)
    smaller = sorted((s["micro_batch"], s["accumulation"]) for s in prediction["splits"]
                     if s["micro_batch"] < min(b for b, _ in planned))
    state = TrainingState(trainer, trainer.model)  # first: even preparing the trials' data sets attributes
    try:
        trials = Trials(trainer, workload)
        state.swap_in_weights()
        with trials.prepared():
            queue = list(planned)
            while queue and budget - trials.steps >= 2:
                b, a = queue.pop(0)
                steps = max(2, (budget - trials.steps) // (len(queue) + 1))
                trials.rows.append(trials.run(b, a, steps))
                # A split ran out of memory: the next smaller micro-batch takes its place while the
                # budget lasts, so that as many splits run as were planned.
                ran = sum(not r["oom"] for r in trials.rows)
                if smaller and ran + len(queue) < wanted and budget - trials.steps >= 2 * (len(queue) + 1):
                    queue.append(smaller.pop())
    finally:
        state.restore()
    return trials


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


def _checked_pick(pick, rows, effective_batch, refined=True):
    """lorasim's pick, unless it is a split never tried with a micro-batch above every one that ran
    (its memory is only a prediction where a smaller one was measured), or never tried while the
    profile could not be refined (its time is the base profile's, not this device's): then the
    fastest split that ran and fits."""
    best = pick.get("recommended")
    if best is None:
        raise LorasimError(f"no split of effective batch {effective_batch} fits, measured or predicted")
    split = (int(best["micro_batch"]), int(best["accumulation"]))
    ran = {(r["micro_batch"], r["accumulation"]): r for r in rows if not r["oom"]}
    if split in ran or (refined and split[0] < max(b for b, _ in ran)):
        return split
    fits = {(s["micro_batch"], s["accumulation"]) for s in pick["splits"] if s["fits"]}
    safe = [k for k in ran if k in fits]
    if not safe:
        raise LorasimError(f"no split that ran fits in the usable memory ({_splits(rows)} tried)")
    chosen = min(safe, key=lambda k: ran[k]["step_time_s"])
    why = "is larger than every split that ran" if refined else "has only the unrefined profile's prediction"
    warnings.warn(f"tune: lorasim's pick {split[0]}x{split[1]} was not tried and {why}; {chosen[0]}x{chosen[1]}, "
                  "the fastest that ran, is set instead")
    return chosen


def _splits(rows):
    return ", ".join(f"{r['micro_batch']}x{r['accumulation']}" for r in rows)


def set_split(trainer, micro_batch, accumulation, effective_batch):
    """per_device_train_batch_size and gradient_accumulation_steps on the trainer's arguments, and
    the batch size the trainer cached from them; refuses a split of another effective batch."""
    if micro_batch * accumulation != effective_batch:
        raise LorasimError(f"split {micro_batch}x{accumulation} is not the effective batch {effective_batch}; "
                           "refused (tune never changes the effective batch)")
    args = trainer.args
    try:
        args.per_device_train_batch_size = micro_batch
        args.gradient_accumulation_steps = accumulation
    except dataclasses.FrozenInstanceError:
        trainer.args = dataclasses.replace(args, per_device_train_batch_size=micro_batch,
                                           gradient_accumulation_steps=accumulation)
    # Trainer.__init__ keeps args.train_batch_size; train() starts its loop from that copy.
    trainer._train_batch_size = trainer.args.train_batch_size
