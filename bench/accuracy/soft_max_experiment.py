#!/usr/bin/env python3
"""An experiment, not part of the cost model: would a soft maximum of host and device time,
T = (H^p + D^p)^(1/p), predict the accuracy grid better than max(H, D)?

Balanced splits (host and device within 25% of each other) run ~11% slower than max(H, D)
predicts on an H200 (bench/results/h200/README.md). This rescoring takes each split's
predicted step-level host and device time from `lorasim simulate` (per micro-batch times x
accumulation, the optimizer and the rest on the larger side), replaces the max by the
p-norm, and scores it against the measured steps, choosing p on two models' splits and
checking it on the other two's.

Run from the repository root after building:
  python3 bench/accuracy/soft_max_experiment.py \\
      --measurements bench/results/h200/accuracy-run2/grid-runs.csv --profile hwprofiles/h200.toml
"""
import argparse, json, subprocess


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--measurements", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--lorasim", default="build/cli/lorasim")
    ap.add_argument("--train-models", default="qwen3-1.7b,llama-3.2-3b")
    args = ap.parse_args()
    v = json.loads(subprocess.run([args.lorasim, "validate", "--measurements", args.measurements, "--profile",
                                   args.profile, "--format", "json"], check=True, capture_output=True,
                                  text=True).stdout)
    pts = []
    for g in v["groups"]:
        w = g["workload"]
        model, seq = w.split()[0], int(w.split("s=")[1].split()[0])
        B, ckpt = int(w.split("B=")[1]), " ckpt " in w
        sim = json.loads(subprocess.run(
            [args.lorasim, "simulate", "--profile", args.profile, "--model", model, "--seq-len", str(seq),
             "--effective-batch", str(B), "--format", "json"] + (["--grad-ckpt"] if ckpt else []),
            check=True, capture_output=True, text=True).stdout)
        by_b = {x["micro_batch"]: x for x in sim["splits"]}
        for s in g["splits"]:
            if s["measured_oom"]:
                continue
            x, a = by_b[s["micro_batch"]], s["accumulation"]
            H, D = a * x["host_time_s"], a * x["device_time_s"]
            rest = x["step_time_s"] - max(H, D)  # optimizer and accumulation adds
            if H > D:
                H += rest
            else:
                D += rest
            pts.append((model, H, D, s["measured_step_time_s"]))
    train = set(args.train_models.split(","))

    def score(p, keep):
        e = [abs(((H ** p + D ** p) ** (1 / p) if p else max(H, D)) / t - 1) for m, H, D, t in pts if keep(m)]
        return 100 * sum(e) / len(e), 100 * max(e)

    print("p     train mean/max    held-out mean/max   (p = 0: max(H, D))")
    for p in [0, 16, 10, 8, 6, 5, 4, 3]:
        tr, te = score(p, lambda m: m in train), score(p, lambda m: m not in train)
        print(f"{p:<4d}  {tr[0]:5.1f}% / {tr[1]:5.1f}%   {te[0]:5.1f}% / {te[1]:5.1f}%")


if __name__ == "__main__":
    main()
