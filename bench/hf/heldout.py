#!/usr/bin/env python3
"""The held-out HF + PEFT grid: real Transformers + PEFT training on full-size models that no
calibration ran, for `lorasim validate --measurements` (bench/hf/README.md).

Each cell is a workload (model, length, checkpointing, dropout, autocast, loop) at one effective
batch B, run at every split b x a of B with a <= 8. Two loops:
  * probe  -- python/lorasim_hf/probe.py's step, which mirrors transformers' Trainer step
              (autocast, fp32 output copies, clipping, fused AdamW, scheduler) or, with
              loop=plain, the plain loop most scripts write: model(input_ids, labels=...),
              backward, optimizer step, zero_grad (under torch.autocast or not).
  * trainer -- a real transformers.Trainer (or TRL's SFTTrainer) timed by LorasimCallback.
The allocator is a property of the process: run once per --allocator. Cells are ordered so that
a cut at --budget-s leaves every architecture represented; rows are appended as they finish.

    python3 bench/hf/heldout.py --allocator expandable --budget-s 240 --out rows-expandable.jsonl
    python3 bench/hf/heldout.py --allocator default --budget-s 120 --out rows-default.jsonl
    python3 bench/hf/heldout.py --trainer --budget-s 120 --out rows-trainer.jsonl
"""
import argparse, json, os, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
CONFIG_OF = {  # the row's model (a preset, or a config.json path) -> the config the run builds
    "qwen3-1.7b": "configs/qwen3-1.7b.json",
    "qwen3-4b": "configs/qwen3-4b.json",
    "llama-3.2-3b": "configs/llama-3.2-3b.json",
    "mistral-7b": "configs/mistral-7b.json",
    "bench/hf/configs/qwen2.5-1.5b.json": "configs/qwen2.5-1.5b.json",
}
QWEN25 = "bench/hf/configs/qwen2.5-1.5b.json"

# (model, seq, B, ckpt, dropout, autocast, loop) per allocator; the first cells cover every
# architecture, lengths 256-4096, checkpointing, dropout and autocast.
CELLS = {
    "expandable": [
        ("qwen3-1.7b", 512, 8, False, 0.0, True, "trainer"),
        ("llama-3.2-3b", 1024, 8, False, 0.05, True, "trainer"),
        ("mistral-7b", 2048, 4, True, 0.0, True, "trainer"),
        (QWEN25, 4096, 4, True, 0.05, True, "trainer"),
        ("qwen3-1.7b", 512, 8, False, 0.0, False, "plain"),
        ("llama-3.2-3b", 4096, 8, False, 0.0, True, "trainer"),
        ("qwen3-4b", 256, 16, False, 0.0, True, "plain"),
        ("mistral-7b", 512, 8, False, 0.05, False, "plain"),
        (QWEN25, 1024, 8, False, 0.0, True, "trainer"),
        ("qwen3-4b", 4096, 4, True, 0.0, False, "plain"),
    ],
    "default": [
        ("qwen3-1.7b", 1024, 8, False, 0.05, True, "trainer"),
        ("llama-3.2-3b", 2048, 4, True, 0.0, True, "plain"),
        ("mistral-7b", 1024, 4, False, 0.0, False, "plain"),
        (QWEN25, 512, 8, False, 0.0, True, "trainer"),
        ("qwen3-4b", 2048, 8, False, 0.0, True, "trainer"),
    ],
}
# Not held-out cells: the same two workloads with checkpointing and autocast each on and off, to
# tell an architecture's device-time error from checkpointing's (--cell-list ckpt-autocast).
EXTRA_CELLS = {
    "ckpt-autocast": [(m, 2048, 4, ckpt, 0.0, ac, "trainer") for m in ("llama-3.2-3b", "qwen3-4b")
                      for ckpt in (True, False) for ac in (True, False)],
}
MAX_ACCUM = 8


def splits(B):
    return [(b, B // b) for b in range(1, B + 1) if B % b == 0 and B // b <= MAX_ACCUM]


def load_config(model):
    with open(os.path.join(HERE, CONFIG_OF[model])) as f:
        return json.load(f)


def run_probe_cells(args, out):
    from lorasim_hf.probe import Probe, set_allocator, load_plan, progress, label
    from lorasim_hf.rows import json_line
    set_allocator(args.allocator)
    device = "cpu" if args.smoke else "cuda"
    probe = Probe(device, args.allocator)
    torch = probe.torch
    t0 = time.perf_counter()
    cells = {**CELLS, **EXTRA_CELLS}[args.cell_list or args.allocator]
    if args.cells:
        cells = [cells[int(i)] for i in args.cells.split(",")]
    if args.smoke:
        CONFIG_OF["tiny"] = "configs/smoke.json"
        cells = [("tiny", 32, 4, True, 0.05, True, "trainer"), ("tiny", 16, 2, False, 0.0, False, "plain")]
    for cell in cells:
        model, seq, B, ckpt, dropout, autocast, loop = cell
        if time.perf_counter() - t0 > args.budget_s:
            print(f"heldout: budget reached, skipping {cell}", file=sys.stderr)
            continue
        runs = [dict(model=model, num_layers=None, hf_config=load_config(model), seq_len=seq, micro_batch=b,
                     accumulation=a, precision="fp32" if args.smoke else "bf16", steps=args.steps, warmup_steps=args.warmup, grad_ckpt=ckpt, lora_dropout=dropout,
                     autocast=autocast, loop=loop) for b, a in splits(B)]
        _, _, runs = load_plan({"device": device, "allocator": args.allocator, "runs": runs})
        try:
            m, vocab = probe.build(runs[0])
        except torch.OutOfMemoryError:
            print(f"heldout: cannot build {model}", file=sys.stderr)
            continue
        oom_at = None
        for r in runs:
            if oom_at is not None and r["micro_batch"] > oom_at:
                row = dict(probe.workload_row(r), oom=True)  # a larger micro-batch of an OOM split
            else:
                try:
                    row = probe.run(m, vocab, r)
                except torch.OutOfMemoryError:
                    row = dict(probe.workload_row(r), oom=True)
                    oom_at = r["micro_batch"]
                m.zero_grad(set_to_none=True)
                probe.free()
            out.write(json_line(row) + "\n")  # rows.py: the cells lorasim reads (padded_lengths as width:count)
            out.flush()
            print(f"heldout [{time.perf_counter() - t0:.0f} s] {label(r)} {loop}: {progress(row)}", file=sys.stderr,
                  flush=True)
        del m
        probe.free()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--allocator", choices=sorted(CELLS), default="expandable")
    ap.add_argument("--budget-s", type=float, default=240, help="start no cell after this many seconds")
    ap.add_argument("--steps", type=int, default=2, help="timed optimizer steps per split")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--out", required=True, help="JSON Lines file to append rows to")
    ap.add_argument("--cells", help="comma list of cell indices of the allocator's list (default: all, in order)")
    ap.add_argument("--cell-list", choices=sorted({**CELLS, **EXTRA_CELLS}),
                    help="the list --cells indexes (default: the allocator's own): the same cells in both allocators")
    ap.add_argument("--smoke", action="store_true", help="a tiny model on the CPU: checks the script, measures nothing")
    args = ap.parse_args()
    with open(args.out, "a") as out:
        run_probe_cells(args, out)


if __name__ == "__main__":
    main()
