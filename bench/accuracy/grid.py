#!/usr/bin/env python3
"""Runs the accuracy grid with `lorasim validate`, appending every measured split to one
measurement CSV (docs/measurements.md).

Grid: MODELS x SEQS x gradient checkpointing off/on (24 workloads), each at one effective
batch from BATCHES. Sampling, so that the whole benchmark fits its time budget:
  * the effective batch rotates over the workloads (a Latin square over model, sequence
    length and checkpointing), so every model and every sequence length meets every B;
  * a workload with no split that fits, or whose predicted cost (warm-up plus measured steps of all its splits) exceeds
    --cell-cap seconds falls back to the next smaller B: at seq 4096, B = 128 is ~0.5 M
    tokens a step, 10-40 s per step on an H200, which one workload cannot afford;
  * splits with more than MAX_ACCUM accumulation steps are left out (they are host-bound
    and long: 1 x 128 on a 36-layer model is minutes of dispatch);
  * every split the profile predicts to fit is run, plus the smallest predicted not to fit
    (it checks that "does not fit" is real).
The plan and its predicted cost are printed first; --dry-run stops there. Workloads are
ordered so that a cut at --deadline leaves every model represented. Workloads already in
--out are skipped, so a run cut by its deadline resumes where it stopped."""
import csv
import argparse, itertools, json, os, subprocess, sys, tempfile, time

MODELS = ["qwen3-1.7b", "qwen3-0.6b", "qwen3-4b", "llama-3.2-3b"]
SEQS = [256, 1024, 4096]
BATCHES = [8, 32, 128]
MAX_ACCUM = 8
PROCESS_OVERHEAD_S = 8  # start, CUDA init and model construction of one `lorasim validate`


def simulate(args, model, seq, B, ckpt):
    cmd = [args.lorasim, "simulate", "--profile", args.profile, "--model", model, "--seq-len", str(seq),
           "--effective-batch", str(B), "--format", "json"] + (["--grad-ckpt"] if ckpt else [])
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def chosen_splits(sim):
    splits, first_unfit = [], None
    for s in sim["splits"]:
        if s["accumulation"] > MAX_ACCUM:
            continue
        if s["fits"]:
            splits.append(s)
        elif first_unfit is None:
            first_unfit = s
    return splits, first_unfit


def steps_for(splits, default):
    # Long steps repeat within a percent (device-bound); one measured step is enough there.
    return 1 if splits and min(s["step_time_s"] for s in splits) > 1.0 else default


def cost(splits, first_unfit, steps, warmup):
    t = sum((warmup + steps) * s["step_time_s"] for s in splits)
    if first_unfit:
        t += 1  # an out-of-memory is found in the first micro-batch
    return t + PROCESS_OVERHEAD_S


def plan(args):
    cells = []
    for (si, seq), (ci, ckpt), (mi, model) in itertools.product(enumerate(SEQS), enumerate([False, True]),
                                                                  enumerate(MODELS)):
        pref = (mi + si + 2 * ci + args.rotation) % len(BATCHES)
        for bi in range(pref, -1, -1):
            B = BATCHES[bi]
            splits, unfit = chosen_splits(simulate(args, model, seq, B, ckpt))
            steps = steps_for(splits, args.steps)
            c = cost(splits, unfit, steps, args.warmup)
            fits = any(s["fits"] for s in splits)
            if (fits and c <= args.cell_cap) or bi == 0:
                break
        cells.append(dict(model=model, seq=seq, ckpt=ckpt, B=B, preferred_B=BATCHES[pref], steps=steps,
                          splits=splits + ([unfit] if unfit else []), predicted_s=c))
    return cells


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lorasim", required=True)
    ap.add_argument("--profile", required=True)
    ap.add_argument("--out", required=True, help="measurement CSV to append to")
    ap.add_argument("--deadline", type=float, default=float("inf"), help="epoch seconds: start no workload after")
    ap.add_argument("--steps", type=int, default=3, help="measured steps of splits under a second (median)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--cell-cap", type=float, default=30, help="predicted seconds one workload may take")
    ap.add_argument("--rotation", type=int, default=0,
                    help="shift the Latin square: 1 and 2 give every workload another B of BATCHES")
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    cells = plan(args)
    total = sum(c["predicted_s"] for c in cells)
    for k, c in enumerate(cells):
        spec = ",".join(f'{s["micro_batch"]}x{s["accumulation"]}' for s in c["splits"])
        note = "" if c["B"] == c["preferred_B"] else f' (B={c["preferred_B"]} over the cap)'
        print(f'[{k + 1}/{len(cells)}] {c["model"]} seq={c["seq"]} ckpt={c["ckpt"]} B={c["B"]}{note}: '
              f'{spec} steps={c["steps"]} ~{c["predicted_s"]:.0f} s', flush=True)
    print(f"plan: {len(cells)} workloads, {sum(len(c['splits']) for c in cells)} splits, "
          f"predicted {total:.0f} s", flush=True)
    if args.dry_run:
        return
    header_written = os.path.exists(args.out) and os.path.getsize(args.out) > 0
    done = set()
    if header_written:
        with open(args.out) as f:
            for r in csv.DictReader(line for line in f if not line.startswith("#")):
                B = int(r["micro_batch"]) * int(r["accumulation"])
                done.add((r["model"], int(r["seq_len"]), r["grad_ckpt"] == "true", B))
    for k, c in enumerate(cells):
        if not c["splits"] or (c["model"], c["seq"], c["ckpt"], c["B"]) in done:
            continue
        if time.time() > args.deadline:
            left = sum(1 for d in cells[k:] if (d["model"], d["seq"], d["ckpt"], d["B"]) not in done)
            print(f"deadline reached: {left} workloads not run", flush=True)
            break
        spec = ",".join(f'{s["micro_batch"]}x{s["accumulation"]}' for s in c["splits"])
        fd, path = tempfile.mkstemp(suffix=".csv")
        os.close(fd)
        os.unlink(path)  # validate refuses nothing here, but writes the file itself
        t0 = time.time()
        cmd = [args.lorasim, "validate", "--profile", args.profile, "--model", c["model"], "--seq-len",
               str(c["seq"]), "--effective-batch", str(c["B"]), "--device", "cuda", "--splits", spec,
               "--steps", str(c["steps"]), "--warmup", str(args.warmup), "--format", "json",
               "--save-measurements", path] + (["--grad-ckpt"] if c["ckpt"] else [])
        r = subprocess.run(cmd, capture_output=True, text=True)
        print(f'[{k + 1}/{len(cells)}] {c["model"]} seq={c["seq"]} ckpt={c["ckpt"]} B={c["B"]}: '
              f'{time.time() - t0:.0f} s (predicted {c["predicted_s"]:.0f} s)', flush=True)
        if r.returncode != 0 or not os.path.exists(path):
            print(r.stderr, file=sys.stderr, flush=True)
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
