#!/usr/bin/env python3
"""How far one process's step time strays from another's on the same machine, minutes apart:
reads rows of the same cells run in several processes (scripts/gpu/hf-collect.sh's allocab
stage: two held-out cells in alternating default/expandable allocator processes, twice) and
prints, per split, every process's time, the spread, and default vs expandable; then the rms and
largest deviation from a split's mean, as Markdown.

    python3 bench/hf/process_spread.py bench/results/h200/hf-peft-run6/allocab-rows.jsonl
"""
import json, statistics, sys


def main():
    rows = [json.loads(line) for line in open(sys.argv[1])]
    by = {}
    for r in rows:
        if r.get("oom"):
            continue
        by.setdefault((r["model"], r["seq_len"], r["micro_batch"], r["accumulation"]), []).append(r)
    print("| workload | split | step time per process (d: default, e: expandable allocator) | max/min - 1 | default / expandable |")
    print("|---|---|---|---|---|")
    devs, ratios = [], []
    for (model, seq, b, a), rs in by.items():
        t = [r["step_time_s"] for r in rs]
        mean = statistics.mean(t)
        devs += [x / mean - 1 for x in t]
        d = [r["step_time_s"] for r in rs if r["allocator"] == "default"]
        e = [r["step_time_s"] for r in rs if r["allocator"] == "expandable"]
        ratio = statistics.mean(d) / statistics.mean(e) if d and e else float("nan")
        ratios.append(ratio)
        times = ", ".join(f"{r['allocator'][0]} {r['step_time_s']:.3f}" for r in rs)
        print(f"| {model.split('/')[-1]} s={seq} | {b}x{a} | {times} | {100 * (max(t) / min(t) - 1):.1f}% | {ratio:.3f} |")
    rms = statistics.mean(x * x for x in devs) ** 0.5
    print()
    print(f"- deviation of one process's step time from the mean of its split's processes: rms {100 * rms:.1f}%, "
          f"largest {100 * max(abs(x) for x in devs):.1f}% ({len(devs)} runs, {len(by)} splits)")
    print(f"- default / expandable allocator step time: mean {statistics.mean(ratios):.3f}, "
          f"range {min(ratios):.3f}-{max(ratios):.3f}")


if __name__ == "__main__":
    main()
