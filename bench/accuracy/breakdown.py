#!/usr/bin/env python3
"""Where the step-time error is: splits from `lorasim validate --format json`, grouped by
the regime the profile predicts (host/device time of a micro-batch), by model, sequence
length and checkpointing. The regime comes from `lorasim simulate` with the same profile.

  python3 bench/accuracy/breakdown.py --lorasim build/cli/lorasim --profile P validate.json [...]
"""
import argparse, collections, json, re, statistics, subprocess


def regime(ratio):
    return "host-bound" if ratio > 1.25 else "device-bound" if ratio < 0.8 else "balanced"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lorasim", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("validate_json", nargs="+")
    a = ap.parse_args()
    points = []
    for path in a.validate_json:
        for g in json.load(open(path))["groups"]:
            m = re.match(r"(\S+) L=\d+ s=(\d+)( ckpt)? .* B=(\d+)", g["workload"])
            model, seq, ckpt, B = m.group(1), int(m.group(2)), bool(m.group(3)), int(m.group(4))
            cmd = [a.lorasim, "simulate", "--profile", a.profile, "--model", model, "--seq-len", str(seq),
                   "--effective-batch", str(B), "--format", "json"] + (["--grad-ckpt"] if ckpt else [])
            sim = {s["micro_batch"]: s for s in json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                                                          text=True).stdout)["splits"]}
            for s in g["splits"]:
                if s.get("step_time_error") is None:
                    continue
                p = sim[s["micro_batch"]]
                points.append(dict(model=model, seq=seq, ckpt=ckpt, err=s["step_time_error"],
                                   regime=regime(p["host_time_s"] / p["device_time_s"])))

    def table(title, key):
        groups = collections.defaultdict(list)
        for p in points:
            groups[key(p)].append(p["err"])
        print(f"\n| {title} | splits | mean abs error | max abs error | mean signed error |")
        print("| --- | --- | --- | --- | --- |")
        for k in sorted(groups):
            e = groups[k]
            print(f"| {k} | {len(e)} | {statistics.mean(map(abs, e)):.1%} | {max(map(abs, e)):.1%} | "
                  f"{statistics.mean(e):+.1%} |")

    print(f"{len(points)} splits from {len(a.validate_json)} file(s)")
    table("regime", lambda p: p["regime"])
    table("model", lambda p: p["model"])
    table("model, regime", lambda p: f'{p["model"]}, {p["regime"]}')
    table("sequence length", lambda p: p["seq"])
    table("checkpointing", lambda p: "on" if p["ckpt"] else "off")


if __name__ == "__main__":
    main()
