"""lorasim_hf.tune_search without a framework: the noise rule, the decision, and the boundary
search driven by a fake trial runner (out of memory above a given micro-batch), so the order of
the trials, their steps and the budget are exact."""
import math
import types
import warnings

import pytest
from conftest import lorasim_binary

from lorasim_hf.tune_search import (Measured, Search, Split, decide, decision_line, trial_line, trial_steps,
                                    verdict)


def measured(b, a, micro, opt=(), grad_ckpt=None, steps=2, **kw):
    return Measured(Split(b, a, grad_ckpt), steps, micro_batch_times_s=list(micro), optimizer_times_s=list(opt), **kw)


def test_step_time_and_standard_error_come_from_the_timed_micro_batches():
    m = measured(2, 2, [0.1, 0.3], [0.05, 0.07])
    assert m.step_time_s == pytest.approx(2 * 0.2 + 0.06)
    # accumulation^2 var(micro)/n + var(opt)/n = 4 * 0.02 / 2 + 0.0002 / 2
    assert m.stderr_s == pytest.approx(math.sqrt(0.04 + 0.0001))
    assert measured(4, 1, [0.2], [0.01]).stderr_s is None  # one micro-batch: no spread to tell


def test_verdict_needs_three_percent_and_two_standard_errors():
    assert verdict(1.00, 0.001, 1.05, 0.001) == "differ"
    assert verdict(1.00, 0.02, 1.05, 0.02) == "unresolved"  # 0.05 <= 2 * hypot(0.02, 0.02) = 0.0566
    assert verdict(1.00, 0.02, 1.06, 0.02) == "differ"  # 0.06 > 0.0566
    assert verdict(1.00, 0.0, 1.029, 0.0) == "tie"  # under 3%: too close to matter, whatever the noise
    assert verdict(1.03, 0.0, 1.00, 0.0) == "differ"  # exactly 3% of the faster counts


def test_decide_takes_the_fastest_unless_a_larger_micro_batch_is_within_its_noise():
    clear = [measured(2, 4, [0.10, 0.1001, 0.0999]), measured(4, 2, [0.15, 0.1501, 0.1499])]
    d = decide(clear)  # 2x4: 0.40 s, 4x2: 0.30 s, both +- 0.03%
    assert (d.chosen, d.fastest, d.unresolved) == (Split(4, 2), Split(4, 2), [])
    close = [measured(2, 4, [0.100, 0.1001, 0.0999]), measured(4, 2, [0.2030, 0.2031, 0.2029])]
    d = decide(close)  # 0.400 against 0.406: 1.5% apart, a tie -> the larger micro-batch
    assert (d.chosen, d.fastest, d.near) == (Split(4, 2), Split(2, 4), [Split(2, 4), Split(4, 2)])
    assert "within the noise (+1.5%): the larger micro-batch is taken" in decision_line(
        d, {m.split: m for m in close})
    noisy = [measured(2, 4, [0.08, 0.12, 0.10]), measured(4, 2, [0.19, 0.24, 0.21])]
    d = decide(noisy)  # 0.40 against 0.427 s: 6.7% apart, but within 2 standard errors
    assert d.chosen == Split(4, 2) and d.unresolved == [Split(4, 2)]


def test_decide_leaves_out_what_ran_out_of_memory_or_over_the_limit():
    ms = [measured(2, 4, [0.10, 0.10]), measured(4, 2, [0.10, 0.10], over_limit=True),
          Measured(Split(8, 1), 1, oom=True)]
    assert decide(ms).chosen == Split(2, 4)
    assert decide([Measured(Split(8, 1), 1, oom=True)]) is None


class FakeDevice:
    """A trial runner: micro-batch time c + d*b (+ a fixed pattern of noise), out of memory above
    `fits_up_to` (after `oom_after` steps begun), and a log of what ran."""

    def __init__(self, fits_up_to, c=0.05, d=0.01, noise=0.0, ckpt_fits_up_to=None, ckpt_cost=1.3, oom_after=1):
        self.fits_up_to, self.ckpt_fits_up_to = fits_up_to, ckpt_fits_up_to
        self.c, self.d, self.noise, self.ckpt_cost, self.oom_after = c, d, noise, ckpt_cost, oom_after
        self.log = []

    def __call__(self, split, steps):
        self.log.append((str(split), steps))
        limit = self.ckpt_fits_up_to if split.grad_ckpt else self.fits_up_to
        if split.micro_batch > limit:
            return Measured(split, min(steps, self.oom_after), oom=True)
        t = (self.c + self.d * split.micro_batch) * (self.ckpt_cost if split.grad_ckpt else 1.0)
        n = steps * split.accumulation - 1
        micro = [t * (1 + self.noise * (-1) ** i) for i in range(n)]
        return Measured(split, steps, micro_batch_times_s=micro, optimizer_times_s=[0.01] * (steps - 1))


