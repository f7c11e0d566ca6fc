#!/usr/bin/env python3
"""What the default caching allocator needs, under a cap, to run the worst micro-batch (issue 16).

On an uncapped GPU PyTorch's default allocator holds far more than it allocates when micro-batch
shapes vary (bench/results/h200/lengths-run1: reserved / allocated up to 1.9). Under a cap it frees
its unused cached segments and retries before it reports an out-of-memory, so what a split *needs* on
a smaller GPU lies between its allocated peak and that hold. This measures it: per cell, runs under
the default allocator capped (`torch.cuda.set_per_process_memory_fraction`) at lorasim's predicted peak
allocated bytes of the cell's worst micro-batch plus a share of its activation bytes, shares ascending, in one worker
process per cell (a fresh one after each out-of-memory). The predictions come from the lorasim
binary on the development machine, before the run, into a caps file:

    python3 bench/hf/pressure_runs.py --predict build/cli/lorasim > bench/hf/pressure-caps.json
    python3 bench/hf/pressure_runs.py --caps bench/hf/pressure-caps.json --budget-s 520 --out-dir $OUT  # GPU
    python3 bench/hf/pressure_runs.py --plan validate --budget-s 520 --out-dir $OUT --rows validate-rows.jsonl
    python3 bench/hf/pressure_runs.py --caps bench/hf/pressure-caps.json --cells sft --shares 0.4,0.5 --out-dir $OUT
    python3 bench/hf/pressure_runs.py --smoke --out-dir /tmp/pressure-smoke  # CPU, tiny model, no caps

Every run trains one epoch over the cell's sequences in a fixed order whose last micro-batch holds the
data's b longest sequences together (`order="worst_last"` of bench/hf/lengths_runs.py): the worst
micro-batch, met after the allocator has cached every shape before it. The rows are lengths_runs.py's
(plus `pressure_cell`, `role`, `cap_share`, `predicted_allocated_bytes`); step times are not clean
(several processes share the GPU). Processes run at once while the sum of their largest caps stays
under --gpu-budget-gib, so that no out-of-memory comes from another process.
"""
import argparse, json, os, sys, tempfile, threading, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import lengths_runs as lr  # noqa: E402

# A cap is the predicted peak allocated bytes of the worst micro-batch plus this share of its predicted
# activation bytes (peak allocated less the model's static bytes): the unit the simulator's allocator
# terms are counted in.
SHARES = [0.05, 0.15, 0.30, 0.60]
SMOKE = ("tiny", "bench/hf/configs/smoke.json")

