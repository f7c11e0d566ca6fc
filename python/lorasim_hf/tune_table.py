"""The tuner's table: every split with lorasim's prediction before the trials (step time, the
worst-case peak reserved that decides `fits`) and, for the splits tried, the measured step time
and peak reserved, or `oom`.
"""


def table_rows(before, pick, trial_rows):
    """One dict per split, in increasing micro-batch."""
    measured = {(r["micro_batch"], r["accumulation"]): r for r in trial_rows}
    after = {(s["micro_batch"], s["accumulation"]): s for s in pick["splits"]}
    out = []
    for s in sorted(before["splits"], key=lambda s: s["micro_batch"]):
        key = (s["micro_batch"], s["accumulation"])
        row = {"micro_batch": key[0], "accumulation": key[1], "predicted_step_time_s": s["step_time_s"],
               "predicted_peak_reserved_bytes": s.get("worst_reserved_bytes", s.get("peak_reserved_bytes")),
               "predicted_fits": bool(s["fits"]), "tried": key in measured, "oom": None,
               "measured_step_time_s": None, "measured_peak_reserved_bytes": None,
               "fits": bool(after[key]["fits"]) if key in after else None}
        m = measured.get(key)
        if m is not None:
            row["oom"] = bool(m["oom"])
            row["measured_step_time_s"] = m.get("step_time_s")
            row["measured_peak_reserved_bytes"] = m.get("peak_reserved_bytes")
        out.append(row)
    return out


def _gib(value):
    return "-" if value is None else f"{value / 2**30:.2f}"


def _s(value):
    return "-" if value is None else f"{value:.4f}"


def format_table(rows, micro_batch, accumulation):
    head = ("split", "predicted s", "worst GiB", "fits", "measured s", "measured GiB", "")
    lines = [head]
    for r in rows:
        chosen = (r["micro_batch"], r["accumulation"]) == (micro_batch, accumulation)
        if r["oom"]:
            measured = ("oom", "oom")
        else:
            measured = (_s(r["measured_step_time_s"]), _gib(r["measured_peak_reserved_bytes"]))
        lines.append((f"{r['micro_batch']}x{r['accumulation']}", _s(r["predicted_step_time_s"]),
                      _gib(r["predicted_peak_reserved_bytes"]), "yes" if r["predicted_fits"] else "no",
                      *measured, "<- chosen" if chosen else ""))
    widths = [max(len(line[i]) for line in lines) for i in range(len(head))]
    text = "\n".join("  ".join(c.rjust(w) for c, w in zip(line, widths)).rstrip() for line in lines)
    return f"lorasim tune: {micro_batch}x{accumulation} (per_device_train_batch_size x " \
           f"gradient_accumulation_steps)\n{text}"
