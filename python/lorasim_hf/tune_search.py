"""The tuner's search, shared by every framework's `tune`: which splits to try, in what order, within
a budget of optimizer steps; when two measured splits differ beyond their noise; which one to set.

No framework and no torch here: a trial is a callable `run_trial(split, steps) -> Measured` that
the framework's tuner supplies (HF Trainer: tune_trials.py), and every message goes to `report`.

The search starts at the prior's pick (lorasim's predicted fastest split that fits) and walks up
the micro-batches (the divisors of the effective batch B; accumulation B / micro-batch) until one
runs out of memory, goes over the memory limit, or the budget ends: a cautious prior no longer
caps the micro-batch. A pick that runs out of memory walks down instead. With checkpointing weighed
(`grad_ckpt="auto"`) the prior's faster mode walks first, to its boundary; the other mode is tried
only at splits that could beat the best measured and could fit, judged by the prior rescaled by
the trials (measured over predicted time and peak), from the smallest such micro-batch upward.
"""
import dataclasses
import math
import statistics

# Two splits differ when their step times are this far apart, relative to the faster ...
MIN_DIFFERENCE = 0.03
# ... and by more than this many standard errors of the difference.
Z = 2.0


@dataclasses.dataclass(frozen=True)
class Split:
    micro_batch: int
    accumulation: int
    grad_ckpt: object = None  # True/False when checkpointing is weighed; None: the trainer's own

    def __str__(self):
        mode = "" if self.grad_ckpt is None else " checkpointed" if self.grad_ckpt else " no checkpointing"
        return f"{self.micro_batch}x{self.accumulation}{mode}"


@dataclasses.dataclass
class Measured:
    """One split's trials: timed micro-batches and optimizer steps (each trial's first micro-batch
    and first optimizer step are its warm-up, not in these), or out of memory."""
    split: Split
    steps: int  # optimizer steps run or begun
    oom: bool = False
    micro_batch_times_s: list = dataclasses.field(default_factory=list)
    optimizer_times_s: list = dataclasses.field(default_factory=list)
    peak_bytes: object = None  # the trials' peak reserved memory, where the device has one
    over_limit: bool = False  # it ran, but its peak leaves less than the usable memory free
    row: dict = dataclasses.field(default_factory=dict)  # the framework's measurement row

    @property
    def ran(self):
        return not self.oom and bool(self.micro_batch_times_s)

    @property
    def step_time_s(self):
        """accumulation x the mean micro-batch + the mean optimizer step."""
        opt = statistics.fmean(self.optimizer_times_s) if self.optimizer_times_s else 0.0
        return self.split.accumulation * statistics.fmean(self.micro_batch_times_s) + opt

    @property
    def stderr_s(self):
        """The standard error of step_time_s from the spread of the timed micro-batches (and
        optimizer steps); None with fewer than two micro-batches timed."""
        mb, opt = self.micro_batch_times_s, self.optimizer_times_s
        if len(mb) < 2:
            return None
        var = self.split.accumulation ** 2 * statistics.variance(mb) / len(mb)
        if len(opt) >= 2:
            var += statistics.variance(opt) / len(opt)
        return math.sqrt(var)

    def merged(self, other):
        """This split's measurements pooled with another trial of it."""
        peaks = [p for p in (self.peak_bytes, other.peak_bytes) if p is not None]
        return dataclasses.replace(
            self, steps=self.steps + other.steps, oom=self.oom or other.oom,
            micro_batch_times_s=self.micro_batch_times_s + other.micro_batch_times_s,
            optimizer_times_s=self.optimizer_times_s + other.optimizer_times_s,
            peak_bytes=max(peaks) if peaks else None, over_limit=self.over_limit or other.over_limit,
            row=other.row or self.row)