# (name, model, distribution, trainer, (b, a), optimizer steps, role); the role was fixed before any row
# was seen: FIT cells may set the model's term, the held-out ones only score it.
CELLS = [
    ("q3-trainer-chat-2x8", lr.QWEN3, "chat", "Trainer", (2, 8), 4, "fit"),
    ("q3-trainer-longtail-4x4", lr.QWEN3, "longtail", "Trainer", (4, 4), 6, "fit"),
    ("q3-trainer-uniform-2x4", lr.QWEN3, "uniform1024", "Trainer", (2, 4), 6, "fit"),
    ("q3-sft-chat-4x4", lr.QWEN3, "chat", "SFTTrainer", (4, 4), 6, "fit"),
    ("q3-trainer-chat-4x4", lr.QWEN3, "chat", "Trainer", (4, 4), 6, "held out"),
    ("q3-trainer-longtail-8x2", lr.QWEN3, "longtail", "Trainer", (8, 2), 10, "held out"),
    # held out until varying_need_recurring: the one checkpointed cell whose worst width recurs (in 70%
    # of its micro-batches) was then needed to fit it; the checkpointed cells below were measured for it
    ("q3-sft-longtail-16x1", lr.QWEN3, "longtail", "SFTTrainer", (16, 1), 16, "fit"),
    ("q25-trainer-chat-2x8", lr.QWEN25, "chat", "Trainer", (2, 8), 4, "held out"),
    ("q25-sft-chat-8x2", lr.QWEN25, "chat", "SFTTrainer", (8, 2), 10, "held out"),
    # checkpointed cells whose worst width recurs more or less often, for varying_need_recurring
    ("q3-sft-longtail-8x2", lr.QWEN3, "longtail", "SFTTrainer", (8, 2), 10, "held out"),
    ("q3-sft-longtail-4x4", lr.QWEN3, "longtail", "SFTTrainer", (4, 4), 6, "held out"),
    ("q25-sft-longtail-16x1", lr.QWEN25, "longtail", "SFTTrainer", (16, 1), 16, "held out"),
    ("q3-sft-chat1024-16x1", lr.QWEN3, "chat1024", "SFTTrainer", (16, 1), 16, "held out"),
    ("q3-sft-chat1024-8x2", lr.QWEN3, "chat1024", "SFTTrainer", (8, 2), 10, "held out"),
    ("q3-sft-steps1024-4x4", lr.QWEN3, "steps1024", "SFTTrainer", (4, 4), 6, "held out"),
    # held out until pressure-needs-run1 ran it out of memory at 0.38 (lorasim then said 0.427): it now
    # sets varying_need_default
    ("q3-sft-uniform-8x2", lr.QWEN3, "uniform1024", "SFTTrainer", (8, 2), 10, "fit"),
]
# --plan validate: what `lorasim simulate --memory-limit <cap + context> --safety-margin 0` recommends
# under an allocator capped as on a 16 GB and a 24 GB GPU (15 and 23 GiB), with varying_need_default,
# each over one epoch of 256 sequences whose last micro-batch is the worst: (name, model, distribution,
# trainer, (b, a), cap GiB). Every one of them is held out.
VALIDATE = [
    ("v15-q3-trainer-longtail-1x16", lr.QWEN3, "longtail", "Trainer", (1, 16), 15.0),
    ("v15-q3-sft-chat-8x2", lr.QWEN3, "chat", "SFTTrainer", (8, 2), 15.0),
    ("v15-q3-sft-longtail-16x1", lr.QWEN3, "longtail", "SFTTrainer", (16, 1), 15.0),
    ("v15-q25-trainer-longtail-1x16", lr.QWEN25, "longtail", "Trainer", (1, 16), 15.0),
    ("v23-q3-trainer-longtail-2x8", lr.QWEN3, "longtail", "Trainer", (2, 8), 23.0),
    ("v23-q3-trainer-chat-1x16", lr.QWEN3, "chat", "Trainer", (1, 16), 23.0),
    ("v23-q3-sft-chat-16x1", lr.QWEN3, "chat", "SFTTrainer", (16, 1), 23.0),
    ("v23-q25-trainer-longtail-2x8", lr.QWEN25, "longtail", "Trainer", (2, 8), 23.0),
    ("v23-q25-trainer-chat-1x16", lr.QWEN25, "chat", "Trainer", (1, 16), 23.0),
    # added when varying_need_default fell to 0.34: what lorasim then recommends under 15 GiB in place of 8x2
    ("v15-q3-sft-chat-16x1", lr.QWEN3, "chat", "SFTTrainer", (16, 1), 15.0),
]
VALIDATE_SEQUENCES = 256

SMOKE_CELLS = [("tiny-sft-longtail-2x2", SMOKE, "longtail", "SFTTrainer", (2, 2), 3, "fit"),
               ("tiny-trainer-chat-4x1", SMOKE, "chat", "Trainer", (4, 1), 3, "held out")]


def job(c, cap_gib, share, predicted):
    name, model, dist, trainer, (b, a), steps, role = c
    j = lr.cell(model, dist, trainer, [(b, a)], allocator="default", cap_gib=cap_gib, n=b * a * steps,
                epoch=True, warmup=1, order="worst_last")
    return dict(j, split=[b, a], pressure_cell=name, role=role, cap_share=share, predicted_allocated_bytes=predicted)


