#!/usr/bin/env python3
"""Scores `lorasim simulate --lengths` against bench/results/h200/lengths-run1 (issue 16).

For every row (grid and caps) it runs lorasim on the row's lengths and settings and compares
the split's mean step time with the row's timed steps, its peak and worst-case reserved memory
with the measured peak reserved, and per cell (trainer, data, allocator, cap) the recommended
split with the fastest measured one. `--fit` prints the varying-shape shares of
simulator/lengths_sim.cpp fitted on the FIT rows (grid and caps, micro-batch 2 and 8); the
others are held out. Writes bench/results/lengths-accuracy.md.

    python3 bench/hf/lengths_accuracy.py [--lorasim build/cli/lorasim] [--fit]
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import tempfile

RUN = "bench/results/h200/lengths-run1"
CONTEXT_BYTES = 512 << 20  # the h200 profile's CUDA context: --memory-limit = cap + context
FIT_MICRO_BATCHES = (2, 8)


def is_fit(row):
    """Both plans' rows at micro-batch 2 and 8: the 10-step grid and the full-epoch caps rows
    (fragmentation grows over an epoch: a fit on the grid alone left full-epoch peaks above the
    worst case)."""
    return row["micro_batch"] in FIT_MICRO_BATCHES


def load_rows():
    rows = []
    for plan in ("grid", "caps"):
        with open(os.path.join(RUN, plan + "-rows.jsonl")) as f:
            for line in f:
                r = json.loads(line)
                r["plan"] = plan
                rows.append(r)
    return rows


def epoch_lengths_file(rows, tmp):
    """The caps plan trains on the first 512 sequences of longtail's order: their lengths, from
    the row that ran the whole epoch."""
    full = [r for r in rows if r["plan"] == "caps" and r.get("full_epoch") and r["steps_run"] == r["steps_planned"]]
    counts = {}
    for s in full[0]["steps"]:
        for mb in s["lengths"]:
            for l in mb:
                counts[l] = counts.get(l, 0) + 1
    path = os.path.join(tmp, "longtail-512.csv")
    with open(path, "w") as f:
        f.write("length,count\n")
        for l in sorted(counts):
            f.write(f"{l},{counts[l]}\n")
    return path


def command(lorasim, row, lengths_file):
    cmd = [lorasim, "simulate", "--gpu", "h200", "--model", row["model"], "--lengths", lengths_file,
           "--padding", "longest", "--max-length", str(row["max_length"]), "--effective-batch",
           str(row["effective_batch"]), "--lora-dropout", str(row["lora"]["lora_dropout"]),
           "--allocator", row["allocator"], "--format", "json"]
    if row["trainer"] == "SFTTrainer":
        cmd += ["--grad-ckpt", "--fused-lm-head", "true"]
    else:
        cmd += ["--fused-lm-head", "false"]
    if row.get("cap_bytes"):
        cmd += ["--memory-limit", str(row["cap_bytes"] + CONTEXT_BYTES)]
    return cmd


def predict(lorasim, row, lengths_file, cache):
    cmd = command(lorasim, row, lengths_file)
    key = tuple(cmd)
    if key not in cache:
        cache[key] = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    j = cache[key]
    split = next(s for s in j["splits"] if s["micro_batch"] == row["micro_batch"])
    return cmd, j, split


def fit(rows, preds):
    out = {}
    for alloc in ("default", "expandable"):
        fit_rows = [(r, s) for r, s in zip(rows, preds) if r["allocator"] == alloc and
                    (is_fit(r) or alloc == "expandable") and not r.get("oom")]
        need_peak = [(r["peak_reserved_bytes"] - (s["peak_reserved_bytes"] - s["varying_shape_bytes"])) /
                     s["activation_bytes"] for r, s in fit_rows]
        need_worst = [(r["peak_reserved_bytes"] - (s["worst_reserved_bytes"] - s["varying_shape_worst_bytes"])) /
                      s["activation_bytes"] for r, s in fit_rows]
        out[alloc] = (max(0.0, sum(need_peak) / len(need_peak)), max(0.0, max(need_worst)), len(fit_rows))
    return out


def gib(b):
    return f"{b / 2**30:.2f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lorasim", default="build/cli/lorasim")
    ap.add_argument("--out", default="bench/results/lengths-accuracy.md")
    ap.add_argument("--fit", action="store_true", help="print the fitted shares and stop")
    args = ap.parse_args()
    rows = load_rows()
    cache = {}
    with tempfile.TemporaryDirectory() as tmp:
        caps_file = epoch_lengths_file(rows, tmp)
        results = []
        for r in rows:
            lf = caps_file if r["plan"] == "caps" else r["lengths_file"]
            cmd, j, s = predict(args.lorasim, r, lf, cache)
            results.append((r, cmd, j, s))
    if args.fit:
        for alloc, (mean, bound, n) in fit(rows, [s for _, _, _, s in results]).items():
            print(f"{alloc}: expected share {mean:.4f}, bound {bound:.4f} ({n} rows)")
        return

    lines = []
    lines.append("# lorasim simulate --lengths against lengths-run1 (issue 16)\n")
    lines.append(f"Made by `python3 bench/hf/lengths_accuracy.py` on {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC "
                 f"({platform.machine()}, {platform.system()}; lorasim is CPU only), against the H200 rows of "
                 f"`{RUN}` (their README says how they were measured). One command per row, e.g.\n")
    lines.append("    " + " ".join(results[0][1]).replace(args.lorasim, "lorasim") + "\n")
    lines.append("Caps rows use the lengths of their 512-sequence epoch (written from the rows' own `lengths`) and "
                 "`--memory-limit` = the cap + the profile's 512 MiB context; their step times ran two processes at once "
                 "on one GPU (contended), so they score memory only. The varying-shape share of reserved memory "
                 "(`simulator/lengths_sim.cpp`) is fitted on the `fit` rows (grid and caps, micro-batch 2 and 8, default "
                 "allocator; the expandable allocator's one row fits its own, so nothing scores it) and every other row is "
                 "held out. A first fit on the grid rows alone (0.52 expected, 0.87 bound) left the worst case below the "
                 "measured peak in 5 rows, 4 of them full-epoch caps rows: fragmentation grows over an epoch.\n")
    lines.append("| plan | trainer | data | alloc | cap | split | role | step meas | step pred | err | padded meas | padded pred | reserved meas GiB | peak pred | err | worst pred | worst >= meas | fits pred | OOM meas |")
    lines.append("| --- " * 19 + "|")
    time_err_held, time_err_all, peak_err_held, below = [], [], [], []
    for r, cmd, j, s in results:
        role = "fit" if (is_fit(r) or r["allocator"] == "expandable") else "held out"
        meas_t = r.get("mean_step_time_s")
        contended = r.get("concurrent_processes", 1) > 1
        pred_t = s["step_time_s"]
        t_err = (pred_t / meas_t - 1) if meas_t and not contended and not r.get("oom") else None
        if t_err is not None:
            time_err_all.append(t_err)
            if role == "held out":
                time_err_held.append(t_err)
        meas_m = r["peak_reserved_bytes"]
        m_err = s["peak_reserved_bytes"] / meas_m - 1
        worst_ok = s["worst_reserved_bytes"] >= meas_m
        if role == "held out" and not r.get("oom"):
            peak_err_held.append(m_err)
        if not worst_ok:
            below.append(r)
        lines.append(f"| {r['plan']} | {r['trainer']} | {r['distribution']} | {r['allocator']} | {r.get('cap_gib') or '-'} | "
                     f"{r['micro_batch']}x{r['accumulation']} | {role} | {meas_t:.3f} | {pred_t:.3f} | "
                     f"{'%+.1f%%' % (100 * t_err) if t_err is not None else ('contended' if contended else 'OOM')} | "
                     f"{r['mean_padded_len_timed']:.0f} | {s['mean_padded_length_tokens']:.0f} | {gib(meas_m)} | "
                     f"{gib(s['peak_reserved_bytes'])} | {100 * m_err:+.1f}% | {gib(s['worst_reserved_bytes'])} | "
                     f"{'yes' if worst_ok else '**no**'} | {'yes' if s['fits'] else 'no'} | {'yes' if r.get('oom') else 'no'} |")
    lines.append("")
    # Per cell: the recommended split against the fastest measured.
    lines.append("## Recommended split against the fastest measured (per cell)\n")
    lines.append("| plan | trainer | data | alloc | cap | recommended | its measured step | fastest measured | its step | gap |")
    lines.append("| --- " * 10 + "|")
    cells = {}
    for r, cmd, j, s in results:
        cells.setdefault((r["plan"], r["trainer"], r["distribution"], r["allocator"], r.get("cap_gib")), []).append((r, j))
    rec_gaps = []
    for key, members in cells.items():
        j = members[0][1]
        rec = j["recommended"]
        ok = [r for r, _ in members if not r.get("oom")]
        fastest = min(ok, key=lambda r: r["mean_step_time_s"])
        rec_row = next((r for r, _ in members if rec and r["micro_batch"] == rec["micro_batch"]), None)
        rec_txt = f"{rec['micro_batch']}x{rec['accumulation']}" if rec else "none"
        if rec_row is None:
            meas, gap = "not measured", "-"
        elif rec_row.get("oom"):
            meas, gap = "OOM", "-"
        else:
            meas = f"{rec_row['mean_step_time_s']:.3f}"
            g = rec_row["mean_step_time_s"] / fastest["mean_step_time_s"] - 1
            gap = f"{100 * g:+.1f}%"
            if key[0] == "grid" and len(ok) > 1:
                rec_gaps.append(g)
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} | {key[4] or '-'} | {rec_txt} | {meas} | "
                     f"{fastest['micro_batch']}x{fastest['accumulation']} | {fastest['mean_step_time_s']:.3f} | {gap} |")
    lines.append("")
    mean_abs = lambda xs: sum(abs(x) for x in xs) / len(xs) if xs else float("nan")
    lines.append("## Headline\n")
    lines.append(f"- Mean step time, uncontended rows: mean |error| {100 * mean_abs(time_err_all):.1f}% over "
                 f"{len(time_err_all)} rows ({100 * mean_abs(time_err_held):.1f}% over the {len(time_err_held)} held out); "
                 f"within 5%: {sum(abs(e) <= 0.05 for e in time_err_all)} of {len(time_err_all)}; "
                 f"range {100 * min(time_err_all):+.1f}% to {100 * max(time_err_all):+.1f}%.")
    lines.append(f"- Peak reserved, held-out rows: mean |error| {100 * mean_abs(peak_err_held):.1f}% over {len(peak_err_held)} rows, "
                 f"range {100 * min(peak_err_held):+.1f}% to {100 * max(peak_err_held):+.1f}%.")
    lines.append(f"- Worst case below a measured peak: {len(below)} of {len(results)} rows"
                 + (": " + ", ".join(f"{r['plan']} {r['trainer']} {r['distribution']} {r['micro_batch']}x{r['accumulation']}" for r in below) if below else "") + ".")
    lines.append(f"- Recommended split against the fastest measured (grid cells with more than one measured split): "
                 + ", ".join(f"{100 * g:+.1f}%" for g in rec_gaps) + ".")
    lines.append("")
    lines.append("## Findings (against issue 16's targets: 5% time, worst case never below, recommended within 3%)\n")
    lines.append("- **Time misses the 5% target.** SFTTrainer (TRL defaults) is predicted 11-30% fast on every split: "
                 "lengths-run1's README fits 0.57 s of wall time per micro-batch where the hf-peft terms give about 0.45 s, "
                 "and padded micro-batches cost more than their tokens (attention masks, ignored loss positions), which no "
                 "term models yet. The plain Trainer is -30% to +17%. The padding itself is close: the predicted mean padded "
                 "length is 2-22% below the measured one (the OOM row aside; the measured means are over 8-30 steps, the prediction is exact for "
                 "random draws).")
    lines.append("- **Epoch time is not scored**: no row timed a full epoch alone (the caps rows ran two processes at once). "
                 "It is steps per epoch x the mean step, so it carries the mean step's error.")
    lines.append("- **Worst case**: at or above the measured peak reserved in every row, fit and held out, with the "
                 "varying-shape share fitted on micro-batch 2 and 8; the price is over-prediction where fragmentation is "
                 "mild: Trainer on longtail +38% expected peak, and its 16x1 (98.7 GiB measured on the H200) is called "
                 "`fits: no` (169.6 GiB worst case).")
    lines.append("- **Recommendation**: the fastest measured in 2 of 4 grid cells; Trainer longtail 8x2 is 2.1% slower "
                 "than 16x1 (refused as above); Trainer chat 4x4 is 23% slower than 8x2, whose measured peak "
                 "(136.8 GiB) is above the usable memory lorasim allows (132.9 GiB after the 5% margin), so the refusal "
                 "is the margin's, not an error of the model. The expandable cell's recommended 16x1 was not measured.")
    lines.append("- One GPU, one model, two distributions: the shares are not validated elsewhere.")
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
