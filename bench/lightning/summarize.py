#!/usr/bin/env python3
"""Issue 30's Lightning report from lightning_gpu.py's output folders: per cell, `lorasim validate
--measurements rows-<cell>.jsonl --format json` (the LorasimRecorder's rows as they are: whichever
stack they name), and a markdown table of each split's predicted and measured step time and peak,
the worst case against the measured peak, the tuner's pick, trial steps, gap and bit-identity, and
the "Done when" checks: every step within 10%, no measured peak above the worst case, every gap at
most 3%, at most 10 trial steps, training bit-identical.

A capped cell is validated with --memory-limit = its cap + the profile's CUDA context, so `fits`
is predicted for the memory the run had. Several folders (e.g. an sdpa run and an --attn eager
tune run) are read in order; a cell's truth is the last folder's that measured it (a later run that
measured a cell again, e.g. over a whole epoch, replaces the earlier truth), and every tune's gap is
its pick against that truth.

    python3 bench/lightning/summarize.py --lorasim build/cli/lorasim [--gpu h100-sxm | --profile P] \
        [--out bench/results/h100/lightning-run1/report.md] OUT [OUT2 ...]
"""
import argparse, json, os, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "hf"))
from pressure_accuracy import CONTEXT_BYTES, GIB  # noqa: E402  (the profiles' CUDA context: limit = cap + context)
from tune_gpu import gap_fields  # noqa: E402

STEP_TOL, GAP_TOL, MAX_TRIALS = 0.10, 0.03, 10


def validate(a, rows, cap_gib):
    cmd = [a.lorasim, "validate", "--measurements", rows, "--format", "json"]
    cmd += ["--profile", a.profile] if a.profile else ["--gpu", a.gpu]
    cmd += ["--allow-device-mismatch"] if a.allow_device_mismatch else []
    if cap_gib:
        cmd += ["--memory-limit", f"{int(cap_gib * GIB + CONTEXT_BYTES)}B"]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"summarize: {' '.join(cmd)} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def gib(x):
    return "" if x is None else f"{x / GIB:.2f}"


def pct(x):
    return "" if x is None else f"{100 * x:+.1f}%"


def truth_table(a, folder, bench, checks, latest):
    lines = []
    caps = {r["cell"]: r.get("cap_gib") for r in bench}
    for cell in dict.fromkeys(r["cell"] for r in bench if r["phase"] == "truth"):
        rows = os.path.join(folder, f"rows-{cell}.jsonl")
        if not os.path.exists(rows) or latest.get(cell) != folder:
            continue
        j = validate(a, rows, caps.get(cell))
        mine = {r["split"]: r for r in bench if r["phase"] == "truth" and r["cell"] == cell and "skipped" not in r}
        stacks = sorted({g["stack"]["kind"] for g in j["groups"]})
        lines.append(f"| **{cell}** ({os.path.basename(folder)}; stack {', '.join(stacks)}"
                     f"{f'; {caps[cell]:g} GiB cap' if caps.get(cell) else ''}) | | | | | | | | | |")
        for g in j["groups"]:
            for s in sorted(g["splits"], key=lambda s: -s["micro_batch"]):
                name = f"{s['micro_batch']}x{s['accumulation']}"
                own = mine.get(name, {})
                if s["measured_oom"]:
                    lines.append(f"| {name} | out of memory | | | | | | | predicted fits: "
                                 f"{'yes' if s['predicted_fits'] else 'no'} | |")
                    checks["oom_called_fitting"] += bool(s["predicted_fits"])
                    continue
                err, meas, worst = s["step_time_error"], s["measured_peak_reserved_bytes"], s["predicted_worst_reserved_bytes"]
                ok_step = err is not None and abs(err) <= STEP_TOL
                below = meas is not None and meas > worst
                checks["splits"] += 1
                checks["step_within"] += ok_step
                checks["peaks"] += meas is not None
                checks["worst_below"] += below
                lines.append(
                    f"| {name} | {s['measured_step_time_s']:.3f} ({own.get('step_time_s') or 0:.3f}) | "
                    f"{s['predicted_step_time_s']:.3f} | {pct(err)} {'' if ok_step else '**>10%**'} | "
                    f"{gib(meas)} | {gib(s['predicted_peak_reserved_bytes'])} | {pct(s['reserved_error'])} | "
                    f"{gib(worst)} | {'**no**' if below else 'yes' if meas is not None else ''} | "
                    f"{'yes' if s['within_range'] else 'no'} |")
    return lines


def truth_steps(bench):
    """{cell: {(b, a): the truth's step seconds, None where it ran out of memory}} of one folder."""
    out = {}
    for r in bench:
        if r["phase"] == "truth" and "skipped" not in r:
            b, acc = map(int, r["split"].split("x"))
            out.setdefault(r["cell"], {})[(b, acc)] = None if r["oom"] else r["step_time_s"]
    return out


