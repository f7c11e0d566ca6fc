#!/usr/bin/env python3
"""Scores what lorasim says a split needs at the memory limit against capped H200 runs (issue 16).

Reads bench/results/h200/pressure-run*/ (bench/hf/pressure_runs.py's rows): per cell, runs under the
default allocator at ascending caps, the worst micro-batch last. A cell needs more than its largest
cap that ran out of memory and at most its smallest cap that ran the epoch. lorasim's `needed_bytes`
(what decides `fits`) is `safe` at or above that smallest cap, `unsafe` at or below the largest
failing one (a split called fitting at that memory ran out of it), `between` otherwise. The
validate plan's rows (a recommended split under a 15 or 23 GiB cap, one epoch) must not run out of
memory. --fit prints the share of the activations varying_need_default must be for every FIT cell
to be safe.

    python3 bench/hf/pressure_accuracy.py [--lorasim build/cli/lorasim] [--fit]  # -> bench/results/pressure-accuracy.md
"""
import argparse, collections, datetime, glob, json, os, platform, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
GIB = 2 ** 30
sys.path.insert(0, HERE)
import pressure_runs  # noqa: E402
CONTEXT_BYTES = 512 << 20  # the h200 profile's CUDA context: --memory-limit = cap + context


def simulate(lorasim, r, limit_bytes=None):
    lengths = os.path.relpath(os.path.join(REPO, r["lengths_file"]), REPO)
    cmd = [lorasim, "simulate", "--gpu", "h200", "--lengths", lengths, "--padding", "longest", "--max-length",
           str(r["max_length"]), "--effective-batch", str(r["effective_batch"]), "--format", "json",
           "--model-config", r["config"], "--lora-dropout", "0.0", "--allocator", r["allocator"]]
    cmd += ["--grad-ckpt", "--fused-lm-head", "true"] if r["trainer"] == "SFTTrainer" else ["--fused-lm-head", "false"]
    cmd += ["--memory-limit", str(limit_bytes), "--safety-margin", "0"] if limit_bytes else ["--allow-over-memory"]
    j = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=REPO).stdout)
    s = next(x for x in j["splits"] if x["micro_batch"] == r["micro_batch"])
    return " ".join(cmd[1:]), s, j


# A cell's role is pressure_runs.py's now (its rows keep the role it was measured under).
ROLES = {c[0]: c[6] for c in pressure_runs.CELLS}


def need_share(c):
    """What lorasim says the cell needs, as a share of its activations above its allocated peak: the
    varying_need_share line's, or the fixed-shape worst case's where that is larger."""
    s = c["s"]
    return (s["needed_bytes"] - s["peak_allocated_bytes"]) / s["activation_bytes"]


def share_verdict(c):
    """The verdict on varying_need_share alone: a stricter test than `needs`, which the fixed-shape worst case
    can lift above it."""
    share = c["s"]["varying_need_share"]
    if c["share_ok"] is not None and share >= c["share_ok"] - 1e-9:
        return "safe"
    return "unsafe" if c["share_fail"] is not None and share <= c["share_fail"] else "between"


