#!/usr/bin/env python3
"""Issue 16's epoch target: whole epochs, each run in a fresh process as a user's training script
runs, against lorasim's `epoch_time_s` and `step_time_s` for data of many lengths.

    python3 bench/hf/epochs_accuracy.py --run bench/results/h200/epochs-run1 [--lorasim build/cli/lorasim]

Scores every row of RUN/rows.jsonl (bench/hf/lease_epochs.sh: `lengths_runs.py --plan epochs`) that
ran its whole epoch, against two profiles: the embedded h200 (calibrated on other H200 machines) and
RUN/h200-hf.toml, what `lorasim calibrate --stack hf-peft` wrote on the same machine minutes before.
No row scored here was used in any fit: the embedded profile's terms come from other runs, the
machine's profile from its calibration plan's own short runs. Each prediction simulates the exact
sequences the row trained (their lengths, as a histogram), padded to the longest of each
micro-batch, over the row's number of optimizer steps. Writes RUN/epochs-accuracy.md.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from lengths_accuracy import stack_flags  # noqa: E402  (one definition of a row's stack flags)


def epoch_histogram(r, tmp):
    """The lengths of every sequence the row's epoch trained on, as a length,count CSV."""
    counts = {}
    for s in r["steps"]:
        for mb in s["lengths"]:
            for n in mb:
                counts[n] = counts.get(n, 0) + 1
    path = os.path.join(tmp, f"epoch-{r['order']}.csv")
    with open(path, "w") as f:
        f.write("length,count\n" + "".join(f"{n},{counts[n]}\n" for n in sorted(counts)))
    return path, sum(counts.values())


def predict(lorasim, r, lengths_file, profile):
    cmd = [lorasim, "simulate", "--lengths", lengths_file, "--padding", "longest", "--max-length",
           str(r["max_length"]), "--effective-batch", str(r["effective_batch"]), "--steps", str(r["steps_run"]),
           "--format", "json", "--allow-over-memory"] + stack_flags(r)
    cmd += ["--profile", profile] if profile else ["--gpu", "h200"]
    j = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
    return next(s for s in j["splits"] if s["micro_batch"] == r["micro_batch"])


def pct(x):
    return f"{100 * x:+.1f}%"


def mean_abs(xs):
    return sum(abs(x) for x in xs) / len(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--run", required=True, help="folder with rows.jsonl and h200-hf.toml")
    ap.add_argument("--lorasim", default="build/cli/lorasim")
    args = ap.parse_args()
    rows = []
    with open(os.path.join(args.run, "rows.jsonl")) as f:
        for i, line in enumerate(f):
            r = dict(json.loads(line), order=i)
            if r.get("full_epoch") and not r.get("oom") and r.get("steps") and r.get("steps_run") == r.get("steps_planned"):
                rows.append(r)
    machine = os.path.join(args.run, "h200-hf.toml")
    profiles = [("embedded h200", None)] + ([("this machine's", machine)] if os.path.exists(machine) else [])
    L = [f"# Whole epochs in fresh processes against lorasim ({os.path.basename(args.run)}, issue 16)\n",
         f"Made by `python3 bench/hf/epochs_accuracy.py --run {args.run}` on "
         f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC ({platform.machine()}, {platform.system()}; "
         "lorasim on the CPU). Rows: that folder's `rows.jsonl` (its README says how they were measured); every "
         "row is held out. `epoch meas`: the sum of the epoch's step times (the first step, which pays the "
         "process's set-up, included); `step meas`: the mean of the steps after the first. Predictions: "
         "`lorasim simulate --lengths` on the row's own sequences, `epoch_time_s` (with `first_step_s`) and "
         "`step_time_s`; `epoch range`: `epoch_time_low_s` to `epoch_time_high_s`.\n"]
    summary = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, profile in profiles:
            L.append(f"## Profile: {name}" + (f" (`{profile}`)" if profile else "") + "\n")
            L.append("| model | trainer | data | alloc | split | steps | epoch meas | epoch pred | err | step meas | "
                     "step pred | err | first step meas | first_step_s | epoch range | within |")
            L.append("| --- " * 16 + "|")
            e_err, s_err, inside = [], [], []
            for r in rows:
                lf, n = epoch_histogram(r, tmp)
                s = predict(args.lorasim, r, lf, profile)
                times = [st["time_s"] for st in r["steps"]]
                epoch, step = sum(times), sum(times[1:]) / max(1, len(times) - 1)
                ee, se = s["epoch_time_s"] / epoch - 1, s["step_time_s"] / step - 1
                e_err.append(ee)
                s_err.append(se)
                within = s["epoch_time_low_s"] <= epoch <= s["epoch_time_high_s"]
                inside.append(within)
                L.append(f"| {r['model']} | {r['trainer']} | {r['distribution']} | {r['allocator']} | "
                         f"{r['micro_batch']}x{r['accumulation']} | {len(times)} | {epoch:.1f} s | {s['epoch_time_s']:.1f} s | "
                         f"{pct(ee)} | {step:.3f} s | {s['step_time_s']:.3f} s | {pct(se)} | {times[0]:.2f} s | "
                         f"{s['first_step_s']:.2f} s | {s['epoch_time_low_s']:.1f}-{s['epoch_time_high_s']:.1f} s | "
                         f"{'yes' if within else 'no'} |")
            L.append("")
            line = (f"{name}: epoch time {mean_abs(e_err) * 100:.1f}% mean |error| over {len(e_err)} epochs "
                    f"({min(e_err) * 100:+.1f}% to {max(e_err) * 100:+.1f}%); mean step {mean_abs(s_err) * 100:.1f}% "
                    f"({min(s_err) * 100:+.1f}% to {max(s_err) * 100:+.1f}%); {sum(inside)} of {len(inside)} epochs within "
                    "the predicted range") if e_err else f"{name}: no whole epoch"
            summary.append(line)
            L.append(f"- {line}.\n")
    L.insert(2, "Summary (target: epoch time within 5%):\n\n" + "\n".join(f"- {x}" for x in summary) + "\n")
    out = os.path.join(args.run, "epochs-accuracy.md")
    with open(out, "w") as f:
        f.write("\n".join(L))
    print("\n".join(summary))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