def predict(lorasim):
    """lorasim's worst micro-batch per cell (the data's b longest, truncated), as the accuracy scripts ask."""
    import subprocess
    out = {}
    for name, model, dist, trainer, (b, a), _, _ in CELLS:
        lengths = os.path.join(HERE, "lengths", dist + ".csv")
        max_length = max(lr.read_lengths(dist)[0])
        cmd = [lorasim, "simulate", "--gpu", "h200", "--lengths", os.path.relpath(lengths, lr.REPO), "--padding",
               "longest", "--max-length", str(max_length), "--effective-batch", str(b * a), "--format", "json",
               "--model-config", model[1], "--lora-dropout", "0.0", "--allocator", "default", "--allow-over-memory"]
        cmd += ["--grad-ckpt", "--fused-lm-head", "true"] if trainer == "SFTTrainer" else ["--fused-lm-head", "false"]
        j = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=lr.REPO).stdout)
        s = next(x for x in j["splits"] if x["micro_batch"] == b)
        out[name] = {k: s[k] for k in ("peak_allocated_bytes", "activation_bytes", "peak_reserved_bytes",
                                       "worst_reserved_bytes", "needed_bytes", "worst_width_reach")}
        # what `fits` asks, as a share of the activations (the cap a run at `needs` takes)
        out[name]["need_share"] = (s["needed_bytes"] - s["peak_allocated_bytes"]) / s["activation_bytes"]
        out[name]["command"] = " ".join(cmd)
    return out


def run_packed(tasks, budget_gib, max_procs):
    """Runs (gib, fn) tasks on threads, each fn one worker process at a time, the first waiting task that fits
    starting whenever the sum of the running ones' GiB allows it."""
    cv, running, threads = threading.Condition(), [0.0, 0], []
    waiting = [(min(g, budget_gib), fn) for g, fn in tasks]

    def start(g, fn):
        def body():
            try:
                fn()
            finally:
                with cv:
                    running[0] -= g
                    running[1] -= 1
                    cv.notify_all()
        running[0] += g
        running[1] += 1
        t = threading.Thread(target=body)
        t.start()
        threads.append(t)

    with cv:
        while waiting:
            pick = next((k for k, (g, _) in enumerate(waiting)
                         if running[0] + g <= budget_gib and running[1] < max_procs), None)
            if pick is None:
                cv.wait()
                continue
            start(*waiting.pop(pick))
    for t in threads:
        t.join()


