"""The tuner's table: every split with lorasim's prediction before the trials (step time, the
worst-case peak reserved that decides `fits`) and, for the splits tried, the measured step time
and peak reserved, or `oom`. With checkpointing weighed, every split twice: with and without.
"""


def table_rows(modes, results):
    """One dict per split and checkpointing mode, in increasing micro-batch. modes: [(grad_ckpt,
    lorasim's prediction before the trials, its pick after them)], grad_ckpt None for the trainer's
    own; results: {tune_search.Split: Measured}."""
    measured = {(s.micro_batch, s.accumulation, s.grad_ckpt): m for s, m in results.items()}
    out = []
    for grad_ckpt, before, pick in modes:
        after = {(s["micro_batch"], s["accumulation"]): s for s in pick["splits"]}
        for s in sorted(before["splits"], key=lambda s: s["micro_batch"]):
            key = (s["micro_batch"], s["accumulation"])
            row = {"micro_batch": key[0], "accumulation": key[1], "grad_ckpt": grad_ckpt,
                   "predicted_step_time_s": s["step_time_s"],
                   "predicted_peak_reserved_bytes": s.get("worst_reserved_bytes", s.get("peak_reserved_bytes")),
                   "predicted_fits": bool(s["fits"]), "tried": False, "oom": None, "measured_step_time_s": None,
                   "measured_peak_reserved_bytes": None, "fits": bool(after[key]["fits"]) if key in after else None}
            m = measured.get(key + (grad_ckpt,))
            if m is not None:
                row.update(tried=True, oom=bool(m.oom), measured_step_time_s=m.step_time_s if m.ran else None,
                           measured_peak_reserved_bytes=m.peak_bytes)
            out.append(row)
    return out


def _gib(value):
    return "-" if value is None else f"{value / 2**30:.2f}"


def _s(value):
    return "-" if value is None else f"{value:.4f}"


def _mode(grad_ckpt):
    return {None: "", True: "ckpt", False: "no ckpt"}[grad_ckpt]


def format_table(rows, micro_batch, accumulation, grad_ckpt=None,
                 names=("per_device_train_batch_size", "gradient_accumulation_steps")):
    weighed = any(r["grad_ckpt"] is not None for r in rows)
    head = ("split",) + (("checkpointing",) if weighed else ()) + (
        "predicted s", "worst GiB", "fits", "measured s", "measured GiB", "")
    lines = [head]
    for r in rows:
        chosen = (r["micro_batch"], r["accumulation"]) == (micro_batch, accumulation) and \
            (not weighed or r["grad_ckpt"] == grad_ckpt)
        if r["oom"]:
            measured = ("oom", "oom")
        else:
            measured = (_s(r["measured_step_time_s"]), _gib(r["measured_peak_reserved_bytes"]))
        mode = (_mode(r["grad_ckpt"]),) if weighed else ()
        lines.append((f"{r['micro_batch']}x{r['accumulation']}", *mode, _s(r["predicted_step_time_s"]),
                      _gib(r["predicted_peak_reserved_bytes"]), "yes" if r["predicted_fits"] else "no",
                      *measured, "<- chosen" if chosen else ""))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)).rstrip() for line in lines)
    ckpt = f", gradient_checkpointing={grad_ckpt}" if weighed else ""
    return f"lorasim tune: {micro_batch}x{accumulation}{ckpt} ({names[0]} x {names[1]})\n{text}"