def verdict(time_a_s, stderr_a_s, time_b_s, stderr_b_s):
    """"differ" when two step times are >= MIN_DIFFERENCE apart (relative to the faster) and more than
    Z standard errors of their difference; "tie" when under MIN_DIFFERENCE (too close to matter);
    "unresolved" when far enough apart to matter but within the noise (more timing may tell)."""
    gap = abs(time_a_s - time_b_s)
    if gap < MIN_DIFFERENCE * min(time_a_s, time_b_s):
        return "tie"
    return "differ" if gap > Z * math.hypot(stderr_a_s, stderr_b_s) else "unresolved"


def _stderrs(measured):
    """Each split's standard error; one with too few micro-batches timed borrows the median relative
    error of the others (the machine's noise), else none (then the 3% rule alone decides)."""
    known = [m.stderr_s / m.step_time_s for m in measured if m.stderr_s is not None]
    fallback = statistics.median(known) if known else 0.0
    return {m.split: m.stderr_s if m.stderr_s is not None else fallback * m.step_time_s for m in measured}


@dataclasses.dataclass
class Decision:
    chosen: Split
    fastest: Split  # the measured fastest; chosen differs where a larger micro-batch is within its noise
    near: list  # splits not told apart from the fastest (tie or unresolved), the fastest included
    unresolved: list  # of those, the ones 3% or more away that more timing could tell apart


def decide(measured):
    """Among splits that ran within the memory limit: the fastest, unless splits are not told apart
    from it -- then the largest micro-batch of those (it keeps the GPU busiest for the same speed)."""
    ok = [m for m in measured if m.ran and not m.over_limit]
    if not ok:
        return None
    se = _stderrs(ok)
    best = min(ok, key=lambda m: m.step_time_s)
    verdicts = {m.split: verdict(best.step_time_s, se[best.split], m.step_time_s, se[m.split]) for m in ok}
    near = [m for m in ok if m is best or verdicts[m.split] != "differ"]
    chosen = max(near, key=lambda m: (m.split.micro_batch, -m.step_time_s))
    unresolved = [m.split for m in near if m is not best and verdicts[m.split] == "unresolved"]
    return Decision(chosen.split, best.split, [m.split for m in near], unresolved)


def trial_steps(accumulation):
    """A trial's optimizer steps: one warm-up, then enough to time at least two micro-batches."""
    return 2 if accumulation >= 2 else 3


