#!/usr/bin/env python3
"""How repeatable the measurements themselves are: the same splits measured twice (two grid
CSVs, e.g. two runs of bench/accuracy/run.sh on one lease), grouped by the regime the profile
predicts. A prediction cannot be more accurate than this.

  python3 bench/accuracy/repeatability.py --lorasim build/cli/lorasim --profile P first.csv second.csv
"""
import argparse, csv, json, statistics, subprocess


def load(path):
    out = {}
    for r in csv.DictReader(open(path)):
        if r["oom"] == "true" or not r["step_time_s"]:
            continue
        out[(r["model"], int(r["seq_len"]), r["grad_ckpt"] == "true", int(r["micro_batch"]),
             int(r["accumulation"]))] = float(r["step_time_s"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lorasim", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("first")
    ap.add_argument("second")
    a = ap.parse_args()
    first, second = load(a.first), load(a.second)
    by_regime = {}
    for key in sorted(set(first) & set(second)):
        model, seq, ckpt, b, acc = key
        cmd = [a.lorasim, "simulate", "--profile", a.profile, "--model", model, "--seq-len", str(seq),
               "--effective-batch", str(b * acc), "--format", "json"] + (["--grad-ckpt"] if ckpt else [])
        split = next(s for s in json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
                     ["splits"] if s["micro_batch"] == b)
        ratio = split["host_time_s"] / split["device_time_s"]
        regime = "host-bound" if ratio > 1.25 else "device-bound" if ratio < 0.8 else "balanced"
        by_regime.setdefault(regime, []).append(second[key] / first[key] - 1)
    print("| regime | pairs | median change | mean abs change | max abs change |")
    print("| --- | --- | --- | --- | --- |")
    for regime, d in sorted(by_regime.items()):
        print(f"| {regime} | {len(d)} | {statistics.median(d):+.1%} | {statistics.mean(map(abs, d)):.1%} | "
              f"{max(map(abs, d)):.1%} |")


if __name__ == "__main__":
    main()
