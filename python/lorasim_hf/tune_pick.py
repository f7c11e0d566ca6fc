"""The tuner's last word: lorasim's pick after the refit (the measured splits at their measured time
and peak, the others predicted) weighed against the noise rule of the measured splits.

A split that ran is set by tune_search.decide: the fastest measured, or the largest micro-batch
within its noise. An untried split is set only where the refined profile predicts it faster than
the best measured by at least tune_search.MIN_DIFFERENCE and its micro-batch is below one that ran
in the same checkpointing mode (its memory is then bounded by a measurement, not only predicted).
"""
from lorasim_hf.recommend import LorasimError
from lorasim_hf.tune_search import MIN_DIFFERENCE, Split, decide, decision_line


def mark_limits(results, picks, ran_under_limit=False):
    """A measured split lorasim calls not fitting (its measured peak against the usable memory and
    the measurement's margin) is over the limit: the decision does not take it. Without a measured
    peak (the CPU) lorasim's verdict is a prediction, and the trial that ran outranks it; so does a
    trial that ran, its worst micro-batch included, under the limit training runs under (ran_under_limit):
    a capped allocator fills its cap before it frees cached blocks, so such a peak sits at the limit."""
    if ran_under_limit:
        return
    for split, m in results.items():
        pick = picks.get(split.grad_ckpt)
        if pick is None or not m.ran or m.peak_bytes is None:
            continue
        for s in pick["splits"]:
            if (s["micro_batch"], s["accumulation"]) == (split.micro_batch, split.accumulation) and not s["fits"]:
                m.over_limit = True


def _untried_pick(results, picks, best_s, refined):
    """lorasim's pick of a split never tried, where the rule above lets it stand; else None."""
    if not refined:
        return None
    found = None
    for grad_ckpt, pick in picks.items():
        rec = pick.get("recommended")
        if rec is None:
            continue
        split = Split(int(rec["micro_batch"]), int(rec["accumulation"]), grad_ckpt)
        ran = [s.micro_batch for s, m in results.items() if s.grad_ckpt == grad_ckpt and m.ran and not m.over_limit]
        if split in results or not ran or split.micro_batch >= max(ran):
            continue
        if rec["step_time_s"] <= (1 - MIN_DIFFERENCE) * best_s and (found is None or rec["step_time_s"] < found[1]):
            found = (split, rec["step_time_s"])
    return found


def final_split(results, picks, refined, effective_batch, ran_under_limit=False):
    """(the Split to set, the lines saying why). picks: {grad_ckpt: lorasim's pick with the measured
    splits}; refined: whether the profile was refit on the trials; ran_under_limit: mark_limits'."""
    mark_limits(results, picks, ran_under_limit)
    decision = decide(list(results.values()))
    if decision is None:
        tried = ", ".join(str(s) for s in results)
        raise LorasimError(f"no split of effective batch {effective_batch} that ran fits in the usable memory "
                           f"({tried} tried); try gradient checkpointing, a shorter max_length or a smaller "
                           "effective batch")
    lines = [decision_line(decision, results)]
    best_s = results[decision.fastest].step_time_s
    untried = _untried_pick(results, picks, best_s, refined)
    if untried is not None:
        split, predicted_s = untried
        lines.append(f"the refined profile predicts {split} (not tried) at {predicted_s:.4f} s/step, "
                     f"{100 * (1 - predicted_s / best_s):.0f}% faster than the measured best: it is set")
        return split, lines
    return decision.chosen, lines
