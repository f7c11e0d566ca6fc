"""One tune, whichever framework trains: the base profile and lorasim's prior, the search over the
framework's trial callable, the refit on the trial rows and the pick with the noise rule.

A framework's tuner (tune.py for Hugging Face Trainer, lightning.py for PyTorch Lightning) builds
the workload, runs `Tuning.search` with its own `run_trial(split, steps) -> Measured` (its trial
loop, inside whatever saves and restores its training state), and sets the split it returns.
"""
import dataclasses
import os
import shutil
import warnings

from lorasim_hf._deps import require
from lorasim_hf.recommend import LorasimError, find_lorasim, whole_number
from lorasim_hf.rows import RowWriter
from lorasim_hf.tune_cache import Cache, device_name, embedded_gpu
from lorasim_hf.tune_lorasim import fit, predict, profile_facts, recommend_measured
from lorasim_hf.tune_pick import final_split
from lorasim_hf.tune_search import Search, Split
from lorasim_hf.tune_table import format_table, table_rows

_torch = require("torch")


@dataclasses.dataclass
class TuneResult:
    micro_batch: int
    accumulation: int
    grad_ckpt: bool  # gradient checkpointing as set on the trainer
    trial_steps: int  # optimizer steps the trials ran (or began, for one that ran out of memory)
    table: list  # one dict per split (and checkpointing mode): predicted and (where tried) measured time and peak
    rows_path: str  # the trial rows: `lorasim recommend --profile PROFILE --measured ROWS` replays the pick
    profile_path: str  # the refined profile (also kept in the cache as the next tune's base)
    notes: list = dataclasses.field(default_factory=list)  # why this split: the noise rule's verdict
    names: tuple = ("per_device_train_batch_size", "gradient_accumulation_steps")  # what the split sets

    def __str__(self):
        weighed = any(r["grad_ckpt"] is not None for r in self.table)
        return format_table(self.table, self.micro_batch, self.accumulation, self.grad_ckpt if weighed else None,
                            names=self.names)