class Search:
    """Runs the trials: `run()` returns {Split: Measured}; `spent` counts optimizer steps."""

    def __init__(self, modes, budget_steps, run_trial, report=None, refit_splits=3, priors=None, usable_bytes=None):
        """modes: [(splits ordered by micro-batch, the prior's pick among them or None)], the preferred
        mode first; run_trial(split, steps) -> Measured; report(line) prints a line as it goes.
        priors: {Split: (predicted step time s, predicted worst peak bytes or None)} of every mode,
        usable_bytes: the memory a split may hold; with priors, a later mode is gated by them."""
        self.modes, self.budget, self.run_trial = modes, budget_steps, run_trial
        self.report = report or (lambda line: None)
        self.refit_splits = refit_splits
        self.priors, self.usable_bytes = priors or {}, usable_bytes
        self.results, self.spent, self.trials = {}, 0, 0

    def left(self):
        return self.budget - self.spent

    def _trial(self, split):
        """One trial of `split`, its steps within the budget."""
        steps = min(trial_steps(split.accumulation), self.left())
        m = dataclasses.replace(self.run_trial(split, steps), split=split)
        self.spent += max(1, m.steps)
        self.trials += 1
        old = self.results.get(split)
        self.results[split] = m if old is None else old.merged(m)
        line = trial_line(self.trials, m, again=old is not None)
        if old is not None and self.results[split].ran:
            pooled = self.results[split]
            line += f" (all its trials: {pooled.step_time_s:.4f} s/step{_noise(pooled)})"
        self.report(line)
        return m

    def _stopped(self, m):
        return m.oom or m.over_limit or not m.ran

    def _skipped(self, split):
        """Splits known without running: checkpointing never makes a micro-batch faster, so a
        checkpointed one at or below a micro-batch that ran without is not tried; and one without
        checkpointing at or above a micro-batch that ran out of memory with it would too."""
        if split.grad_ckpt is None:
            return False
        other = [m for m in self.results.values() if m.split.grad_ckpt not in (None, split.grad_ckpt)]
        if split.grad_ckpt:
            return any(m.ran and not m.over_limit and m.split.micro_batch >= split.micro_batch for m in other)
        return any(self._stopped(m) and m.split.micro_batch <= split.micro_batch for m in other)

    def _allowed(self, splits):
        """The splits not known without running; says so in a line when none is left."""
        allowed = [s for s in splits if not self._skipped(s)]
        if not allowed and splits and splits[0].grad_ckpt:
            self.report("  with checkpointing: nothing to try (it is slower at every micro-batch up to one that "
                        "ran without it)")
        elif not allowed and splits:
            self.report("  without checkpointing: nothing to try (every micro-batch ran out of memory with it)")
        return allowed

    def _walk(self, splits, start):
        """Up from `start` (None: the smallest) to the first split that does not run; down from it if
        it does not. Until its boundary it keeps the budget: no other mode is started before."""
        allowed = self._allowed(splits)
        if not allowed:
            return
        if start is None:
            start = allowed[0]
        elif start not in allowed:
            below = [s for s in allowed if s.micro_batch <= start.micro_batch]
            start = below[-1] if below else allowed[0]
        i = allowed.index(start)
        first = self._trial(start) if self.left() >= 2 else None
        if first is None:
            return
        step = -1 if self._stopped(first) else 1
        i += step
        while 0 <= i < len(allowed) and self.left() >= 2:
            m = self._trial(allowed[i])
            if step == 1 and self._stopped(m) or step == -1 and not self._stopped(m):
                return
            i += step

    def _gated_walk(self, splits):
        """A later mode: from the smallest micro-batch that could beat the best measured and fit, up
        through such splits until one does not run; nothing (and a line saying why) when none could."""
        allowed = self._allowed(splits)
        last = 0
        while allowed:
            candidates = [s for s in self._candidates(allowed) if s.micro_batch > last]
            if not candidates:
                if last == 0:
                    self.report(self._skip_line(splits[0].grad_ckpt))
                return
            if self.left() < 2:
                self.report(f"  {_mode_words(splits[0].grad_ckpt)}: the budget is spent before "
                            f"{candidates[0]} could be tried")
                return
            m = self._trial(candidates[0])
            if self._stopped(m):
                return
            last = candidates[0].micro_batch

    def _best_measured(self):
        ok = [m for m in self.results.values() if m.ran and not m.over_limit]
        return min(ok, key=lambda m: m.step_time_s) if ok else None

    def _ratios(self, grad_ckpt):
        """(measured / predicted step time, measured / predicted peak): medians over this mode's
        trials that ran, else over every mode's; None where nothing tells."""
        ran = [m for m in self.results.values() if m.ran and m.split in self.priors]
        own = [m for m in ran if m.split.grad_ckpt == grad_ckpt]
        ran = own or ran
        times = [m.step_time_s / self.priors[m.split][0] for m in ran if self.priors[m.split][0]]
        peaks = [m.peak_bytes / self.priors[m.split][1] for m in ran
                 if m.peak_bytes is not None and self.priors[m.split][1]]
        return (statistics.median(times) if times else None, statistics.median(peaks) if peaks else None)

    def _candidates(self, allowed):
        """The untried splits of `allowed` that could beat the best measured and could fit: the prior
        rescaled by the trials; without checkpointing a micro-batch holds at least its measured peak
        with checkpointing."""
        best = self._best_measured()
        time_x, peak_x = self._ratios(allowed[0].grad_ckpt)
        out = []
        for s in allowed:
            time_s, peak = self.priors.get(s, (None, None))
            if s in self.results:
                continue
            if best is not None and time_x is not None and time_s is not None and time_s * time_x >= best.step_time_s:
                continue
            floor = [m.peak_bytes for m in self.results.values() if s.grad_ckpt is False and m.split.grad_ckpt
                     and m.split.micro_batch == s.micro_batch and m.peak_bytes is not None]
            need = max(([peak * peak_x] if peak is not None and peak_x is not None else []) + floor, default=None)
            if need is not None and self.usable_bytes and need > self.usable_bytes:
                continue
            out.append(s)
        return out

    def _skip_line(self, grad_ckpt):
        best = self._best_measured()
        time_x, peak_x = self._ratios(grad_ckpt)
        beat = f"beat the measured best ({best.split} at {best.step_time_s:.4f} s/step) and " if best else ""
        scale = ", ".join(f"{what} x{x:.2f}" for what, x in (("time", time_x), ("peak", peak_x)) if x is not None)
        return (f"  {_mode_words(grad_ckpt)}: not tried -- no split could {beat}fit, by the prior rescaled by the "
                f"trials ({scale or 'no trial to rescale by'})")

    def run(self):
        for k, (splits, start) in enumerate(self.modes):
            if k == 0 or not self.priors:
                self._walk(splits, start)
            else:
                self._gated_walk(splits)
        while self.left() >= 2:
            split = self._next_refinement()
            if split is None:
                break
            self._trial(split)
        return self.results

    def _next_refinement(self):
        """More timing of the split the decision is least sure of; else, for the refit, a smaller
        micro-batch of the preferred mode while fewer than `refit_splits` ran."""
        d = decide(list(self.results.values()))
        if d is not None and d.unresolved:
            contenders = [self.results[s] for s in d.unresolved + [d.fastest]]
            se = _stderrs(contenders)
            return max(contenders, key=lambda m: se[m.split] / m.step_time_s).split
        splits = self.modes[0][0]
        ran = [s for s in splits if s in self.results and self.results[s].ran]
        if not ran or len(ran) >= self.refit_splits:
            return None
        smaller = [s for s in splits if s not in self.results and s.micro_batch < ran[0].micro_batch]
        return smaller[-1] if smaller else None


