#!/usr/bin/env python3
"""Scores lorasim on issue 18's H200 rows -- a 4-bit base (qlora-run1) and Gemma 2, Gemma 3 and
Phi-3 shaped models (archs-run1, archs-run2, and hostarch-run1 beside qwen3-1.7b); their READMEs say
how they were measured -- and writes bench/results/models-accuracy.md.

Fixed-length rows: `lorasim simulate` at the row's length and micro-batch, its step time, peak and
worst case against the measured mean timed step and peak reserved. Rows of many lengths (SFTTrainer
on the longtail distribution): the step time at the measured widths with the profile's cost per new
shape (what validate does with a row's histogram, bench/hf/lengths_accuracy.py), memory from
`simulate --lengths` (the worst micro-batch).

FIT rows: llama-3.2-3b's QLoRA rows, the rows a quantized base's time terms are fitted on
(bench/hf/qlora_fit_rows.py writes them for `lorasim fit`; the fit keeps both terms' priors, see
hwprofiles/h200.toml); every other row is held out and the headline figures are theirs.

`--fit` prints what the FIT rows give for `reserved_quant_fused_share` (hwprofiles/h200.toml holds it
rounded): the least-squares share of saved activations that their SFTTrainer rows' measured peak
reserved holds beyond the prediction without it, and stops.

    python3 bench/hf/models_accuracy.py [--lorasim build/cli/lorasim] [--fit]
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
import lengths_accuracy as LA  # noqa: E402  (the same helpers, one place)

RESULTS = "bench/results/h200"
FILES = [("qlora-run1", "qlora-rows.jsonl"), ("archs-run1", "archs-rows.jsonl"), ("archs-run2", "archs2-rows.jsonl"),
         ("hostarch-run1", "hostarch-rows.jsonl")]  # hostarch's qwen3-1.7b rows: its own section only
_base_flags = LA.stack_flags


def is_fit(r):
    return bool(r.get("quant")) and r["model"] == "llama-3.2-3b"


def stack_flags(r):
    """lengths_accuracy's stack flags and what these rows add: the 4-bit base as each trainer
    prepares it, the attention implementation, every projection adapted."""
    flags = _base_flags(r) + ["--lora-targets", "all"]
    if r.get("quant"):
        # Trainer: PEFT's prepare_model_for_kbit_training (fp32 casts) and checkpointing; SFTTrainer
        # (TRL 1.16) leaves the base as loaded and casts the adapters to bf16.
        trainer = r["trainer"] == "Trainer"
        flags += ["--quant", r["quant"], "--double-quant", "true", "--kbit-prepare", "true" if trainer else "false",
                  "--adapter-dtype", "fp32" if trainer else "compute",
                  "--optim", r.get("optim") or "adamw_torch_fused"]
        if trainer:
            flags += ["--grad-ckpt"]
    if r.get("attn_impl") and r["attn_impl"] != "sdpa":
        flags += ["--attn-impl", r["attn_impl"]]
    return flags


LA.stack_flags = stack_flags  # at_measured_widths and simulate_lengths price these rows with it


def load_rows():
    rows = []
    for run, name in FILES:
        with open(os.path.join(RESULTS, run, name)) as f:
            for i, line in enumerate(f):
                r = json.loads(line)
                r.update(run=run, plan=name.split("-")[0], order=i)
                if not (run == "hostarch-run1" and r["model"] == "qwen3-1.7b"):
                    rows.append(r)
    return rows


def fixed(r):
    return r["distribution"].startswith("fixed")


def simulate_fixed(lorasim, r):
    cmd = [lorasim, "simulate", "--gpu", "h200", "--seq-len", str(r["max_length"]), "--effective-batch",
           str(r["effective_batch"]), "--format", "json", "--allow-over-memory"] + stack_flags(r)
    j = LA.run_json(tuple(cmd))
    return cmd, j, next(s for s in j["splits"] if s["micro_batch"] == r["micro_batch"])


def score(lorasim, rows, c_new):
    out = []
    for r in rows:
        try:
            out.append(score_row(lorasim, r, c_new))
        except subprocess.CalledProcessError as e:  # lorasim refused the row: say so in the report
            why = (e.stderr or "").strip().splitlines()[-1:] or [f"exit status {e.returncode}"]
            out.append(dict(r=r, refused=why[0], role="fit" if is_fit(r) else "held out", time=None))
    return out


def score_row(lorasim, r, c_new):
    if True:
        if fixed(r):
            cmd, j, s = simulate_fixed(lorasim, r)
            x = dict(r=r, cmd=cmd, s=s, time=s["step_time_s"] if not r.get("oom") else None)
        else:
            cmd, j, s = LA.simulate_lengths(lorasim, r, r["lengths_file"], max(1, r.get("steps_run") or 1))
            x = dict(r=r, cmd=cmd, s=s, time=LA.at_measured_widths(lorasim, r, c_new)[0] if not r.get("oom") else None)
        x["role"] = "fit" if is_fit(r) else "held out"
        if x["time"] is not None:
            x["err_time"] = x["time"] / r["mean_step_time_s"] - 1
            x["err_peak"] = s["peak_reserved_bytes"] / r["peak_reserved_bytes"] - 1
            x["worst_ok"] = s["worst_reserved_bytes"] >= r["peak_reserved_bytes"]
        return x


def profile_with(share, tmp):
    """The embedded h200 profile's file with reserved_quant_fused_share set to `share`."""
    path = os.path.join(tmp, f"h200-share-{share}.toml")
    with open("hwprofiles/h200.toml") as f:
        lines = [l for l in f if not l.startswith("reserved_quant_fused_share")]
    i = next(k for k, l in enumerate(lines) if l.strip() == "[stack.hf-peft]")
    lines.insert(i + 1, f"reserved_quant_fused_share = {share}\n")
    with open(path, "w") as f:
        f.writelines(lines)
    return path


