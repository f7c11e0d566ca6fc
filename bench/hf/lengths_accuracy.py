#!/usr/bin/env python3
"""Scores lorasim on data of many lengths against the H200 rows of lengths-run1, -run2 and -run3
(issue 16; their READMEs say how they were measured) and writes bench/results/lengths-accuracy.md.

Two predictions of each row's mean step time (its timed steps, after the warm-up):
- at the measured widths: every timed micro-batch at the padded width it had, plus the profile's
  `new_shape_s` for each micro-batch whose (micro-batch, width) shape the worker process had not run
  before (rows of one process share kernel caches, so earlier splits count) -- what `lorasim
  validate` does with a row's histogram;
- from the distribution: `lorasim simulate --lengths` over the row's run (`--steps`), its timed
  window taken out of the run's mean; only for rows whose shapes no earlier split of the process
  had run (the simulator assumes a fresh process).
Memory: the prediction's peak and worst case (the worst micro-batch) against the measured peak
reserved. Epoch: rows that ran a whole epoch alone.

FIT rows: lengths-run3's `pad` plan (the padded/fixed controls and the expandable cells) and
lengths-run1's micro-batch 2 and 8 rows; everything else is held out. `--fit` prints what the FIT
rows give for `new_shape_s` and the allocator shares (the profile's `[stack.hf-peft]` rows hold
them rounded) and stops.

    python3 bench/hf/lengths_accuracy.py [--lorasim build/cli/lorasim] [--fit]
"""
import argparse
import datetime
import functools
import json
import os
import platform
import subprocess
import tempfile

RESULTS = "bench/results/h200"
FILES = [("lengths-run1", "grid"), ("lengths-run1", "caps"), ("lengths-run2", "grid2"), ("lengths-run3", "pad"),
         ("lengths-run3", "grid3")]
CONTEXT_BYTES = 512 << 20  # the h200 profile's CUDA context: --memory-limit = cap + context
NEW_SHAPE_S = None  # read from the profile through lorasim (see new_shape_cost)


def is_fit(r):
    return r["plan"] == "pad" or (r["run"] == "lengths-run1" and r["micro_batch"] in (2, 8))


def load_rows():
    rows = []
    for run, plan in FILES:
        with open(os.path.join(RESULTS, run, plan + "-rows.jsonl")) as f:
            for i, line in enumerate(f):
                r = json.loads(line)
                r.update(run=run, plan=plan, order=i)
                rows.append(r)
    return rows


def mark_shapes(rows):
    """Per row: new shapes per timed step (process-wide, in file order) and whether the process had
    run any of its shapes before it started."""
    seen = {}
    for r in rows:
        key = (r["run"], r["plan"], r.get("pid"))
        ps = seen.setdefault(key, set())
        before = set(ps)
        news = []
        for i, s in enumerate(r.get("steps") or []):
            n = 0
            for w in s["padded"]:  # a shape in another precision runs other kernels: new to the process
                k = (r["config"], r.get("precision") or "bf16", r["micro_batch"], w)
                if k not in ps:
                    ps.add(k)
                    n += 1
            news.append(n)
        r["new_per_step"] = news
        r["fresh"] = not any(k[0] == r["config"] and k[2] == r["micro_batch"] for k in before)


def stack_flags(r):
    flags = ["--model-config", r["config"], "--lora-dropout", str(r["lora"]["lora_dropout"]), "--allocator", r["allocator"]]
    return flags + (["--grad-ckpt", "--fused-lm-head", "true"] if r["trainer"] == "SFTTrainer" else ["--fused-lm-head", "false"])


@functools.lru_cache(None)
def run_json(cmd):
    return json.loads(subprocess.run(list(cmd), check=True, capture_output=True, text=True).stdout)


def micro_batch_times(lorasim, r, w):
    j = run_json(tuple([lorasim, "simulate", "--gpu", "h200", "--seq-len", str(w), "--effective-batch",
                        str(r["micro_batch"]), "--format", "json", "--allow-over-memory"] + stack_flags(r)))
    s = next(x for x in j["splits"] if x["micro_batch"] == r["micro_batch"])
    return s["micro_batch_time_s"], s["optimizer_time_s"]


