#!/usr/bin/env python3
"""Runs the accuracy grid with `lorasim validate`, appending every measured split to one
measurement CSV (docs/measurements.md). Stops starting new workloads past --deadline."""
import argparse, itertools, json, os, subprocess, sys, tempfile, time

MODELS = ["qwen3-1.7b", "qwen3-0.6b", "qwen3-4b", "llama-3.2-3b"]
SEQS = [256, 1024, 4096]
BATCHES = [8, 32, 128]
MAX_ACCUM = 32  # a 1 x 128 split of a 36-layer model costs minutes of host time alone


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lorasim", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--deadline", type=float, default=float("inf"))
    ap.add_argument("--steps", default="2")
    args = ap.parse_args()
    cells = list(itertools.product(MODELS, SEQS, [False, True]))
    header_written = os.path.exists(args.out)
    for k, (model, seq, ckpt) in enumerate(cells):
        if time.time() > args.deadline:
            print(f"deadline reached: {len(cells) - k} workloads not run", flush=True)
            break
        B = BATCHES[k % len(BATCHES)]  # one B per cell, rotating
        base = ["--profile", args.profile, "--model", model, "--seq-len", str(seq), "--effective-batch", str(B)]
        if ckpt:
            base.append("--grad-ckpt")
        sim = json.loads(subprocess.run([args.lorasim, "simulate", *base, "--format", "json"],
                                        check=True, capture_output=True, text=True).stdout)
        splits, first_unfit = [], None
        for s in sim["splits"]:
            if s["accumulation"] > MAX_ACCUM:
                continue
            if s["fits"]:
                splits.append(s)
            elif first_unfit is None:
                first_unfit = s  # checks that "does not fit" is real
        if first_unfit:
            splits.append(first_unfit)
        if not splits:
            continue
        spec = ",".join(f'{s["micro_batch"]}x{s["accumulation"]}' for s in splits)
        with tempfile.NamedTemporaryFile(suffix=".csv", delete=False) as tmp:
            path = tmp.name
        print(f"[{k + 1}/{len(cells)}] {model} seq={seq} B={B} ckpt={ckpt}: {spec}", flush=True)
        r = subprocess.run([args.lorasim, "validate", *base, "--device", "cuda", "--splits", spec,
                            "--steps", args.steps, "--format", "json", "--save-measurements", path],
                           capture_output=True, text=True)
        if r.returncode != 0:
            print(r.stderr, file=sys.stderr)
            continue
        with open(path) as f:
            lines = f.read().splitlines()
        with open(args.out, "a") as f:
            for i, line in enumerate(lines):
                if i == 0 and header_written:
                    continue
                f.write(line + "\n")
        header_written = True
        os.unlink(path)


if __name__ == "__main__":
    main()