def fit_need(fit):
    """The two shares of varying_need_share: the rare end R (every cell without checkpointing needs at most R)
    and the recurring end C (a checkpointed cell reached by its worst width with probability r needs at most
    R + r (C - R)), the pair with the smallest R + C: a corner of the region those bounds leave, so one of the
    pairs where two bounds, or one bound and C = 0, hold with equality."""
    bounds = []  # (a, b, s): a R + b C >= s
    for c in fit:
        r = c["s"]["worst_width_reach"] if c["s"]["grad_ckpt"] else 0.0
        bounds.append((1 - r, r, c["share_ok"]))
    candidates = [(s / a, 0.0) for a, _, s in bounds if a > 0]
    for i, (a1, b1, s1) in enumerate(bounds):
        for a2, b2, s2 in bounds[i + 1:]:
            det = a1 * b2 - a2 * b1
            if abs(det) > 1e-12:
                candidates.append(((s1 * b2 - s2 * b1) / det, (a1 * s2 - a2 * s1) / det))
    ok = [(R, C) for R, C in candidates if C >= 0 and all(a * R + b * C >= s - 1e-9 for a, b, s in bounds)]
    return min(ok, key=lambda rc: rc[0] + rc[1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lorasim", default=os.path.join(REPO, "build", "cli", "lorasim"))
    ap.add_argument("--out", default=os.path.join(REPO, "bench", "results", "pressure-accuracy.md"))
    ap.add_argument("--fit", action="store_true", help="print the share every FIT cell needs; write nothing")
    args = ap.parse_args()
    grid, validate = collections.defaultdict(list), []
    # pressure_runs.py's rows wherever a run put them (a `pressure_cell` column says so)
    for path in sorted(glob.glob(os.path.join(REPO, "bench", "results", "**", "*-rows.jsonl"), recursive=True)):
        for line in open(path):
            r = json.loads(line)
            if "pressure_cell" not in r:
                continue
            r["run"] = os.path.relpath(os.path.dirname(path), os.path.join(REPO, "bench", "results")).removesuffix("/validate")
            (grid[r["pressure_cell"]] if r.get("cap_share") is not None else validate).append(r)
    # A cell's runs on every lease are pooled: the default allocator's behaviour under a cap is
    # PyTorch's, not the card's, so one cell's boundary is the largest cap that ran out of memory
    # and the smallest that ran, over all of them.
    cells = []
    for name, rs in grid.items():
        cmd, s, _ = simulate(args.lorasim, rs[0])
        fail = max((r["cap_bytes"] for r in rs if r.get("oom")), default=None)
        ok = min((r["cap_bytes"] for r in rs if r.get("oom") is False), default=None)
        need = s["needed_bytes"]
        verdict = ("safe" if ok is not None and need >= ok else
                   "unsafe" if fail is not None and need <= fail else "between")
        alloc = max((r["peak_allocated_bytes"] for r in rs if r.get("oom") is False), default=None)
        cells.append(dict(runs=", ".join(sorted({r["run"] for r in rs})), name=name, role=ROLES.get(name, rs[0]["role"]), r=rs[0],
                          s=s, fail=fail, ok=ok, need=need, verdict=verdict, alloc=alloc, cmd=cmd,
                          share_ok=(ok - s["peak_allocated_bytes"]) / s["activation_bytes"] if ok else None,
                          share_fail=(fail - s["peak_allocated_bytes"]) / s["activation_bytes"] if fail else None))
    if args.fit:
        fit = [c for c in cells if c["role"] == "fit" and c["share_ok"] is not None]
        for c in cells:
            print(f"  {c['name']} ({c['role']}, worst width reach {c['s']['worst_width_reach']:.3f}): needs a share "
                  f"above {c['share_fail']} and at most {c['share_ok']}")
        rare, recurring = fit_need(fit)
        print(f"varying_need_default: {rare:.4f}, varying_need_recurring: {recurring:.4f} (the smallest pair whose "
              f"share covers every one of {len(fit)} FIT cells' (smallest cap that ran - predicted allocated) / "
              "predicted activations)")
        return
    out = [f"# What a split needs at the memory limit, against capped runs (issue 16)\n",
           f"Made by `python3 bench/hf/pressure_accuracy.py` on "
           f"{datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')} ({platform.machine()}, "
           f"{platform.system()}; lorasim runs on the CPU, with the h200 profile), against the rows of "
           "`bench/results/*/pressure*` (their READMEs say how and on which card they were measured: "
           "`bench/hf/pressure_runs.py`). Each cell ran one epoch under the default allocator capped at its "
           "predicted allocated peak plus shares of its predicted activations (a coarse grid first, finer ones "
           "where the boundary lay), the data's longest sequences together as the last micro-batch. A cell's "
           "runs are pooled over leases and cards. `needs` is lorasim's `needed_bytes`, which decides `fits`; "
           "`worst` the unbounded hold (`worst_reserved_bytes`). FIT cells set `varying_need_default` and "
           "`varying_need_recurring` (`--fit`); the others are held out. `reach`: how often a micro-batch has the "
           "worst one's width (`worst_width_reach`); `share needed`: the share of the activations above the allocated "
           "peak the cell needed (between its failing and running caps); lorasim's share (`varying_need_share`: for "
           "checkpointed cells it falls with the reach) and `needs` in that unit (never below the fixed-shape worst "
           "case).\n",
           "| runs | cell | role | reach | share needed | lorasim's share | needs as a share | predicted allocated | measured allocated | largest cap out of memory | smallest cap that ran | needs | worst | verdict | the share alone |",
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    g = lambda b: "-" if b is None else f"{b / GIB:.2f}"
    for c in sorted(cells, key=lambda c: (c["role"] != "fit", c["name"])):
        f2 = lambda x: "-" if x is None else f"{x:.2f}"
        out.append(f"| {c['runs']} | {c['name']} | {c['role']} | {c['s']['worst_width_reach']:.2f} | "
                   f"{f2(c['share_fail'])}-{f2(c['share_ok'])} | {c['s']['varying_need_share']:.3f} | {need_share(c):.3f} | {g(c['s']['peak_allocated_bytes'])} | {g(c['alloc'])} | "
                   f"{g(c['fail'])} | {g(c['ok'])} | {g(c['need'])} | {g(c['s']['worst_reserved_bytes'])} | {c['verdict']} | {share_verdict(c)} |")
    held = [c for c in cells if c["role"] != "fit"]
    count = collections.Counter(c["verdict"] for c in held)
    alone = collections.Counter(share_verdict(c) for c in held)
    out += ["", f"Held out: {count['safe']} of {len(held)} cells safe, {count['between']} between, "
                f"{count['unsafe']} unsafe. The share alone, without the fixed-shape floor: {alone['safe']} safe, "
                f"{alone['between']} between, {alone['unsafe']} unsafe. One command per cell, e.g.", "",
            f"    lorasim {cells[0]['cmd']}", ""]
    if validate:
        out += ["## Recommended splits under a cap, one epoch each (all held out)", "",
                "`lorasim simulate --memory-limit <cap + 512 MiB context> --safety-margin 0` on the cell; the run "
                "trains one epoch of 256 sequences, the data's longest together last.", "",
                "| cell | cap GiB | split | recommended by lorasim now | needs | measured | peak reserved | steps |",
                "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        bad = 0
        for r in validate:
            _, s, j = simulate(args.lorasim, r, int(r["cap_bytes"] + CONTEXT_BYTES))
            rec = j.get("recommended") or {}
            same = rec.get("micro_batch") == r["micro_batch"]
            oom = r.get("oom")
            bad += bool(oom and s["fits"])
            out.append(f"| {r['pressure_cell']} | {r['cap_gib']} | {r['micro_batch']}x{r['accumulation']} | "
                       f"{'yes' if same else 'no (%sx%s)' % (rec.get('micro_batch'), rec.get('accumulation'))} | "
                       f"{g(s['needed_bytes'])} | {'OUT OF MEMORY' if oom else 'ran' if oom is False else r.get('error')} | "
                       f"{g(r.get('peak_reserved_bytes'))} | {r.get('steps_run')} of {r.get('steps_planned')} |")
        out += ["", f"Splits called fitting that ran out of memory: {bad} of {len(validate)}.", ""]
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