def at_measured_widths(lorasim, r, c_new):
    """Mean timed step: each micro-batch at its width, the optimizer, c_new per new shape."""
    timed = list(zip(r["steps"], r["new_per_step"]))[r["warmup_steps"]:]
    total = 0.0
    for s, new in timed:
        t = 0.0
        for w in s["padded"]:
            mbt, opt = micro_batch_times(lorasim, r, w)
            t += mbt
        total += t + opt + c_new * new
    return total / len(timed), sum(n for _, n in timed) / len(timed)


def simulate_lengths(lorasim, r, lengths_file, steps):
    cmd = [lorasim, "simulate", "--gpu", "h200", "--lengths", lengths_file, "--padding", "longest", "--max-length",
           str(r["max_length"]), "--effective-batch", str(r["effective_batch"]), "--steps", str(steps),
           "--format", "json"] + stack_flags(r)
    if r.get("cap_bytes"):
        cmd += ["--memory-limit", str(r["cap_bytes"] + CONTEXT_BYTES)]
    j = run_json(tuple(cmd))
    return cmd, j, next(s for s in j["splits"] if s["micro_batch"] == r["micro_batch"])


def epoch_lengths_file(rows, tmp):
    """The capped epochs train on the first 512 sequences of longtail's order: their lengths."""
    full = [r for r in rows if r.get("full_epoch") and r.get("steps_run") == r.get("steps_planned") and not r.get("oom")]
    counts = {}
    for s in full[0]["steps"]:
        for mb in s["lengths"]:
            for l in mb:
                counts[l] = counts.get(l, 0) + 1
    path = os.path.join(tmp, "longtail-512.csv")
    with open(path, "w") as f:
        f.write("length,count\n" + "".join(f"{l},{counts[l]}\n" for l in sorted(counts)))
    return path


def new_shape_cost(lorasim):
    """The profile's new_shape_s, from a two-length simulation: its new-shape time per new shape."""
    with tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False) as f:
        f.write("length,count\n100,1\n200,1\n")
    j = run_json((lorasim, "simulate", "--gpu", "h200", "--model", "qwen3-1.7b", "--lengths", f.name,
                  "--effective-batch", "1", "--format", "json"))
    os.unlink(f.name)
    s = j["splits"][0]
    return s["new_shape_time_s"] / s["new_shapes_per_step"]


def mark_first_splits(rows):
    """Per row: whether it is the first split its worker process ran (the one that pays the
    process's set-up)."""
    seen = set()
    for r in rows:
        key = (r["run"], r["plan"], r.get("pid"))
        r["first_split"] = key not in seen
        seen.add(key)


def step_at_widths(lorasim, r, i, c_new):
    s = r["steps"][i]
    t = sum(micro_batch_times(lorasim, r, w)[0] for w in s["padded"])
    return t + micro_batch_times(lorasim, r, s["padded"][0])[1] + c_new * r["new_per_step"][i]


def first_step_excess(lorasim, r, c_new):
    """The first step's measured excess over its prediction at its widths (new shapes counted),
    less the row's mean excess over its timed steps (the steady model's own error)."""
    first = r["steps"][0]["time_s"] - step_at_widths(lorasim, r, 0, c_new)
    timed = range(r["warmup_steps"], len(r["steps"]))
    steady = sum(r["steps"][i]["time_s"] - step_at_widths(lorasim, r, i, c_new) for i in timed) / len(timed)
    return first - steady


def first_step_rows(rows):
    return [r for r in rows if r["first_split"] and r.get("steps") and not r.get("oom") and r["concurrent_processes"] == 1
            and len(r["steps"]) > r["warmup_steps"]]