def fit_share(lorasim, rows):
    """reserved_quant_fused_share from the FIT rows: each row's prediction at share 0 and 1 gives its
    regressor (the saved activations the share multiplies); least squares through 0."""
    fit = [r for r in rows if is_fit(r) and r["trainer"] == "SFTTrainer" and fixed(r) and not r.get("oom")]
    with tempfile.TemporaryDirectory() as tmp:
        at = {}
        for share in (0, 1):
            prof = profile_with(share, tmp)
            for r in fit:
                cmd, _, _ = simulate_fixed(lorasim, r)
                cmd = [c if c != "h200" else prof for c in cmd]
                cmd[cmd.index(prof) - 1] = "--profile"
                j = LA.run_json(tuple(cmd))
                at[share, id(r)] = next(s for s in j["splits"] if s["micro_batch"] == r["micro_batch"])["peak_reserved_bytes"]
    num = sum((r["peak_reserved_bytes"] - at[0, id(r)]) * (at[1, id(r)] - at[0, id(r)]) for r in fit)
    den = sum((at[1, id(r)] - at[0, id(r)]) ** 2 for r in fit)
    print(f"reserved_quant_fused_share = {max(0.0, num / den):.4f} from {len(fit)} FIT rows")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lorasim", default="build/cli/lorasim")
    ap.add_argument("--out", default="bench/results/models-accuracy.md")
    ap.add_argument("--fit", action="store_true", help="print reserved_quant_fused_share from the FIT rows and stop")
    args = ap.parse_args()
    rows = load_rows()
    if args.fit:
        return fit_share(args.lorasim, rows)
    LA.mark_shapes(rows)
    c_new = LA.new_shape_cost(args.lorasim)
    results = score(args.lorasim, rows, c_new)

    first = next(x for x in results if "cmd" in x)
    L = ["# lorasim on a 4-bit base and on Gemma 2, Gemma 3 and Phi-3 (issue 18)\n",
         f"Made by `python3 bench/hf/models_accuracy.py` on {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} "
         f"UTC ({platform.machine()}, {platform.system()}; lorasim runs on the CPU), against the H200 rows of "
         f"`{RESULTS}/qlora-run1`, `{RESULTS}/archs-run1`, `{RESULTS}/archs-run2` and `{RESULTS}/hostarch-run1` (its "
         "Gemma and Phi-3 rows; its qwen3-1.7b rows in the last section). Profile: the embedded h200. One command per row, e.g.\n",
         "    " + " ".join(first["cmd"]).replace(args.lorasim, "lorasim") + "\n",
         "FIT rows (`role` fit): llama-3.2-3b's QLoRA rows, the rows a quantized base's time terms are fitted on "
         "(`python3 bench/hf/qlora_fit_rows.py`, then `lorasim fit --measurements "
         f"{RESULTS}/qlora-run1/qlora-fit-rows.csv --gpu h200`: calibrate/fit_quant.cpp). They keep both: no extra "
         "host cost per quantized call (the host line is above the host-bound rows already), and the dequantization "
         "is 1.3% of the device-bound rows' time, under the device's spread, so its prior stands (hwprofiles/h200.toml "
         "says so). Their four SFTTrainer rows also give `reserved_quant_fused_share` (`--fit`: the slack of a quantized "
         "base under TRL's fused LM head per byte of saved activations, 0.457, shipped as 0.46). Every other row is held out. `bound`: what the prediction says sets the pace (host or device).\n",
         "| run | model | quant | trainer | data | attn | split | role | bound | step meas | step pred | err | "
         "reserved meas GiB | peak pred | err | worst pred | worst >= meas |",
         "| --- " * 17 + "|"]
    for x in results:
        r, s = x["r"], x.get("s")
        if s is None:
            L.append(f"| {r['run']} | {r['model']} | {r.get('quant') or '-'} | {r['trainer']} | {r['distribution']} | "
                     f"{r.get('attn_impl', 'sdpa')} | {r['micro_batch']}x{r['accumulation']} | {x['role']} | "
                     f"refused: {x['refused'].replace('|', '/')} |" + " - |" * 9)
            continue
        head = (f"| {r['run']} | {r['model']} | {r.get('quant') or '-'} | {r['trainer']} | {r['distribution']} | "
                f"{r.get('attn_impl', 'sdpa')} | {r['micro_batch']}x{r['accumulation']} | {x['role']} | "
                f"{'host' if s.get('host_bound') else 'device'} | ")
        if x["time"] is None:
            L.append(head + f"OOM | - | - | OOM | {LA.gib(s['peak_reserved_bytes'])} | - | "
                     f"{LA.gib(s['worst_reserved_bytes'])} | {'fits: ' + ('yes' if s['fits'] else 'no')} |")
            continue
        L.append(head + f"{r['mean_step_time_s']:.3f} | {x['time']:.3f} | {LA.pct(x['err_time'])} | "
                 f"{LA.gib(r['peak_reserved_bytes'])} | {LA.gib(s['peak_reserved_bytes'])} | {LA.pct(x['err_peak'])} | "
                 f"{LA.gib(s['worst_reserved_bytes'])} | {'yes' if x['worst_ok'] else '**no**'} |")
    L.append("")
    L.append("## Headline (held out)\n")
    for label, sel in (("QLoRA", lambda r: bool(r.get("quant"))), ("Gemma 2, Gemma 3, Phi-3", lambda r: not r.get("quant"))):
        held = [x for x in results if x["role"] == "held out" and sel(x["r"]) and x["time"] is not None]
        refused = [x for x in results if sel(x["r"]) and "refused" in x]
        dev = [x for x in held if not x["s"].get("host_bound")]
        allx = [x for x in results if sel(x["r"]) and x["time"] is not None]
        below = [x for x in allx if not x["worst_ok"]]
        if refused:
            L.append(f"- **{label}**: {len(refused)} rows refused by lorasim ({refused[0]['refused']}).")
        if not held:
            continue
        L.append(f"- **{label}**: peak reserved mean |error| {100 * LA.mean_abs([x['err_peak'] for x in held]):.1f}% over "
                 f"{len(held)} rows (range {LA.pct(min(x['err_peak'] for x in held))} to "
                 f"{LA.pct(max(x['err_peak'] for x in held))}); worst case below a measured peak in {len(below)} of "
                 f"{len(allx)} rows (fit and held out); step time mean |error| "
                 f"{100 * LA.mean_abs([x['err_time'] for x in held]):.1f}% over all {len(held)}"
                 + (f", {100 * LA.mean_abs([x['err_time'] for x in dev]):.1f}% over the {len(dev)} device-bound ones"
                    if dev else "") + ".")
        if label.startswith("Gemma"):  # fixed lengths (the other architectures' figures) and many lengths apart
            for part, keep in (("fixed lengths", fixed), ("many lengths (SFTTrainer, `longtail`)", lambda r: not fixed(r))):
                xs = [x for x in held if keep(x["r"])]
                if xs:
                    L.append(f"  - {part}: peak reserved {100 * LA.mean_abs([x['err_peak'] for x in xs]):.1f}% over "
                             f"{len(xs)} rows ({LA.pct(min(x['err_peak'] for x in xs))} to "
                             f"{LA.pct(max(x['err_peak'] for x in xs))}).")
    L += same_process_section(args.lorasim)
    with open(args.out, "w") as f:
        f.write("\n".join(L) + "\n")
    print("\n".join(l for l in L if l.lstrip().startswith("- ")))


