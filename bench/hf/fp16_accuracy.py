#!/usr/bin/env python3
"""fp16 as a T4 runs it (an fp16 base, `fp16=True`: autocast to fp16 and the trainer's GradScaler),
measured on an H200 (bench/results/h200/fp16-run1, `bench/hf/lengths_runs.py --plan fp16`), against
lorasim with `--precision fp16`; writes bench/results/fp16-accuracy.md.

Every row is held out: nothing was fitted on fp16 rows. Per row: the mean timed step against the
prediction at the row's measured widths plus the profile's cost per new shape (what validate does
with a row's histogram, as bench/hf/lengths_accuracy.py scores bf16 rows); peak reserved against
`simulate --lengths` of the data (the capped epoch with `--memory-limit` = cap + the CUDA
context), and whether the worst case covers the measured peak. The bf16 twins (the same splits in
the same process) say what fp16 itself costs on the measured side, against lorasim's fp16/bf16 ratio.

    python3 bench/hf/fp16_accuracy.py [--lorasim build/cli/lorasim]
"""
import argparse
import datetime
import json
import os
import platform
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lengths_accuracy as LA  # noqa: E402  (one definition of the scoring helpers)

ROWS = "bench/results/h200/fp16-run1/fp16-rows.jsonl"
_base_flags = LA.stack_flags


def stack_flags(r):
    return _base_flags(r) + ["--precision", r.get("precision") or "bf16"]


LA.stack_flags = stack_flags  # at_measured_widths and simulate_lengths price each row at its precision


def load_rows(path):
    rows = []
    with open(path) as f:
        for i, line in enumerate(f):
            rows.append(dict(json.loads(line), run="fp16-run1", plan="fp16", order=i))
    LA.mark_shapes(rows)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lorasim", default="build/cli/lorasim")
    ap.add_argument("--rows", default=ROWS, help=argparse.SUPPRESS)  # another file of such rows (a check of the script)
    ap.add_argument("--out", default="bench/results/fp16-accuracy.md", help=argparse.SUPPRESS)
    args = ap.parse_args()
    rows = load_rows(args.rows)
    c_new = LA.new_shape_cost(args.lorasim)
    L = ["# fp16 as on a T4, against lorasim --precision fp16 (fp16-run1)\n",
         f"Made by `python3 bench/hf/fp16_accuracy.py` on {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
         f"UTC ({platform.machine()}, {platform.system()}; lorasim on the CPU), against the H200 rows of "
         f"`{os.path.dirname(ROWS)}` (its README says how they were measured) and the embedded h200 profile, "
         "whose rates were fitted in bf16. Every row is held out. `at widths`: each timed micro-batch at its "
         "measured padded width plus the profile's cost per shape new to the process.\n",
         "| trainer | model, data | precision | cap GiB | split | steps | step meas | at widths | err | reserved meas GiB | "
         "peak pred | err | worst pred | worst >= meas | OOM meas |",
         "| --- " * 15 + "|"]
    fp16_t, fp16_m, worst_ok, twins = [], [], [], {}
    for r in rows:
        if r.get("error"):
            L.append(f"| {r['trainer']} | {r['distribution']} | {r.get('precision')} | - | {r['micro_batch']}x"
                     f"{r['accumulation']} | error: {r['error'][:80]} |" + " - |" * 9)
            continue
        cmd, j, s = LA.simulate_lengths(args.lorasim, r, r["lengths_file"], max(1, r.get("steps_run") or 1))
        oom = bool(r.get("oom"))
        t = None if oom or not r.get("mean_step_time_s") else LA.at_measured_widths(args.lorasim, r, c_new)[0]
        err_t = t / r["mean_step_time_s"] - 1 if t else None
        err_m = s["peak_reserved_bytes"] / r["peak_reserved_bytes"] - 1 if r.get("peak_reserved_bytes") else None
        ok = s["worst_reserved_bytes"] >= r["peak_reserved_bytes"]
        if r.get("precision") == "fp16":
            if err_t is not None:
                fp16_t.append(err_t)
            if not r.get("cap_gib") and err_m is not None:
                fp16_m.append(err_m)
            worst_ok.append(ok)
        if not r.get("cap_gib") and t:
            twins.setdefault((r["model"], r["trainer"], r["distribution"], r["micro_batch"]), {})[r.get("precision")] = (
                r["mean_step_time_s"], t)
        meas = f"{r['mean_step_time_s']:.3f}" if r.get("mean_step_time_s") else "-"
        L.append(f"| {r['trainer']} | {r['model']} {r['distribution']} | {r.get('precision')} | {r.get('cap_gib') or '-'} | "
                 f"{r['micro_batch']}x{r['accumulation']} | {r.get('steps_run')} | {meas} | "
                 + (f"{t:.3f} | {LA.pct(err_t)} | " if t else "- | - | ")
                 + f"{LA.gib(r['peak_reserved_bytes'])} | {LA.gib(s['peak_reserved_bytes'])} | {LA.pct(err_m)} | "
                 f"{LA.gib(s['worst_reserved_bytes'])} | {'yes' if ok else 'NO'} | {'yes' if oom else 'no'} |")
    ratios = [(k, v["fp16"][0] / v["bf16"][0], v["fp16"][1] / v["bf16"][1]) for k, v in twins.items()
              if "fp16" in v and "bf16" in v]
    L += ["\n## Headline (fp16 rows, all held out)\n",
          f"- Mean step at the measured widths: {100 * LA.mean_abs(fp16_t):.1f}% mean |error| over {len(fp16_t)} rows"
          + (f" ({100 * min(fp16_t):+.1f}% to {100 * max(fp16_t):+.1f}%)." if fp16_t else "."),
          f"- Peak reserved (uncapped): {100 * LA.mean_abs(fp16_m):.1f}% mean |error| over {len(fp16_m)} rows"
          + (f" ({100 * min(fp16_m):+.1f}% to {100 * max(fp16_m):+.1f}%)." if fp16_m else "."),
          f"- Worst case below a measured peak: {sum(not x for x in worst_ok)} of {len(worst_ok)} fp16 rows."]
    for k, meas, pred in ratios:
        L.append(f"- fp16 / bf16 step time, {k[0]} {k[1]} {k[2]} micro-batch {k[3]}: measured {meas:.3f}, "
                 f"lorasim {pred:.3f}.")
    out = args.out
    with open(out, "w") as f:
        f.write("\n".join(L) + "\n")
    print("\n".join(x for x in L if x.startswith("- ")))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