def fit(lorasim, rows, preds, c_new):
    fit_rows = [r for r in rows if is_fit(r) and r.get("steps") and not r.get("oom") and r["concurrent_processes"] == 1]
    num = den = 0.0
    for r in fit_rows:
        base, new = at_measured_widths(lorasim, r, 0.0)
        num += (r["mean_step_time_s"] - base) * new
        den += new * new
    print(f"new_shape_s: {num / den:.4f} (least squares through 0 over {len(fit_rows)} rows)")
    print("first_step_s, first_step_fused_head_s, cold_start_s: python3 bench/hf/epochs_accuracy.py --fit")
    for alloc in ("default", "expandable"):
        sel = [(r, s) for r, s in zip(rows, preds) if r["allocator"] == alloc and is_fit(r) and not r.get("oom")]
        need = [(r["peak_reserved_bytes"] - (s["peak_reserved_bytes"] - s["varying_shape_bytes"])) / s["activation_bytes"]
                for r, s in sel]
        need_worst = [(r["peak_reserved_bytes"] - (s["worst_reserved_bytes"] - s["varying_shape_worst_bytes"])) /
                      s["activation_bytes"] for r, s in sel]
        print(f"{alloc}: expected share {max(0.0, sum(need) / len(need)):.4f}, bound {max(0.0, max(need_worst)):.4f} "
              f"({len(sel)} rows)")


def pct(x):
    return "-" if x is None else f"{100 * x:+.1f}%"


def gib(b):
    return f"{b / 2**30:.2f}"