def same_process_section(lorasim):
    """hostarch-run1: the architectures at one host-bound split next to qwen3-1.7b in one process, two
    rounds minutes apart; each row's time error, and that error less qwen3's of the same round and
    trainer (the host's drift between rounds and leases apart)."""
    path = os.path.join(RESULTS, "hostarch-run1", "hostarch-rows.jsonl")
    rows = [dict(json.loads(line), run="hostarch-run1", order=i) for i, line in enumerate(open(path))]
    L = ["\n## Host-bound steps next to qwen3-1.7b in one process (hostarch-run1, held out)\n",
         "2x8 at 1024 tokens, both trainers, in one worker process: qwen3-1.7b, Phi-3, Gemma 3, Gemma 2 (eager), "
         "then the same again (round 2). `vs qwen3`: the row's time error less qwen3-1.7b's in the same round "
         "and trainer, whose host terms the profile's calibration fitted.\n",
         "| round | trainer | model | step meas | step pred | err | vs qwen3 | reserved meas GiB | peak pred | err |",
         "| --- " * 10 + "|"]
    ref, rel = {}, {}
    for r in rows:
        _, _, s = simulate_fixed(lorasim, r)
        rnd = 1 + r["order"] // 8
        err = s["step_time_s"] / r["mean_step_time_s"] - 1
        if r["model"] == "qwen3-1.7b":
            ref[rnd, r["trainer"]] = err
        d = err - ref[rnd, r["trainer"]]
        if r["model"] != "qwen3-1.7b":
            rel.setdefault(r["model"], []).append(d)
        L.append(f"| {rnd} | {r['trainer']} | {r['model']} | {r['mean_step_time_s']:.3f} | {s['step_time_s']:.3f} | "
                 f"{LA.pct(err)} | {LA.pct(d) if r['model'] != 'qwen3-1.7b' else '-'} | "
                 f"{LA.gib(r['peak_reserved_bytes'])} | {LA.gib(s['peak_reserved_bytes'])} | "
                 f"{LA.pct(s['peak_reserved_bytes'] / r['peak_reserved_bytes'] - 1)} |")
    L.append("")
    for m, ds in rel.items():
        L.append(f"- {m}: time error less qwen3's, mean {LA.pct(sum(ds) / len(ds))} over {len(ds)} rows "
                 f"({LA.pct(min(ds))} to {LA.pct(max(ds))}).")
    return L


if __name__ == "__main__":
    main()