def splits(effective_batch, grad_ckpt=None):
    return [Split(b, effective_batch // b, grad_ckpt) for b in range(1, effective_batch + 1)
            if effective_batch % b == 0]


def test_the_search_walks_up_from_a_cautious_pick_to_the_out_of_memory():
    device, lines = FakeDevice(fits_up_to=8), []
    s = Search([(splits(16), Split(2, 8))], 10, device, report=lines.append)
    results = s.run()
    # Up from the prior's 2x8 to 16x1, which runs out of memory in its first step; a=1 gets 3 steps.
    assert device.log == [("2x8", 2), ("4x4", 2), ("8x2", 2), ("16x1", 3)]
    assert s.spent == 7 and results[Split(16, 1)].oom
    assert decide(list(results.values())).chosen == Split(8, 2)
    assert lines[0] == "  trial 1: 2x8, 2 steps: 0.5700 s/step +- 0.0%"  # 8 x (0.05 + 0.02) + 0.01
    assert lines[3] == "  trial 4: 16x1, 1 step: out of memory"


def test_a_pick_that_runs_out_of_memory_walks_down_to_the_first_that_runs():
    device = FakeDevice(fits_up_to=2)
    results = Search([(splits(16), Split(8, 2))], 10, device).run()
    assert [b for b, _ in device.log][:3] == ["8x2", "4x4", "2x8"]
    # Then, for the refit, one smaller split while the budget lasts (three ran would be wanted).
    assert device.log[3:] == [("1x16", 2)]
    assert decide(list(results.values())).chosen == Split(2, 8)


def test_the_budget_ends_the_walk_and_is_never_exceeded():
    device = FakeDevice(fits_up_to=16)
    s = Search([(splits(16), Split(1, 16))], 5, device)
    s.run()
    assert device.log == [("1x16", 2), ("2x8", 2)]  # a third trial would need 2 more steps than are left
    assert s.spent == 4
    device = FakeDevice(fits_up_to=16, oom_after=1)
    s = Search([(splits(4), Split(2, 2))], 4, device)
    s.run()
    assert device.log == [("2x2", 2), ("4x1", 2)]  # the last trial gets what is left: 2 steps, not 3
    assert s.spent == 4


def test_splits_within_the_noise_get_more_timing_while_the_budget_lasts():
    # Alternating +-8% noise: 4x2 (0.098 s) and 8x1 (0.094 s) are 4% apart, within 2 standard errors.
    device = FakeDevice(fits_up_to=8, c=0.004, d=0.01, noise=0.08)
    s = Search([(splits(8), Split(4, 2))], 12, device)
    results = s.run()
    assert device.log[:2] == [("4x2", 2), ("8x1", 3)]
    assert len(device.log) > 2 and all(split in ("4x2", "8x1") for split, _ in device.log[2:])
    assert s.spent <= 12
    pooled = results[Split(8, 1)] if device.log.count(("8x1", 3)) > 1 else results[Split(4, 2)]
    assert pooled.steps > 3  # the re-run's micro-batches are pooled with the first trial's


def test_checkpointing_weighed_walks_each_mode_and_skips_what_is_known():
    # Without checkpointing 2 fits, with it 8; the prior prefers no checkpointing, picks 2x8 there, 4x4 with.
    device = FakeDevice(fits_up_to=2, ckpt_fits_up_to=8)
    modes = [(splits(16, False), Split(2, 8, False)), (splits(16, True), Split(4, 4, True))]
    s = Search(modes, 10, device)
    results = s.run()
    assert device.log[:4] == [("2x8 no checkpointing", 2), ("4x4 no checkpointing", 2),
                              ("4x4 checkpointed", 2), ("8x2 checkpointed", 2)]
    assert s.spent <= 10
    # 1x16 and 2x8 checkpointed are never tried: without checkpointing 2 ran, and is faster.
    assert not any(str(k) in ("1x16 checkpointed", "2x8 checkpointed") for k in results)
    best = decide(list(results.values()))
    assert best.chosen == Split(8, 2, True)  # 1.3 x (0.05 + 0.08) x 2 = 0.338 s against 0.56 s at 2x8


def test_without_checkpointing_a_micro_batch_that_ran_out_of_memory_with_it_is_not_tried():
    device = FakeDevice(fits_up_to=4, ckpt_fits_up_to=4)
    modes = [(splits(8, True), Split(4, 2, True)), (splits(8, False), Split(8, 1, False))]
    Search(modes, 10, device).run()
    # 8x1 ran out of memory with checkpointing: without it the walk starts at 4x2.
    assert device.log[:3] == [("4x2 checkpointed", 2), ("8x1 checkpointed", 3), ("4x2 no checkpointing", 2)]
    assert ("8x1 no checkpointing", 3) not in device.log


def test_trial_steps_time_at_least_two_micro_batches():
    assert trial_steps(1) == 3 and trial_steps(2) == 2 and trial_steps(16) == 2


def test_the_trial_line_says_split_steps_time_noise_and_peak():
    m = measured(4, 2, [0.1, 0.1, 0.1], [0.02], peak_bytes=3 * 2**30)
    assert trial_line(2, m) == "  trial 2: 4x2, 2 steps: 0.2200 s/step +- 0.0%, peak 3.00 GiB"
    over = measured(8, 1, [0.1], [0.02], grad_ckpt=True, peak_bytes=2**30, over_limit=True)
    assert trial_line(3, over) == "  trial 3: 8x1 checkpointed, 2 steps: 0.1200 s/step, peak 1.00 GiB " \
                                  "(over the memory limit)"


def test_a_split_over_the_limit_without_checkpointing_leaves_checkpointing_to_try():
    def run_trial(split, steps):
        m = Measured(split, steps, micro_batch_times_s=[0.1] * 3, optimizer_times_s=[0.01])
        m.over_limit = not split.grad_ckpt and split.micro_batch >= 4  # it ran, its peak past the limit
        return m

    s = Search([(splits(4, False), Split(4, 1, False)), (splits(4, True), Split(4, 1, True))], 10, run_trial)
    results = s.run()
    assert results[Split(4, 1, True)].ran  # 4x1 without ran over the limit: with checkpointing it is tried
    assert decide(list(results.values())).chosen == Split(4, 1, True)


def test_a_walk_short_of_its_boundary_keeps_the_budget_before_another_mode():
    device, lines = FakeDevice(fits_up_to=16, ckpt_fits_up_to=16), []
    modes = [(splits(16, False), Split(1, 16, False)), (splits(16, True), Split(8, 2, True))]
    s = Search(modes, 10, device, report=lines.append)
    s.run()
    # No step is kept back for checkpointing: the walk goes on up to 16x1 (the last 2 steps), and
    # every micro-batch then ran without checkpointing, which is faster.
    assert device.log == [("1x16 no checkpointing", 2), ("2x8 no checkpointing", 2), ("4x4 no checkpointing", 2),
                          ("8x2 no checkpointing", 2), ("16x1 no checkpointing", 2)]
    assert s.spent == 10
    assert lines[-1] == ("  with checkpointing: nothing to try (it is slower at every micro-batch up to one that "
                         "ran without it)")


# The H100 run of issue 28 (SFTTrainer, qwen3-1.7b, lengths up to 1024, B=16, 9 GiB cap) from the
# prior of an A10G: {micro-batch: (predicted s, predicted worst GiB)} with and without
# checkpointing, and what the H100 measured (s, peak GiB); without checkpointing every split ran
# out of memory.
PRIOR_CKPT = {1: (7.5301, 6.64), 2: (5.2806, 7.41), 4: (6.2200, 8.95), 8: (7.2789, 11.71), 16: (8.4069, 17.22)}
PRIOR_NO_CKPT = {1: (4.0843, 14.16), 2: (3.7915, 22.46), 4: (4.4340, 39.07), 8: (5.1542, 71.29),
                 16: (5.9344, 135.74)}
H100_CKPT = {1: (7.45, 3.90), 2: (3.7226, 4.28), 4: (1.8669, 5.08), 8: (0.9488, 6.10), 16: (0.8303, 8.50)}


def h100_device(log):
    def run_trial(split, steps):
        log.append((str(split), steps))
        if not split.grad_ckpt:
            return Measured(split, 1, oom=True)
        step_s, peak_gib = H100_CKPT[split.micro_batch]
        n = steps * split.accumulation - 1
        micro = [(step_s - 0.01) / split.accumulation] * n
        return Measured(split, steps, micro_batch_times_s=micro, optimizer_times_s=[0.01] * (steps - 1),
                        peak_bytes=peak_gib * 2**30)
    return run_trial


def a10g_priors():
    priors = {}
    for grad_ckpt, table in ((True, PRIOR_CKPT), (False, PRIOR_NO_CKPT)):
        for b, (step_s, gib) in table.items():
            priors[Split(b, 16 // b, grad_ckpt)] = (step_s, gib * 2**30)
    return priors


@pytest.mark.parametrize("budget", [10, 16])
def test_a_wrong_prior_still_ends_at_the_fastest_split_that_fits(budget):
    log, lines = [], []
    # The prior's faster mode is checkpointing (nothing fits without): its pick 2x8 is walked first.
    modes = [(splits(16, True), Split(2, 8, True)), (splits(16, False), None)]
    s = Search(modes, budget, h100_device(log), report=lines.append, priors=a10g_priors(), usable_bytes=9 * 2**30)
    results = s.run()
    assert log[:4] == [("2x8 checkpointed", 2), ("4x4 checkpointed", 2), ("8x2 checkpointed", 2),
                       ("16x1 checkpointed", 3)]
    assert s.spent <= budget
    assert not any(split.endswith("no checkpointing") for split, _ in log)
    assert decide(list(results.values())).chosen == Split(16, 1, True)
    if budget > 10:
        # Rescaled by the trials (medians: time x0.215, peak x0.544), 2x8 could beat 0.83 s (0.816 s)
        # but needs 12.2 GiB; 1x16 would fit (7.7 GiB) but not beat it (0.879 s): none is tried.
        assert ("  without checkpointing: not tried -- no split could beat the measured best (16x1 checkpointed "
                "at 0.8303 s/step) and fit, by the prior rescaled by the trials (time x0.22, peak x0.54)") in lines


def test_the_second_mode_starts_at_its_smallest_candidate_and_walks_up():
    log = []
    device = FakeDevice(fits_up_to=8, ckpt_fits_up_to=16, c=0.05, d=0.01, ckpt_cost=1.5)

    def run_trial(split, steps):
        log.append(str(split))
        return device(split, steps)

    # The prior is exact (ratio 1), without peaks: of the splits without checkpointing only 8x2
    # (0.27 s) and 16x1 (0.22 s) beat the best checkpointed, 16x1 (0.01 + 1.5 x 0.21 = 0.325 s);
    # 4x4 (0.37 s) does not. The walk starts at 8x2, not at the largest, and ends at 16x1's OOM.
    priors = {}
    for grad_ckpt, cost in ((True, 1.5), (False, 1.0)):
        for sp in splits(16, grad_ckpt):
            priors[sp] = (sp.accumulation * cost * (0.05 + 0.01 * sp.micro_batch) + 0.01, None)
    modes = [(splits(16, True), Split(4, 4, True)), (splits(16, False), None)]
    results = Search(modes, 20, run_trial, priors=priors).run()
    assert log[:5] == ["4x4 checkpointed", "8x2 checkpointed", "16x1 checkpointed", "8x2 no checkpointing",
                       "16x1 no checkpointing"]
    assert not any(b in log for b in ("1x16 no checkpointing", "2x8 no checkpointing", "4x4 no checkpointing"))
    assert decide(list(results.values())).chosen == Split(8, 2, False)


def test_tune_hands_lorasim_its_own_rows_of_another_device(tmp_path):
    # Issue 28's cap15: rows of the H100 on the a10g prior (gpu= given on purpose). lorasim refuses
    # rows of another device unless told; tune tells it, so the rows are matched, not overlaid.
    from lorasim_hf.tune_lorasim import recommend_measured

    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/lorasim or $LORASIM)")
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"model": "qwen3-1.7b", "seq_len": 512, "micro_batch": 4, "accumulation": 4, "grad_ckpt": false, '
                    '"step_time_s": 0.7646, "peak_reserved_bytes": 15051259904, "stack": "hf-peft", '
                    '"device": "NVIDIA H100 80GB HBM3"}\n')
    workload = types.SimpleNamespace(effective_batch=16, lengths_path=None,
                                     flags=["--model", "qwen3-1.7b", "--seq-len", "512", "--stack", "hf-peft",
                                            "--grad-ckpt", "false"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the "did not match" fallback would warn
        pick = recommend_measured(exe, workload, str(rows), gpu="a10g", memory_limit=15 * 2**30)
    four = [s for s in pick["splits"] if s["micro_batch"] == 4]
    assert len(four) == 1 and four[0]["measured"] and four[0]["step_time_s"] == 0.7646
