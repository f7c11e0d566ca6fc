#!/usr/bin/env python3
"""Accuracy of the hf-peft stack's predictions on held-out runs: reads `lorasim validate
--measurements ROWS --profile P --format json` output, classifies every split by the regime the
profile predicts (from `lorasim simulate` with the row's stack options), and writes the figures
issue 11 asks for as JSON (stdout) and a Markdown table (--markdown FILE), with the coverage of
the predicted step-time range (the share of measured splits whose time fell within it, overall and
per regime); validate output from before the range existed is scored against `simulate`'s range.

  python3 bench/hf/summarize.py --lorasim build/cli/lorasim --profile P validate.json [...]
"""
import argparse, json, os, re, statistics, subprocess, sys


def regime(host, device):
    r = host / device if device > 0 else float("inf")
    return "host-bound" if r > 1.25 else "device-bound" if r < 0.8 else "balanced"


def simulate(a, g, cache):
    m = re.match(r"(\S+) L=\d+ s=(\d+)( ckpt)? .* B=(\d+)", g["workload"])
    model, seq, ckpt, B = m.group(1), int(m.group(2)), bool(m.group(3)), int(m.group(4))
    st = g["stack"]
    cmd = [a.lorasim, "simulate", "--profile", a.profile, "--seq-len", str(seq), "--effective-batch", str(B),
           "--format", "json", "--stack", st["kind"], "--memory-limit", "100TiB", "--allow-over-memory"]  # every split: none is left out as not fitting
    cmd += ["--model-config", model] if model.endswith(".json") else ["--model", model]
    if st["kind"] == "hf-peft":
        cmd += ["--attn-impl", st["attn_impl"], "--lora-dropout", str(st["lora_dropout"]), "--allocator",
                st["allocator"], "--autocast", "true" if st["autocast"] else "false"]
    if ckpt:
        cmd.append("--grad-ckpt")
    key = tuple(cmd)
    if key not in cache:
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        cache[key] = {s["micro_batch"]: s for s in json.loads(out)["splits"]}
    return cache[key]


def within_range(s, p):
    """The measured step time of validate's split `s` lies within the predicted range."""
    if s.get("within_range") is not None:
        return s["within_range"]
    low, high = (s["predicted_step_time_low_s"], s["predicted_step_time_high_s"]) if "predicted_step_time_low_s" in s \
        else (p["step_time_low_s"], p["step_time_high_s"])
    return low <= s["measured_step_time_s"] <= high


def coverage(hits):
    return {"n": len(hits), "within": sum(hits), "coverage": sum(hits) / len(hits) if hits else None}


def stats(v):
    v = [abs(x) for x in v]
    return {"n": len(v), "mean_abs": statistics.mean(v) if v else None, "max_abs": max(v) if v else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lorasim", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--profile-label", help="how the JSON names the profile (default: its path)")
    ap.add_argument("--markdown", help="also write a Markdown table here")
    ap.add_argument("--title", default="held-out hf-peft runs")
    ap.add_argument("validate_json", nargs="+")
    a = ap.parse_args()
    cache, time_by, res, worst_under, regrets, regrets_any, oom_rec = {}, {}, [], [], [], [], 0
    range_by = {}
    for path in a.validate_json:
        for g in json.load(open(path))["groups"]:
            sim = simulate(a, g, cache)
            regrets.append(g.get("regret") or 0.0)
            regrets_any.append(g.get("regret_any") or 0.0)
            oom_rec += bool(g.get("recommended_oom"))
            for s in g["splits"]:
                if s["measured_oom"]:
                    continue
                p = sim[s["micro_batch"]]
                rg = regime(p["host_time_s"], p["device_time_s"])
                time_by.setdefault(rg, []).append(s["step_time_error"])
                time_by.setdefault("all", []).append(s["step_time_error"])
                hit = within_range(s, p)
                range_by.setdefault(rg, []).append(hit)
                range_by.setdefault("all", []).append(hit)
                if s.get("reserved_error") is not None:
                    res.append(s["reserved_error"])
                    worst_under.append(max(0.0, 1 - s["predicted_worst_reserved_bytes"] / s["measured_peak_reserved_bytes"]))
    out = {"title": a.title, "profile": a.profile_label or a.profile, "inputs": [os.path.basename(p) for p in a.validate_json],
           "step_time": {k: stats(v) for k, v in sorted(time_by.items())},
           "time_range_coverage": {k: coverage(v) for k, v in sorted(range_by.items())},
           "peak_reserved": dict(stats(res), largest_under=max([-x for x in res] + [0.0]),
                                 worst_case_largest_under=max(worst_under + [0.0])),
           "regret_max": max(regrets + [0.0]),
           "regret_any_max": max(regrets_any + [0.0]), "workloads": len(regrets), "recommended_oom": oom_rec}
    json.dump(out, sys.stdout, indent=1)
    print()
    if a.markdown:
        pct = lambda x: "-" if x is None else f"{100 * x:.1f}%"
        lines = [f"### {a.title}", "", "| figure | splits | mean abs error | max abs error |", "|---|---|---|---|"]
        for k, s in out["step_time"].items():
            lines.append(f"| step time, {k} | {s['n']} | {pct(s['mean_abs'])} | {pct(s['max_abs'])} |")
        r = out["peak_reserved"]
        lines.append(f"| peak reserved | {r['n']} | {pct(r['mean_abs'])} | {pct(r['max_abs'])} |")
        cov = out["time_range_coverage"]
        lines += ["", "| step time within the predicted range | splits | within | coverage |", "|---|---|---|---|"]
        for k, c in cov.items():
            lines.append(f"| {k} | {c['n']} | {c['within']} | {pct(c['coverage'])} |")
        lines += ["", f"- largest under-prediction of the peak: {pct(r['largest_under'])}; of the worst case that "
                  f"decides fits: {pct(r['worst_case_largest_under'])}",
                  f"- regret (recommended vs the fastest measured split whose peak plus the safety margin (0 by default) fit): at "
                  f"most {pct(out['regret_max'])} over {out['workloads']} workloads (against the fastest that ran, "
                  f"margin or not: {pct(out['regret_any_max'])}); recommended splits that ran out of memory: {oom_rec}",
                  ""]
        open(a.markdown, "w").write("\n".join(lines))


if __name__ == "__main__":
    main()
