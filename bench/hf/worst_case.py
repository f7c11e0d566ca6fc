#!/usr/bin/env python3
"""The worst case against measured peaks: how often it is below one (a promise broken) and how much
room it leaves above one (speed a user gives up). Issue 28, "a worst case that is a measurement".

For every committed set of fixed-length rows (Transformers/TRL + PEFT, through the probe, a real
Trainer or SFTTrainer; H200 and H100), `lorasim validate --format json` against the profile the set
is scored with; per row: measured peak reserved, predicted peak, the worst case that decides `fits`,
and the worst case's excess over the measurement (worst / measured - 1). A row whose measured peak
is above its worst case is a split `fits` would have promised and that could run out of memory;
the excess is what a limit between the two would refuse that runs.

Sets whose rows are of many lengths, a 4-bit base or another family have their own reports
(lengths_accuracy.py, models_accuracy.py, pressure_accuracy.py); this one is the fixed-length core.

    python3 bench/hf/worst_case.py [--lorasim build/cli/lorasim] [--out bench/results/worst-case.md]
"""
import argparse, datetime, json, os, platform, statistics, subprocess, sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
H200, H100 = "bench/results/h200", "bench/results/h100"
# (label, rows, profile args, role); role: "fit" if the share was chosen on it, else "held out".
SETS = [
    ("H200 run7 probe grid", f"{H200}/hf-peft-run7/heldout-rows.jsonl", ["--gpu", "h200"], "fit"),
    ("H200 run6 probe grid", f"{H200}/hf-peft-run6/heldout-rows.jsonl", ["--gpu", "h200"], "fit"),
    ("H200 run5 probe grid", f"{H200}/hf-peft-run5/heldout-rows.jsonl", ["--gpu", "h200"], "fit"),
    ("H200 run8 probe grid (default allocator)", f"{H200}/hf-peft-run8/heldout-rows.jsonl", ["--gpu", "h200"], "fit"),
    ("H200 run9 checkpointing x autocast", f"{H200}/hf-peft-run9/ckpt-autocast-rows.jsonl", ["--gpu", "h200"], "held out"),
    ("H200 run2 probe grid", f"{H200}/hf-peft-run2/heldout-rows.jsonl", ["--gpu", "h200"], "held out"),
    ("H100 calibrate-run1 (its own calibration)", f"{H100}/calibrate-run1/heldout-rows.jsonl",
     ["--profile", f"{H100}/calibrate-run1/profile.toml"], "held out"),
    ("H100 calibrate-run1 (the H100 datasheet prior)", f"{H100}/calibrate-run1/heldout-rows.jsonl",
     ["--profile", "bench/hf/profiles/h100-prior.toml", "--allow-device-mismatch"], "held out"),
]


def rows_of(lorasim, path, profile):
    out = subprocess.run([lorasim, "validate", "--measurements", path, *profile, "--format", "json"],
                         cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:
        raise SystemExit(f"error: lorasim validate on {path}: {out.stderr.strip()}")
    for g in json.loads(out.stdout)["groups"]:
        for s in g["splits"]:
            if s["measured_oom"]:
                continue
            m, p, w = s["measured_peak_reserved_bytes"], s["predicted_peak_reserved_bytes"], s["predicted_worst_reserved_bytes"]
            yield {"workload": g["workload"], "split": f"{s['micro_batch']}x{s['accumulation']}", "measured": m,
                   "predicted": p, "worst": w}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lorasim", default=os.path.join(ROOT, "build/cli/lorasim"))
    ap.add_argument("--out", default=os.path.join(ROOT, "bench/results/worst-case.md"))
    a = ap.parse_args()
    gib = 2 ** 30
    lines = ["# The worst case against measured peaks (fixed lengths)", "",
             f"Made by `python3 bench/hf/worst_case.py` on {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC "
             f"({platform.machine()}, lorasim on the CPU) from committed rows. `below`: rows whose measured peak "
             "reserved is above the worst case (a `fits` that could run out of memory). `excess`: worst / measured - 1, "
             "the room the worst case leaves (what a limit in between refuses although the split runs). "
             "Role `fit`: the sets hf-peft's `worst_case_margin` was chosen on; the others are held out.", "",
             "| set | role | rows | below | excess min | median | max | largest miss of the count |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    allrows = {"fit": [], "held out": []}
    for label, path, profile, role in SETS:
        rs = list(rows_of(a.lorasim, path, profile))
        below = [r for r in rs if r["measured"] > r["worst"]]
        ex = sorted(r["worst"] / r["measured"] - 1 for r in rs)
        miss = max((r["measured"] - r["predicted"]) / gib for r in rs)
        allrows[role] += rs
        lines.append(f"| {label} | {role} | {len(rs)} | {len(below)} | {100 * ex[0]:+.1f}% | "
                     f"{100 * statistics.median(ex):+.1f}% | {100 * ex[-1]:+.1f}% | {miss:+.2f} GiB |")
        for r in below:
            lines.append(f"|   below: {r['workload'][:70]} {r['split']} | | | measured {r['measured'] / gib:.2f} GiB, "
                         f"worst {r['worst'] / gib:.2f} | | | | |")
    lines.append("")
    for role, rs in allrows.items():
        if rs:
            ex = [r["worst"] / r["measured"] - 1 for r in rs]
            lines.append(f"- {role}: {len(rs)} rows, {sum(r['measured'] > r['worst'] for r in rs)} below the worst case, "
                         f"median excess {100 * statistics.median(ex):+.1f}%, mean {100 * statistics.fmean(ex):+.1f}%.")
    text = "\n".join(lines) + "\n"
    with open(a.out, "w") as f:
        f.write(text)
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
