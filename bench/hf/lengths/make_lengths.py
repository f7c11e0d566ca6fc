#!/usr/bin/env python3
"""Writes the length distributions the issue-16 runs train on (bench/hf/lengths_runs.py) as
`length,count` histograms of 4000 sequences each, seeded, so a re-run writes the same bytes:

  longtail.csv  log-normal, median 256 tokens, sigma 0.9, truncated (clipped) at 1024
  chat.csv      bimodal: 85% short turns, log-normal median 150 sigma 0.7; 15% a long mode,
                log-normal median 900 sigma 0.45; truncated (clipped) at 2048
  fixed512.csv, fixed1024.csv   every sequence 512 (1024) tokens: no padding at all, the
                controls that padded micro-batches of the same widths are compared with
  chat1024.csv  chat's draws truncated at 1024, SFTTrainer's default max_length: a spike at
                the maximum that a fifth of the sequences reach
  uniform1024.csv   uniform on [8, 1024]: micro-batches as wide as the controls, about half padding
  steps1024.csv     256, 512, 768 or 1024 tokens, equally often: shapes vary but repeat, which
                separates a cost per new shape from a cost per padded micro-batch

Truncation clips a longer draw to the maximum, as SFTTrainer's `max_length` does, so each file
has a spike at its maximum. Lengths below 8 are raised to 8 (no chat turn is shorter).

    python3 bench/hf/lengths/make_lengths.py [--out-dir bench/hf/lengths]
"""
import argparse, collections, math, os, random

N = 4000
MIN_LEN = 8


def longtail(rng):
    return rng.lognormvariate(math.log(256), 0.9), 1024


def chat(rng):
    if rng.random() < 0.85:
        return rng.lognormvariate(math.log(150), 0.7), 2048
    return rng.lognormvariate(math.log(900), 0.45), 2048


def chat1024(rng):
    return chat(rng)[0], 1024


def fixed(length):
    return lambda rng: (length, length)


def uniform1024(rng):
    return rng.uniform(MIN_LEN, 1024), 1024


def steps1024(rng):
    return rng.choice((256, 512, 768, 1024)), 1024


DISTRIBUTIONS = {"longtail": (longtail, 16), "chat": (chat, 17), "fixed512": (fixed(512), 18),
                 "fixed1024": (fixed(1024), 19), "uniform1024": (uniform1024, 20),
                 "steps1024": (steps1024, 21), "chat1024": (chat1024, 17)}  # name -> (draw, seed)


def histogram(draw, seed, n=N):
    rng = random.Random(seed)
    counts = collections.Counter()
    for _ in range(n):
        x, cap = draw(rng)
        counts[min(cap, max(MIN_LEN, round(x)))] += 1
    return counts


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", default=os.path.dirname(os.path.abspath(__file__)))
    args = ap.parse_args()
    for name, (draw, seed) in DISTRIBUTIONS.items():
        counts = histogram(draw, seed)
        path = os.path.join(args.out_dir, name + ".csv")
        with open(path, "w") as f:
            f.write("length,count\n")
            for length in sorted(counts):
                f.write(f"{length},{counts[length]}\n")
        total = sum(counts.values())
        mean = sum(k * v for k, v in counts.items()) / total
        print(f"{path}: {total} sequences, {len(counts)} lengths, mean {mean:.1f}, max {max(counts)}"
              f" ({counts[max(counts)]} at the maximum)")


if __name__ == "__main__":
    main()
