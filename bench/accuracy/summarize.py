#!/usr/bin/env python3
"""Turns `lorasim validate --measurements ... --format json` into accuracy.csv,
accuracy-summary.json (the issue's keys) and accuracy.svg (predicted vs measured)."""
import argparse, csv, datetime, json, math, os


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--validate-json", required=True)
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--command", required=True)
    ap.add_argument("--gpu", required=True)
    ap.add_argument("--note", default="", help="how the measurements and the profile were obtained")
    ap.add_argument("--date", default="", help="when the measurements were taken (default: now), ISO 8601")
    a = ap.parse_args()
    v = json.load(open(a.validate_json))
    rows = []
    for g in v["groups"]:
        for s in g["splits"]:
            rows.append(dict(workload=g["workload"], **s))
    with open(os.path.join(a.out_dir, "accuracy.csv"), "w", newline="") as f:
        keys = ["workload", "micro_batch", "accumulation", "predicted_step_time_s", "measured_step_time_s",
                "step_time_error", "predicted_peak_reserved_bytes", "measured_peak_reserved_bytes",
                "reserved_error", "predicted_fits", "measured_oom"]
        # The workload label has commas (its LoRA targets): csv quotes it. Missing values stay empty.
        w = csv.DictWriter(f, fieldnames=keys, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        for r in rows:
            w.writerow({k: "" if r.get(k) is None else r[k] for k in keys})
    s = v["summary"]
    summary = {
        "time_mean_abs_err": s["time_mean_abs_err"], "time_max_abs_err": s["time_max_abs_err"],
        "mem_mean_abs_err": s["mem_mean_abs_err"], "mem_max_under_err": s["mem_max_under_err"],
        "mem_max_under_err_worst_case": s.get("mem_max_under_err_worst_case"),
        "regret_max": s["regret_max"], "recommended_oom": s["recommended_oom"], "points": s["points"],
        "command": a.command, "gpu": a.gpu, **({"note": a.note} if a.note else {}),
        "date": a.date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }
    json.dump(summary, open(os.path.join(a.out_dir, "accuracy-summary.json"), "w"), indent=2)
    # Log-log scatter of step time, predicted against measured, with the y = x line.
    pts = [(r["measured_step_time_s"], r["predicted_step_time_s"]) for r in rows
           if r.get("measured_step_time_s") not in (None, "") and not r["measured_oom"]]
    if pts:
        lo = min(min(p) for p in pts) / 1.2
        hi = max(max(p) for p in pts) * 1.2
        W, M = 500, 64
        def xy(t):
            return M + (W - 2 * M) * (math.log(t) - math.log(lo)) / (math.log(hi) - math.log(lo))
        svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{W}" font-family="sans-serif" font-size="12">',
               f'<rect width="{W}" height="{W}" fill="white"/>',
               f'<text x="{W/2}" y="20" text-anchor="middle">step time: predicted vs measured ({a.gpu})</text>',
               f'<line x1="{M}" y1="{W-M}" x2="{W-M}" y2="{M}" stroke="#999" stroke-dasharray="4"/>',
               f'<rect x="{M}" y="{M}" width="{W-2*M}" height="{W-2*M}" fill="none" stroke="black"/>',
               f'<text x="{W/2}" y="{W-15}" text-anchor="middle">measured (s, log)</text>',
               f'<text x="14" y="{W/2}" transform="rotate(-90 14 {W/2})" text-anchor="middle">predicted (s, log)</text>']
        # Ticks at 1-2-5 values inside the range, and +-10% bands around y = x.
        ticks = [m * 10 ** e for e in range(-4, 4) for m in (1, 2, 5) if lo <= m * 10 ** e <= hi]
        for t in ticks:
            label = f"{t:g} s" if t >= 1 else f"{t * 1000:g} ms"
            svg.append(f'<line x1="{xy(t):.1f}" y1="{W-M}" x2="{xy(t):.1f}" y2="{W-M+5}" stroke="black"/>')
            svg.append(f'<text x="{xy(t):.1f}" y="{W-M+18}" text-anchor="middle" font-size="10">{label}</text>')
            svg.append(f'<line x1="{M-5}" y1="{W-xy(t):.1f}" x2="{M}" y2="{W-xy(t):.1f}" stroke="black"/>')
            svg.append(f'<text x="{M-8}" y="{W-xy(t)+3:.1f}" text-anchor="end" font-size="10">{label}</text>')
        for f in (1.1, 1 / 1.1):
            svg.append(f'<line x1="{xy(lo):.1f}" y1="{W-xy(lo*f):.1f}" x2="{xy(hi/f if f > 1 else hi):.1f}" '
                       f'y2="{W-xy(hi if f > 1 else hi*f):.1f}" stroke="#ccc" stroke-dasharray="2"/>')
        svg.append(f'<text x="{W-M-5}" y="{M+15}" text-anchor="end" font-size="10" fill="#888">dotted: ±10%</text>')
        for m, p in pts:
            svg.append(f'<circle cx="{xy(m):.1f}" cy="{W - xy(p):.1f}" r="3" fill="#1f77b4" fill-opacity="0.7"/>')
        svg.append("</svg>")
        open(os.path.join(a.out_dir, "accuracy.svg"), "w").write("\n".join(svg))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