def tuner_lines(folder, bench, checks, truth, latest):
    lines = []
    run = os.path.basename(folder)
    for r in bench:
        if r["phase"] == "tune" and "skipped" not in r:
            within = r["trial_steps"] <= MAX_TRIALS
            checks["trials_ok"] += within
            checks["tunes"] += 1
            prior = r["prior"].get("gpu") or os.path.basename(r["prior"].get("profile", ""))
            lines.append(f"| {run} | {r['cell']} | tune | pick {r['pick']} from {prior}, {r['trial_steps']} trial steps"
                         f"{'' if within else ' **over 10**'}, {r['tune_s']:.1f} s from fit() to the set split |")
            g = gap_fields(truth.get(r["cell"], {}), tuple(map(int, r["pick"].split("x"))))
            if g:
                gap = g["gap"]
                checks["gaps"].append(gap)
                lines.append(f"| {run} | {r['cell']} | gap | pick {g['pick']} vs fastest truth {g['fastest_truth']} "
                             f"({os.path.basename(latest[r['cell']])}): "
                             f"{'pick ran out of memory' if gap is None else pct(gap)}"
                             f"{' **over 3%**' if gap is not None and gap > GAP_TOL else ''} |")
        elif r["phase"] == "identical":
            checks["identical"].append(r["bit_identical"])
            lines.append(f"| {run} | {r['cell']} | identical | {r['steps']} steps after the tune vs untuned {r['pick']}, "
                         f"attention {r['attn_impl']} ({r.get('sdpa_backend', 'default')} SDPA kernels), deterministic "
                         f"algorithms: {'bit-identical' if r['bit_identical'] else 'differ'} "
                         f"(max abs diff {r['max_abs_diff']:.3g}, {r['tensors']} tensors) |")
        elif "skipped" in r:
            lines.append(f"| {run} | {r['cell']} | {r['phase']} | {r.get('split', '')} skipped ({r['skipped']}) |")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="+", help="lightning_gpu.py --out-dir folders")
    ap.add_argument("--lorasim", required=True)
    ap.add_argument("--gpu", default="h100-sxm")
    ap.add_argument("--profile")
    ap.add_argument("--allow-device-mismatch", action="store_true", help="rows of another device (--smoke's CPU)")
    ap.add_argument("--out", help="write the markdown here too")
    a = ap.parse_args()
    checks = dict(splits=0, step_within=0, peaks=0, worst_below=0, oom_called_fitting=0, tunes=0, trials_ok=0,
                  identical=[], gaps=[])
    truth = ["| split | measured s (script's mean of steps 3-6) | predicted s | error | measured peak GiB | "
             "predicted GiB | error | worst GiB | worst >= measured | in range |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    tuner = ["| run | cell | phase | result |", "| --- | --- | --- | --- |"]
    benches, steps, latest = {}, {}, {}
    for folder in a.folders:
        with open(os.path.join(folder, "lightning-bench.jsonl")) as f:
            benches[folder] = [json.loads(line) for line in f if line.strip()]
        for cell, splits in truth_steps(benches[folder]).items():
            steps[cell], latest[cell] = splits, folder
    for folder in a.folders:
        truth += truth_table(a, folder, benches[folder], checks, latest)
        tuner += tuner_lines(folder, benches[folder], checks, steps, latest)
    c = checks
    gaps = [g for g in c["gaps"] if g is not None]
    prior = a.profile or a.gpu
    out = [f"# Lightning (issue 30): `lorasim validate` against `{prior}`", "",
           "Made by `python3 bench/lightning/summarize.py` from " + ", ".join(f"`{f}`" for f in a.folders) + ". "
           "Measured step: the LorasimRecorder row's (median of steps 3-6 at one width, mean at many); the "
           "script's own mean in brackets. Peak: peak reserved. Worst: the worst case that decides `fits`.", "",
           *truth, "", *tuner, "", "## Done when", "",
           f"- step time within 10%: {c['step_within']} of {c['splits']} splits",
           f"- measured peak above the worst case: {c['worst_below']} of {c['peaks']} measured peaks; out-of-memory "
           f"splits predicted to fit: {c['oom_called_fitting']}",
           f"- tuner within 3% of the fastest measured split that fits: {sum(g <= GAP_TOL for g in gaps)} of "
           f"{len(c['gaps'])} gaps ({', '.join(pct(g) if g is not None else 'pick oom' for g in c['gaps'])})",
           f"- at most 10 trial steps: {c['trials_ok']} of {c['tunes']} tunes",
           f"- bit-identical: {sum(c['identical'])} of {len(c['identical'])} comparisons"]
    text = "\n".join(out) + "\n"
    print(text, end="")
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