def read_rows(path):
    return [json.loads(line) for line in open(path)] if os.path.exists(path) else []


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--predict", metavar="LORASIM", help="print the caps file (JSON) from this lorasim binary")
    ap.add_argument("--caps", help="the caps file --predict wrote")
    ap.add_argument("--plan", choices=["pressure", "validate"], default="pressure",
                    help="pressure: the capped grid of CELLS; validate: VALIDATE's recommended splits, one epoch each")
    ap.add_argument("--out-dir")
    ap.add_argument("--rows", default="pressure-rows.jsonl")
    ap.add_argument("--budget-s", type=float, default=520)
    ap.add_argument("--min-split-s", type=float, default=15)
    ap.add_argument("--gpu-budget-gib", type=float, default=132, help="the sum of the caps (and contexts) of processes at once")
    ap.add_argument("--max-procs", type=int, default=8)
    ap.add_argument("--shares", help="comma-separated activation shares to cap at (default: %s)" % ",".join(map(str, SHARES)))
    ap.add_argument("--cells", help="comma-separated substrings: only the cells whose name holds one (e.g. sft)")
    ap.add_argument("--smoke", action="store_true", help="a tiny model on the CPU: checks the script, measures nothing")
    args = ap.parse_args()
    shares = [float(x) for x in args.shares.split(",")] if args.shares else SHARES
    if args.predict:
        json.dump(predict(args.predict), sys.stdout, indent=1)
        print()
        return
    if not args.out_dir or not (args.caps or args.smoke or args.plan == "validate"):
        ap.error("--out-dir and --caps (or --smoke, or --plan validate) are required")
    args.smoke_oom = False
    os.makedirs(args.out_dir, exist_ok=True)
    rows = os.path.join(args.out_dir, args.rows)
    deadline = time.time() + args.budget_s
    if args.plan == "validate":
        tasks = []
        plan = VALIDATE[:2] if args.smoke else VALIDATE
        if args.cells:
            plan = [v for v in plan if any(k in v[0] for k in args.cells.split(","))]
        for name, model, dist, trainer, (b, a), cap in plan:
            j = lr.cell(SMOKE if args.smoke else model, dist, trainer, [(b, a)], allocator="default", cap_gib=None if args.smoke else cap,
                        n=32 if args.smoke else VALIDATE_SEQUENCES, epoch=True, warmup=1, order="worst_last")
            j = dict(j, split=[b, a], pressure_cell=name, role="held out")
            state = os.path.join(tempfile.mkdtemp(prefix="pressure-validate-"), name + ".state")
            tasks.append((cap + 0.6, lambda j=j, state=state, tag=name: lr.run_group(args, tag, [j], state, deadline,
                                                                                      rows, args.max_procs)))
        run_packed(tasks, args.gpu_budget_gib, args.max_procs)
        for r in read_rows(rows):
            print(f"  {r.get('pressure_cell')}: " + ("OOM at step %s" % r.get("oom_step") if r.get("oom") else
                  f"ok, {r.get('steps_run')} steps, peak {(r.get('peak_reserved_bytes') or 0) / lr.GIB:.2f} GiB reserved")
                  + (f" [error: {r['error']}]" if r.get("error") else ""), flush=True)
        return
    cells = SMOKE_CELLS if args.smoke else CELLS
    if args.cells:
        cells = [c for c in cells if any(k in c[0] for k in args.cells.split(","))]
    pred = {c[0]: {"peak_allocated_bytes": lr.GIB, "activation_bytes": lr.GIB} for c in cells} if args.smoke else json.load(open(args.caps))
    state_dir = tempfile.mkdtemp(prefix="pressure-runs-")
    print(f"pressure_runs: {len(cells)} cells, activation shares {shares}, budget {args.budget_s:.0f} s, "
          f"rows -> {rows}", flush=True)
    tasks = []
    for c in sorted(cells, key=lambda c: -pred[c[0]]["peak_allocated_bytes"]):  # the largest first
        p = pred[c[0]]
        caps = [(sh, (p["peak_allocated_bytes"] + sh * p["activation_bytes"]) / lr.GIB) for sh in shares]
        jobs = [job(c, None if args.smoke else round(cap, 3), sh, p["peak_allocated_bytes"]) for sh, cap in caps]
        state = os.path.join(state_dir, c[0] + ".state")
        tasks.append((max(cap for _, cap in caps) + 0.6,  # + the process's CUDA context, outside the cap
                      lambda jobs=jobs, state=state, tag=c[0]: lr.run_group(args, tag, jobs, state, deadline, rows,
                                                                            args.max_procs)))
    run_packed(tasks, args.gpu_budget_gib, args.max_procs)
    got = read_rows(rows)
    print(f"pressure_runs: done, {len(got)} rows in {rows}", flush=True)
    for r in got:
        print(f"  {r.get('pressure_cell')} share {r.get('cap_share')} cap {r.get('cap_gib')} GiB: "
              + ("OOM at step %s" % r.get("oom_step") if r.get("oom") else
                 f"ok, peak {(r.get('peak_reserved_bytes') or 0) / lr.GIB:.2f} GiB reserved"
                 f" / {(r.get('peak_allocated_bytes') or 0) / lr.GIB:.2f} allocated")
              + (f" [error: {r['error']}]" if r.get("error") else ""), flush=True)


if __name__ == "__main__":
    main()