def _mode_words(grad_ckpt):
    return {None: "the splits", True: "with checkpointing", False: "without checkpointing"}[grad_ckpt]


def _noise(m):
    se = m.stderr_s
    return f" +- {100 * se / m.step_time_s:.1f}%" if se is not None else ""


def trial_line(number, m, again=False):
    """One line per trial: the split, its steps, and its time per step (with its standard error) or out of memory."""
    head = f"  trial {number}: {m.split}{' again' if again else ''}, {m.steps} step{'s' if m.steps != 1 else ''}: "
    if m.oom:
        return head + "out of memory"
    if not m.ran:
        return head + "no micro-batch timed"
    noise = _noise(m)
    peak = f", peak {m.peak_bytes / 2**30:.2f} GiB" if m.peak_bytes is not None else ""
    over = " (over the memory limit)" if m.over_limit else ""
    return head + f"{m.step_time_s:.4f} s/step{noise}{peak}{over}"


def decision_line(decision, results):
    """Why the chosen split: the measured fastest, or the largest micro-batch within its noise."""
    best = results[decision.fastest]
    if decision.chosen == decision.fastest:
        others = [s for s in decision.near if s != decision.fastest]
        tail = f"; {', '.join(map(str, others))} within the noise of it" if others else ""
        return f"measured fastest: {decision.fastest} at {best.step_time_s:.4f} s/step{tail}"
    chosen = results[decision.chosen]
    gap = 100 * (chosen.step_time_s - best.step_time_s) / best.step_time_s
    return (f"{decision.chosen} ({chosen.step_time_s:.4f} s/step) and the measured fastest {decision.fastest} "
            f"({best.step_time_s:.4f}) are within the noise ({gap:+.1f}%): the larger micro-batch is taken")