def mean_abs(xs):
    return sum(abs(x) for x in xs) / len(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lorasim", default="build/cli/lorasim")
    ap.add_argument("--out", default="bench/results/lengths-accuracy.md")
    ap.add_argument("--fit", action="store_true", help="print what the FIT rows give and stop")
    args = ap.parse_args()
    rows = load_rows()
    mark_shapes(rows)
    mark_first_splits(rows)
    c_new = new_shape_cost(args.lorasim)
    with tempfile.TemporaryDirectory() as tmp:
        caps_file = epoch_lengths_file(rows, tmp)
        results = []
        for r in rows:
            lf = caps_file if r.get("full_epoch") else r["lengths_file"]
            steps = max(1, r.get("steps_run") or r["steps_planned"])
            cmd, j, s = simulate_lengths(args.lorasim, r, lf, steps)
            res = dict(r=r, cmd=cmd, j=j, s=s, role="fit" if is_fit(r) else "held out")
            clean = r.get("steps") and not r.get("oom") and r["concurrent_processes"] == 1 and r.get("mean_step_time_s")
            if clean:
                res["at_widths"], res["new"] = at_measured_widths(args.lorasim, r, c_new)
                res["err_widths"] = res["at_widths"] / r["mean_step_time_s"] - 1
                w = r["warmup_steps"]
                if r["fresh"] and steps > w:
                    _, _, sw = simulate_lengths(args.lorasim, r, lf, w) if w > 0 else (None, None, {"step_time_s": 0})
                    res["from_dist"] = (steps * s["step_time_s"] - w * sw["step_time_s"]) / (steps - w)
                    res["err_dist"] = res["from_dist"] / r["mean_step_time_s"] - 1
            results.append(res)
        if args.fit:
            fit(args.lorasim, rows, [x["s"] for x in results], c_new)
            return

    L = []
    L.append("# lorasim on data of many lengths, against lengths-run1, -run2 and -run3 (issue 16)\n")
    L.append(f"Made by `python3 bench/hf/lengths_accuracy.py` on {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC "
             f"({platform.machine()}, {platform.system()}; lorasim runs on the CPU), against the H200 rows of "
             f"`{RESULTS}/lengths-run1`, `-run2` and `-run3` (their READMEs say how they were measured). The profile is "
             f"the embedded h200; its `new_shape_s` is {c_new:.3f} s. One command per row for memory and the "
             f"distribution's prediction, e.g.\n")
    L.append("    " + " ".join(results[0]["cmd"]).replace(args.lorasim, "lorasim") + "\n")
    L.append("FIT rows (`role` fit): lengths-run3's `pad` plan and lengths-run1's micro-batch 2 and 8; every other row "
             "is held out. `at widths`: each timed micro-batch at its measured padded width plus the cost of each "
             "shape new to the process (what validate does with a row's histogram); `from dist`: `simulate --lengths` "
             "over the row's own steps, only where no earlier split of the worker process had run the row's shapes. "
             "Rows that ran two processes at once (the caps plan) score memory only. `width timed / expected`: the mean padded "
             "row length of the row's timed micro-batches against the distribution's expected one (few timed steps draw "
             "few micro-batches: where they differ, `from dist` compares the expectation with that draw).\n")
    L.append("| run | plan | model | trainer | data | alloc | cap | split | role | step meas | at widths | err | from dist | err | "
             "new shapes/step | width timed / expected | reserved meas GiB | peak pred | err | worst pred | worst >= meas | fits pred | "
             "OOM meas |")
    L.append("| --- " * 23 + "|")
    held_w, held_d, all_w, below, peak_held = [], [], [], [], []
    for x in results:
        r, s = x["r"], x["s"]
        if "err_widths" in x:
            all_w.append(x["err_widths"])
            if x["role"] == "held out":
                held_w.append(x["err_widths"])
                if "err_dist" in x:
                    held_d.append(x["err_dist"])
        meas_m = r["peak_reserved_bytes"]
        m_err = s["peak_reserved_bytes"] / meas_m - 1
        ok = s["worst_reserved_bytes"] >= meas_m
        if not ok:
            below.append(r)
        if x["role"] == "held out" and not r.get("oom"):
            peak_held.append(m_err)
        status = "OOM" if r.get("oom") else ("contended" if r["concurrent_processes"] > 1 else "")
        L.append(f"| {r['run'][-4:]} | {r['plan']} | {r['model']} | {r['trainer']} | {r['distribution']} | {r['allocator']} | "
                 f"{r.get('cap_gib') or '-'} | {r['micro_batch']}x{r['accumulation']} | {x['role']} | "
                 f"{r['mean_step_time_s']:.3f} | " if r.get("mean_step_time_s") else
                 f"| {r['run'][-4:]} | {r['plan']} | {r['model']} | {r['trainer']} | {r['distribution']} | {r['allocator']} | "
                 f"{r.get('cap_gib') or '-'} | {r['micro_batch']}x{r['accumulation']} | {x['role']} | - | ")
        L[-1] += (f"{x['at_widths']:.3f} | {pct(x['err_widths'])} | " if "at_widths" in x else f"{status} | - | ")
        L[-1] += (f"{x['from_dist']:.3f} | {pct(x['err_dist'])} | " if "from_dist" in x else "- | - | ")
        L[-1] += (f"{x['new']:.2f} | " if "new" in x else "- | ")
        L[-1] += (f"{r['mean_padded_len_timed']:.0f} / {s['mean_padded_length_tokens']:.0f} | "
                  if r.get("mean_padded_len_timed") else "- | ")
        L[-1] += (f"{gib(meas_m)} | {gib(s['peak_reserved_bytes'])} | {100 * m_err:+.1f}% | {gib(s['worst_reserved_bytes'])} | "
                  f"{'yes' if ok else '**no**'} | {'yes' if s['fits'] else 'no'} | {'yes' if r.get('oom') else 'no'} |")
    L.append("")

    later = [r for r in rows if not r["first_split"] and r.get("steps") and not r.get("oom") and r["concurrent_processes"] == 1
             and len(r["steps"]) > r["warmup_steps"]]
    later_first_mean = sum(first_step_excess(args.lorasim, r, c_new) for r in later) / len(later)
    L.append("## Epoch time (rows that ran a whole epoch alone)\n")
    L.append("The prediction includes the profile's `first_step_s` (JSON `first_step_s`): the set-up a fresh process's "
             "first step pays once (0 for a row that is a later split of its process: `epoch_time_s` less it). `first step excess`: the row's first step less its prediction at its widths (new "
             "shapes counted) less the row's mean steady error (see the next section).\n")
    L.append("| run | trainer | cap | split | steps | measured (sum of step times) | first step excess | first_step_s | "
             "predicted epoch | err |")
    L.append("| --- " * 10 + "|")
    epoch_errs = []
    for x in results:
        r, s = x["r"], x["s"]
        if r.get("full_epoch") and not r.get("oom") and r["concurrent_processes"] == 1 and r.get("steps_run") == r.get("steps_planned"):
            meas = sum(st["time_s"] for st in r["steps"])
            # The simulator's epoch is a fresh process's; a later split of its process paid no set-up.
            pred = s["epoch_time_s"] - (0.0 if r["first_split"] else s["first_step_s"])
            e = pred / meas - 1
            epoch_errs.append(e)
            L.append(f"| {r['run'][-4:]} | {r['trainer']} | {r.get('cap_gib')} | {r['micro_batch']}x{r['accumulation']} | "
                     f"{r['steps_run']} | {meas:.1f} s | {first_step_excess(args.lorasim, r, c_new):+.2f} s | "
                     f"{s['first_step_s'] if r['first_split'] else 0:.2f} s | {pred:.1f} s | {pct(e)} |")
    L.append("")

    L.append("## First step of a process (rows that are a worker process's first split, alone)\n")
    L.append("Only a process's first split pays its set-up (later splits of the process measure "
             f"{later_first_mean:+.2f} s on average, FIT and held out alike: what remains there is their new shapes, "
             "which `new_shape_s` counts). `first_step_s` is the row's prediction (JSON `first_step_s`: the profile's "
             "`first_step_s`, plus `first_step_fused_head_s` under TRL's fused head), fitted on the FIT epochs of "
             "bench/results/epochs-accuracy.md (`python3 bench/hf/epochs_accuracy.py --fit`): every row here scores "
             "it, FIT rows of the other terms too.\n")
    L.append("| run | pid | model | trainer | data | cap | split | role | first step meas | pred at widths | excess | first_step_s | err |")
    L.append("| --- " * 13 + "|")
    fs_held = []
    pred_of = {id(x["r"]): x["s"] for x in results}
    for r in first_step_rows(rows):
        e = first_step_excess(args.lorasim, r, c_new)
        role = "fit" if is_fit(r) else "held out"
        fs = pred_of[id(r)]["first_step_s"]
        fs_held.append(fs - e)
        L.append(f"| {r['run'][-4:]} | {r['pid']} | {r['model']} | {r['trainer']} | {r['distribution']} | "
                 f"{r.get('cap_gib') or '-'} | {r['micro_batch']}x{r['accumulation']} | {role} | {r['steps'][0]['time_s']:.2f} | "
                 f"{step_at_widths(args.lorasim, r, 0, c_new):.2f} | {e:+.2f} s | {fs:.2f} s | {fs - e:+.2f} s |")
    L.append("")

    L.append("## Recommended split against the fastest measured (per cell)\n")
    L.append("The last three columns: the split that recommend's note names where the default allocator's fragmentation "
             "bound refuses a faster one that fits with `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` "
             "(`faster_alternatives`, flag `--allocator expandable`), its predicted epoch saving, and its measured step "
             "against the fastest measured.\n")
    L.append("| run | plan | model | trainer | data | alloc | cap | recommended | its measured step | fastest measured | its step | gap "
             "| expandable note | predicted saving | its gap |")
    L.append("| --- " * 15 + "|")
    cells = {}
    for x in results:
        r = x["r"]
        cells.setdefault((r["run"], r["plan"], r["model"], r["trainer"], r["distribution"], r["allocator"], r.get("cap_gib"),
                          r["effective_batch"]),
                         []).append(x)
    gaps, note_gaps = [], []
    for key, members in cells.items():
        ok = [m["r"] for m in members if not m["r"].get("oom") and m["r"].get("mean_step_time_s")]
        if len(members) < 2 or not ok:
            continue
        rec = members[0]["j"]["recommended"]
        fastest = min(ok, key=lambda r: r["mean_step_time_s"])
        rec_row = next((m["r"] for m in members if rec and m["r"]["micro_batch"] == rec["micro_batch"]), None)
        if rec_row is None:
            meas, gap = "not measured", "-"
        elif rec_row.get("oom"):
            meas, gap = "**OOM**", "-"
        else:
            g = rec_row["mean_step_time_s"] / fastest["mean_step_time_s"] - 1
            meas, gap = f"{rec_row['mean_step_time_s']:.3f}", pct(g)
            if rec_row["concurrent_processes"] == 1:
                gaps.append(g)
        alt = next((a for a in (rec or {}).get("faster_alternatives", []) if a["flag"] == "--allocator expandable"), None)
        note, saving, note_gap = "-", "-", "-"
        if alt:
            note, saving = f"{alt['micro_batch']}x{alt['accumulation']}", pct(alt["saving"])
            alt_row = next((m["r"] for m in members if m["r"]["micro_batch"] == alt["micro_batch"]), None)
            if alt_row is None:
                note_gap = "not measured"
            elif alt_row.get("oom") or not alt_row.get("mean_step_time_s"):
                note_gap = "OOM (default allocator)"
            else:
                g = alt_row["mean_step_time_s"] / fastest["mean_step_time_s"] - 1
                note_gap = pct(g)
                if alt_row["concurrent_processes"] == 1:
                    note_gaps.append(g)
        L.append(f"| {key[0][-4:]} | {key[1]} | {key[2]} | {key[3]} | {key[4]} | {key[5]} | {key[6] or '-'} | "
                 f"{rec['micro_batch'] if rec else 'none'}x{rec['accumulation'] if rec else ''} | {meas} | "
                 f"{fastest['micro_batch']}x{fastest['accumulation']} | {fastest['mean_step_time_s']:.3f} | {gap} | "
                 f"{note} | {saving} | {note_gap} |")
    L.append("")
    L.append("## Headline\n")
    L.append(f"- Mean step time at the measured widths, held out: mean |error| {100 * mean_abs(held_w):.1f}% over "
             f"{len(held_w)} rows (all rows {100 * mean_abs(all_w):.1f}% over {len(all_w)}); within 5%: "
             f"{sum(abs(e) <= 0.05 for e in held_w)} of {len(held_w)}; range {pct(min(held_w))} to {pct(max(held_w))}.")
    if held_d:
        L.append(f"- Mean step time from the distribution, held out and fresh: mean |error| {100 * mean_abs(held_d):.1f}% "
                 f"over {len(held_d)} rows; range {pct(min(held_d))} to {pct(max(held_d))}.")
    if epoch_errs:
        L.append(f"- Epoch time: " + ", ".join(pct(e) for e in epoch_errs) + ".")
    if fs_held:
        L.append(f"- First step of a process (each row's `first_step_s` against its excess; none of these rows fitted it): "
                 f"mean |error| {mean_abs(fs_held):.2f} s over {len(fs_held)} rows, range {min(fs_held):+.2f} to {max(fs_held):+.2f} s.")
    L.append(f"- Peak reserved, held out: mean |error| {100 * mean_abs(peak_held):.1f}% over {len(peak_held)} rows, "
             f"range {pct(min(peak_held))} to {pct(max(peak_held))}.")
    L.append(f"- Worst case below a measured peak: {len(below)} of {len(results)} rows"
             + (": " + ", ".join(f"{r['run']} {r['plan']} {r['trainer']} {r['distribution']} {r['micro_batch']}x{r['accumulation']}"
                                 for r in below) if below else "") + ".")
    L.append(f"- Recommended split against the fastest measured (uncontended cells): " + ", ".join(pct(g) for g in gaps) + ".")
    if note_gaps:
        L.append(f"- The split the expandable-segments note names, against the fastest measured: "
                 + ", ".join(pct(g) for g in note_gaps) + ".")
    with open(args.out, "w") as f:
        f.write("\n".join(L) + "\n")
    print("\n".join(L[-10:]))


if __name__ == "__main__":
    main()