class Tuning:
    """Construction checks the arguments and finds the base profile; `prior`, `search` and `pick`
    follow in that order."""

    def __init__(self, device, *, gpu, profile, max_trial_steps, lorasim, cache_dir, memory_limit, verbose,
                 cache_extra=()):
        self.max_trial_steps = whole_number("max_trial_steps", max_trial_steps, minimum=2)
        if gpu is not None and profile is not None:
            raise ValueError("give at most one of gpu= (an embedded profile) and profile= (a TOML file)")
        self.say = (lambda line: print(line, flush=True)) if verbose else (lambda line: None)
        self.exe = find_lorasim(lorasim)
        self.cache = Cache(cache_dir, device, cache_extra)
        self.gpu, self.profile, self.source = _base(self.cache, device, gpu, profile)
        self.facts = profile_facts(self.exe, self.gpu, self.profile)
        # Trials that run under the very limit training will run under prove a split fits by running;
        # a limit the user gives below the device's is only predicted against.
        self.enforced = memory_limit is None
        self.memory_limit = memory_limit if memory_limit is not None else _device_memory(device)
        self.modes, self.before, self.workload = [None], {}, None

    def variant(self, mode):
        return self.workload if mode is None else self.workload.variant(mode)

    def prior(self, workload, modes=(None,)):
        """lorasim's prediction of every split of each checkpointing mode; the faster mode first."""
        self.workload, self.modes = workload, list(modes)
        if workload.bf16_because and not self.facts["bf16_supported"]:  # before any step
            raise LorasimError(f"the trainer trains in bf16 ({workload.bf16_because}) but {self.source} is of the "
                               f"{self.facts['display_name']}, which has no bf16; {workload.fp16_hint} on that GPU, "
                               "or pass gpu=/profile= of a GPU with bf16")
        self.before = {m: predict(self.exe, self.variant(m), self.gpu, self.profile, self.memory_limit)
                       for m in self.modes}
        self.modes.sort(key=lambda m: _predicted_best_s(self.before[m]))  # the prior's faster mode is walked first
        weighed = "; gradient checkpointing weighed on and off" if len(self.modes) > 1 else ""
        self.say(f"lorasim tune: starting from {self.source}; effective batch {workload.effective_batch}; at most "
                 f"{self.max_trial_steps} trial optimizer steps{weighed}")
        for m in self.modes:
            self.say("  " + _prior_line(m, self.before[m]))
        self.say("  from the pick the micro-batch grows until one runs out of memory (or the budget ends)")
        if len(self.modes) > 1:
            self.say("  then the other setting, only at splits that could beat the best measured and fit (the prior "
                     "rescaled by the trials), from the smallest up")

    def search(self, run_trial):
        """{Split: Measured} of the trials and the optimizer steps they spent. run_trial(split, steps):
        the framework's trial; one whose peak passes the memory limit ran, but is the boundary all the same."""
        plans, priors = [], {}
        for m in self.modes:
            splits = [Split(s["micro_batch"], s["accumulation"], m)
                      for s in sorted(self.before[m]["splits"], key=lambda s: s["micro_batch"])]
            best = self.before[m].get("recommended")
            start = None if best is None else Split(best["micro_batch"], best["accumulation"], m)
            plans.append((splits, start))
            for s in self.before[m]["splits"]:  # what the other mode's trials are judged by, rescaled by the first's
                priors[Split(s["micro_batch"], s["accumulation"], m)] = (s["step_time_s"], s.get("worst_reserved_bytes"))
        usable = self.before[self.modes[0]].get("usable_memory_bytes")

        def limited(split, steps):
            m = run_trial(split, steps)
            m.over_limit = bool(self.memory_limit and m.peak_bytes and m.peak_bytes > self.memory_limit)
            return m

        search = Search(plans, self.max_trial_steps, limited, report=self.say, priors=priors, usable_bytes=usable)
        return search.run(), search.spent

    def pick(self, results, spent):
        """The split to set and the TuneResult (its grad_ckpt: the chosen mode's, None where one mode)."""
        if not any(r.ran for r in results.values()):
            raise LorasimError(f"every split tried ran out of memory ({', '.join(map(str, results))}); try gradient "
                               "checkpointing, a shorter max_length or a smaller effective batch")
        rows_path = _write_rows(self.cache.run_dir, "rows.jsonl", results.values())
        refined = _refit(self.exe, rows_path, self.cache, self.gpu, self.profile)
        picks = {}
        for m in self.modes:
            tried = [r for s, r in results.items() if s.grad_ckpt == m and r.row]
            if not tried:  # a mode the search knew without a trial: its prediction stands
                picks[m] = self.before[m]
                continue
            mode_rows = rows_path if len(self.modes) == 1 else _write_rows(
                self.cache.run_dir, f"rows-{'ckpt' if m else 'no-ckpt'}.jsonl", tried)
            picks[m] = recommend_measured(self.exe, self.variant(m), mode_rows, gpu=None if refined else self.gpu,
                                          profile=refined or self.profile, memory_limit=self.memory_limit)
        split, notes = final_split(results, picks, refined is not None, self.workload.effective_batch,
                                   ran_under_limit=self.enforced)
        for line in notes:
            self.say("lorasim tune: " + line)
        table = table_rows([(m if len(self.modes) > 1 else None, self.before[m], picks[m]) for m in self.modes],
                           results)
        result = TuneResult(split.micro_batch, split.accumulation, split.grad_ckpt, spent, table, rows_path,
                            refined or "", notes)
        return split, result


def _base(cache, device, gpu, profile):
    """(gpu, profile, what it is in words): profile=, else the cached refined one, else gpu=/the device's."""
    if profile is not None:
        return None, os.fspath(profile), f"the profile file {os.fspath(profile)}"
    if cache.has_profile():
        if gpu is not None:
            warnings.warn(f"tune: the refined profile cached for this device ({cache.profile}) replaces gpu='{gpu}'; "
                          "to start from gpu= again, delete that file or pass another cache_dir=", stacklevel=4)
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


def _write_rows(directory, name, measured):
    path = os.path.join(directory, name)
    writer = RowWriter(path)
    for m in measured:
        if m.row:
            writer.write(m.row)
    return path


def _device_memory(device):
    """The memory this process may use on its CUDA device (torch's per-process fraction of it), or None
    on the CPU: the real device's, whichever profile the prediction starts from."""
    if device.type != "cuda":
        return None
    fraction = min(1.0, _torch.cuda.get_per_process_memory_fraction(device))
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
