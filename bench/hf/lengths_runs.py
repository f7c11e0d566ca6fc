#!/usr/bin/env python3
"""Issue 16's raw measurements: TRL `SFTTrainer` (its defaults) and a plain transformers `Trainer`
training on data of many lengths, one JSONL row per micro-batch x accumulation split.

Each split gets a fresh model (random weights, bf16, from bench/hf/configs/) and a fresh trainer;
the data are random token ids whose lengths come from a `length,count` histogram
(bench/hf/lengths/), N sequences in a seeded random order, read through the trainer's default
RandomSampler with seed 0 and padded to the longest sequence of each micro-batch. A callback
synchronizes at step boundaries and records every optimizer step's wall time, the padded length
(shape[1]) and real lengths of every micro-batch, and each step's peak memory.

Cells sharing an allocator and a cap run in one worker process (PYTORCH_CUDA_ALLOC_CONF and
`torch.cuda.set_per_process_memory_fraction` are per process); after an out-of-memory the worker
writes the row and exits, and the driver starts a fresh one for the splits left.

    python3 bench/hf/lengths_runs.py --plan grid --budget-s 520 --out-dir $OUT
    python3 bench/hf/lengths_runs.py --plan caps --parallel --budget-s 495 --out-dir $OUT
    python3 bench/hf/lengths_runs.py --plan pad --budget-s 520 --out-dir $OUT
    python3 bench/hf/lengths_runs.py --plan qlora --budget-s 520 --out-dir $OUT   # needs bitsandbytes
    python3 bench/hf/lengths_runs.py --plan archs --budget-s 520 --out-dir $OUT
    LENGTHS_RUNS_SEGMENT_TRACE=1 python3 bench/hf/lengths_runs.py --plan segtrace --budget-s 150 --out-dir $OUT
    python3 bench/hf/lengths_runs.py --plan archs2 --budget-s 260 --out-dir $OUT
    python3 bench/hf/lengths_runs.py --plan epochs --budget-s 400 --out-dir $OUT   # after lorasim calibrate
    python3 bench/hf/lengths_runs.py --plan epochs2 --budget-s 540 --min-split-s 35 --out-dir $OUT
    python3 bench/hf/lengths_runs.py --plan epochs3 --budget-s 540 --min-split-s 35 --out-dir $OUT   # and epochs4
    python3 bench/hf/lengths_runs.py --plan hostvar --budget-s 540 --min-split-s 35 --out-dir $OUT
    python3 bench/hf/lengths_runs.py --plan fp16 --budget-s 400 --out-dir $OUT
    python3 bench/hf/lengths_runs.py --plan hostarch --budget-s 400 --out-dir $OUT
    python3 bench/hf/lengths_runs.py --smoke --out-dir /tmp/lengths-smoke   # CPU, tiny model
"""
import argparse, csv, datetime, fcntl, gc, json, os, platform, random, subprocess, sys, tempfile, time

import alloc_history  # bench/hf: what the caching allocator's history says (a diagnostic)
import host_facts  # bench/hf: what the host did while a split trained (a diagnostic)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
GIB = 2 ** 30
OOM_EXIT = 3  # a worker's exit status after an out-of-memory: the driver starts a fresh process

QWEN3 = ("qwen3-1.7b", "bench/hf/configs/qwen3-1.7b.json")
QWEN25 = ("qwen2.5-1.5b", "bench/hf/configs/qwen2.5-1.5b.json")
LLAMA3_8B = ("llama-3.1-8b", "bench/hf/configs/llama-3.1-8b.json")
LLAMA32_3B = ("llama-3.2-3b", "bench/hf/configs/llama-3.2-3b.json")
GEMMA2 = ("gemma-2-2b", "bench/hf/configs/gemma-2-2b.json")
GEMMA3 = ("gemma-3-1b", "bench/hf/configs/gemma-3-1b.json")
PHI3 = ("phi-3-mini", "bench/hf/configs/phi-3-mini.json")
LLAMA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
PHI3_TARGETS = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]  # Phi-3 fuses q/k/v and gate/up
B16 = [(2, 8), (4, 4), (8, 2), (16, 1)]
EPOCH_SPLITS = [(16, 1), (8, 2), (4, 4), (2, 8), (1, 16)]  # the likeliest to run out of memory first


def cell(model, dist, trainer, splits, allocator="default", cap_gib=None, n=None, epoch=False, timed=8, warmup=2,
         quant=None, attn="sdpa", targets=None, order="random", fresh=False, env=None, cpus=None, precision="bf16"):
    """quant: None (bf16 base) or a bitsandbytes 4-bit type ("nf4", "fp4"), double quantization on, bf16 compute
    (the QLoRA recipe); attn: attn_implementation; targets: LoRA target_modules (default: the seven Llama
    projections); order: "random" (the trainer's own sampler) or "worst_last" (n sequences in a fixed order,
    the data's b longest together as the epoch's last micro-batch: the worst micro-batch after the allocator
    has held every shape before it; with epoch=True); fresh: each split in a worker process of its own, as a
    user's training script runs (its first step pays the process's set-up, which epoch_time_s counts once);
    env: variables set for its worker process (e.g. PYTHONHASHSEED); cpus: the CPUs its worker process
    may run on (sched_setaffinity before Python starts), both only with fresh=True; precision: "bf16" or
    "fp16" (a T4's: the base in fp16, `fp16=True`, so autocast to fp16 and the trainer's GradScaler)."""
    return dict(model=model[0], config=model[1], dist=dist, trainer=trainer, splits=splits, allocator=allocator,
                cap_gib=cap_gib, n=n, epoch=epoch, timed=timed, warmup=warmup, quant=quant, attn=attn,
                targets=targets or LLAMA_TARGETS, order=order, fresh=fresh, env=env or {}, cpus=cpus,
                precision=precision)


PLANS = {
    # call 1: both distributions, both models, both trainers; the most important cells first
    "grid": [
        cell(QWEN3, "longtail", "SFTTrainer", [(1, 16)] + B16),
        cell(QWEN3, "chat", "SFTTrainer", B16),
        cell(QWEN3, "longtail", "Trainer", B16),
        cell(QWEN3, "chat", "Trainer", B16),
        cell(QWEN3, "longtail", "SFTTrainer", B16, allocator="expandable"),
        cell(QWEN25, "longtail", "SFTTrainer", B16, timed=6),
        cell(QWEN25, "chat", "SFTTrainer", B16, timed=6),
        cell(QWEN25, "longtail", "Trainer", B16, timed=6),
        cell(QWEN25, "chat", "Trainer", B16, timed=6),
    ],
    # call 2: an allocator capped as on a 16 GB and a 24 GB GPU, one full epoch of 512 sequences
    "caps": [
        cell(QWEN3, "longtail", "SFTTrainer", EPOCH_SPLITS, cap_gib=15.0, n=512, epoch=True),
        cell(QWEN3, "longtail", "SFTTrainer", EPOCH_SPLITS, cap_gib=23.0, n=512, epoch=True),
        cell(QWEN3, "longtail", "Trainer", EPOCH_SPLITS, cap_gib=23.0, n=512, epoch=True),
    ],
    # call 3: the capped Trainer alone (where out-of-memory happens), then the second model
    "grid2": [
        cell(QWEN3, "longtail", "Trainer", EPOCH_SPLITS, cap_gib=23.0, n=512, epoch=True),
        cell(QWEN25, "longtail", "SFTTrainer", B16, timed=6),
        cell(QWEN25, "chat", "Trainer", B16, timed=6),
        cell(QWEN25, "chat", "SFTTrainer", B16, timed=6),
        cell(QWEN25, "longtail", "Trainer", B16, timed=6),
    ],
    # call 4: padded micro-batches against unpadded ones of the same widths (fixed-length controls),
    # both trainers; then the expandable allocator on the cells run1 measured under the default one
    "pad": [
        cell(QWEN3, "fixed1024", "SFTTrainer", [(2, 4), (8, 2), (16, 1)], timed=5),
        cell(QWEN3, "uniform1024", "SFTTrainer", [(2, 4), (8, 2), (16, 1)], timed=5),
        cell(QWEN3, "fixed512", "SFTTrainer", [(1, 8), (4, 2)], timed=5),
        cell(QWEN3, "fixed1024", "Trainer", [(2, 4), (8, 2)], timed=5),
        cell(QWEN3, "uniform1024", "Trainer", [(2, 4), (8, 2)], timed=5),
        cell(QWEN3, "longtail", "Trainer", [(2, 8), (8, 2), (16, 1)], allocator="expandable", timed=5),
        cell(QWEN3, "chat", "SFTTrainer", [(4, 4), (16, 1)], allocator="expandable", timed=5),
    ],
    # call 5: repeating shapes (is the cost per new shape?), then the second model's cells run2 did
    # not reach, both allocators
    "grid3": [
        cell(QWEN3, "steps1024", "SFTTrainer", [(1, 8), (4, 2)], timed=10),
        cell(QWEN3, "steps1024", "Trainer", [(1, 8)], timed=10),
        cell(QWEN25, "chat", "Trainer", B16, timed=5),
        cell(QWEN25, "chat", "SFTTrainer", B16, timed=5),
        cell(QWEN25, "longtail", "Trainer", B16, timed=5),
        cell(QWEN25, "longtail", "SFTTrainer", [(8, 2), (16, 1)], timed=5),
        cell(QWEN25, "longtail", "SFTTrainer", [(2, 8), (16, 1)], allocator="expandable", timed=5),
        cell(QWEN25, "chat", "Trainer", [(4, 4), (16, 1)], allocator="expandable", timed=5),
    ],
    # issue 16's epoch target: one full epoch per split, each in a fresh process (as `python train.py`),
    # uncapped and alone on the GPU, after `lorasim calibrate --stack hf-peft` on the same machine; both
    # trainers, both distributions, both models, both allocators
    "epochs": [
        cell(QWEN3, "longtail", "SFTTrainer", [(4, 4), (8, 2), (16, 1)], n=256, epoch=True, fresh=True),
        cell(QWEN25, "chat", "Trainer", [(2, 8), (4, 4)], n=256, epoch=True, fresh=True, allocator="expandable"),
        cell(QWEN25, "chat", "SFTTrainer", [(4, 4), (8, 2), (16, 1)], n=256, epoch=True, fresh=True),
        cell(QWEN3, "longtail", "Trainer", [(4, 4), (8, 2), (16, 1)], n=256, epoch=True, fresh=True),
        cell(QWEN3, "chat", "SFTTrainer", [(2, 8), (16, 1)], n=256, epoch=True, fresh=True, allocator="expandable"),
        cell(QWEN25, "longtail", "Trainer", [(4, 4), (16, 1)], n=256, epoch=True, fresh=True),
    ],
    # the epochs plan's cells a first call did not reach, then two splits again in fresh processes (how
    # much one process's epoch differs from another's: the floor of any epoch prediction)
    "epochs2": [
        cell(QWEN3, "longtail", "Trainer", [(4, 4), (8, 2), (16, 1)], n=256, epoch=True, fresh=True),
        cell(QWEN3, "chat", "SFTTrainer", [(4, 4), (16, 1)], n=256, epoch=True, fresh=True, allocator="expandable"),
        cell(QWEN25, "longtail", "Trainer", [(4, 4), (16, 1)], n=256, epoch=True, fresh=True),
        cell(QWEN25, "chat", "SFTTrainer", [(16, 1)], n=256, epoch=True, fresh=True),
        cell(QWEN3, "longtail", "SFTTrainer", [(4, 4), (4, 4)], n=256, epoch=True, fresh=True),
        cell(QWEN25, "chat", "Trainer", [(4, 4), (4, 4)], n=256, epoch=True, fresh=True, allocator="expandable"),
    ],
    # first_step_s and new_shape_s per trainer, fitted and scored on whole epochs in fresh processes: a
    # throwaway first process (the lease's cold start, apart), then qwen3-1.7b longtail under both trainers
    # (the FIT cells) alternating in time with cells of other data and the other model (held out)
    "epochs3": [
        cell(QWEN3, "longtail", "Trainer", [(16, 1)], n=32, epoch=True, fresh=True),
        cell(QWEN3, "longtail", "SFTTrainer", [(4, 4)], n=256, epoch=True, fresh=True),
        cell(QWEN25, "chat", "SFTTrainer", [(8, 2)], n=256, epoch=True, fresh=True),
        cell(QWEN3, "longtail", "Trainer", [(4, 4)], n=256, epoch=True, fresh=True),
        cell(QWEN25, "chat", "Trainer", [(4, 4)], n=256, epoch=True, fresh=True),
        cell(QWEN3, "longtail", "SFTTrainer", [(8, 2)], n=256, epoch=True, fresh=True),
        cell(QWEN3, "chat", "SFTTrainer", [(16, 1)], n=256, epoch=True, fresh=True),
        cell(QWEN3, "longtail", "Trainer", [(8, 2)], n=256, epoch=True, fresh=True),
        cell(QWEN3, "chat", "Trainer", [(8, 2)], n=256, epoch=True, fresh=True),
        cell(QWEN25, "chat", "SFTTrainer", [(4, 4)], n=256, epoch=True, fresh=True),
        cell(QWEN25, "chat", "Trainer", [(8, 2)], n=256, epoch=True, fresh=True),
        cell(QWEN25, "longtail", "SFTTrainer", [(4, 4)], n=256, epoch=True, fresh=True, allocator="expandable"),
    ],
    # the same FIT cells again in fresh processes (one split's epoch from process to process), then more
    # held-out cells: the other allocator, micro-batch 2 and 16
    "epochs4": [
        cell(QWEN3, "longtail", "Trainer", [(16, 1)], n=32, epoch=True, fresh=True),
        cell(QWEN3, "longtail", "SFTTrainer", [(4, 4)], n=256, epoch=True, fresh=True),
        cell(QWEN25, "longtail", "Trainer", [(2, 8)], n=256, epoch=True, fresh=True),
        cell(QWEN3, "longtail", "Trainer", [(4, 4)], n=256, epoch=True, fresh=True),
        cell(QWEN25, "longtail", "SFTTrainer", [(16, 1)], n=256, epoch=True, fresh=True),
        cell(QWEN3, "longtail", "SFTTrainer", [(8, 2)], n=256, epoch=True, fresh=True),
        cell(QWEN3, "chat", "Trainer", [(4, 4)], n=256, epoch=True, fresh=True, allocator="expandable"),
        cell(QWEN3, "longtail", "Trainer", [(8, 2)], n=256, epoch=True, fresh=True),
        cell(QWEN25, "chat", "SFTTrainer", [(16, 1)], n=256, epoch=True, fresh=True, allocator="expandable"),
        cell(QWEN3, "chat", "SFTTrainer", [(2, 8)], n=256, epoch=True, fresh=True),
        cell(QWEN25, "chat", "Trainer", [(16, 1)], n=256, epoch=True, fresh=True),
    ],
    # why one process's host-bound steps run slower than another's (epochs-run3/-run4: one split, one
    # machine, 0.94 and 1.47 s a step): that split in fresh processes after a throwaway first one, in
    # rounds of three -- as the trainer starts it, pinned to four CPUs, and with a fixed string-hash seed
    # (0 and 1 in turn) -- each row with the host's facts over its training (bench/hf/host_facts.py)
    "hostvar": [cell(QWEN3, "longtail", "Trainer", [(16, 1)], n=32, epoch=True, fresh=True)] + [
        c for r in range(4) for c in (
            cell(QWEN3, "longtail", "Trainer", [(4, 4)], n=256, epoch=True, fresh=True),
            cell(QWEN3, "longtail", "Trainer", [(4, 4)], n=256, epoch=True, fresh=True, cpus=[4, 5, 6, 7]),
            cell(QWEN3, "longtail", "Trainer", [(4, 4)], n=256, epoch=True, fresh=True,
                 env={"PYTHONHASHSEED": str(r % 2)}))],
    # fp16 as on a T4 (no bf16 there): an fp16 base, autocast to fp16 and the trainer's GradScaler, both
    # trainers, the bf16 twins of two splits in the same process, then one whole epoch under a T4-sized
    # cap (15 GiB) at the largest micro-batch
    "fp16": [
        cell(QWEN3, "longtail", "SFTTrainer", [(2, 8), (4, 4), (16, 1)], precision="fp16", timed=6),
        cell(QWEN3, "longtail", "SFTTrainer", [(4, 4), (16, 1)], timed=6),
        cell(QWEN3, "longtail", "Trainer", [(4, 4), (16, 1)], precision="fp16", timed=6),
        cell(QWEN3, "longtail", "Trainer", [(4, 4), (16, 1)], timed=6),
        cell(QWEN25, "chat", "SFTTrainer", [(4, 4), (16, 1)], precision="fp16", timed=6),
        cell(QWEN3, "longtail", "SFTTrainer", [(16, 1)], cap_gib=15.0, precision="fp16", n=256, epoch=True),
    ],
    # issue 18: a 4-bit base (QLoRA: NF4, double quantization, bf16 compute), fixed lengths, both trainers;
    # the plain Trainer as PEFT's QLoRA recipe has it (prepare_model_for_kbit_training, checkpointing)
    "qlora": [
        cell(QWEN3, "fixed1024", "Trainer", [(4, 4), (16, 1)], quant="nf4", timed=3, warmup=1),
        cell(LLAMA3_8B, "fixed1024", "Trainer", [(2, 4), (8, 1)], quant="nf4", timed=3, warmup=1),
        cell(QWEN3, "fixed1024", "SFTTrainer", [(4, 4), (16, 1)], quant="nf4", timed=3, warmup=1),
        cell(LLAMA3_8B, "fixed1024", "SFTTrainer", [(2, 4), (8, 1)], quant="nf4", timed=3, warmup=1),
        cell(QWEN3, "fixed512", "Trainer", [(4, 4), (16, 1)], quant="nf4", timed=3, warmup=1),
        cell(LLAMA3_8B, "fixed512", "Trainer", [(2, 4), (8, 1)], quant="nf4", timed=3, warmup=1),
        cell(QWEN3, "fixed512", "SFTTrainer", [(4, 4), (16, 1)], quant="nf4", timed=3, warmup=1),
        cell(LLAMA3_8B, "fixed512", "SFTTrainer", [(2, 4), (8, 1)], quant="nf4", timed=3, warmup=1),
        cell(LLAMA32_3B, "fixed1024", "Trainer", [(2, 4), (8, 1)], quant="nf4", timed=3, warmup=1),
        cell(LLAMA32_3B, "fixed1024", "SFTTrainer", [(2, 4), (8, 1)], quant="nf4", timed=3, warmup=1),
        cell(LLAMA32_3B, "fixed512", "SFTTrainer", [(2, 4), (8, 1)], quant="nf4", timed=3, warmup=1),
        cell(LLAMA32_3B, "fixed512", "Trainer", [(2, 4), (8, 1)], quant="nf4", timed=3, warmup=1),
    ],
    # issue 18: Gemma 2 (eager attention, as Transformers asks for its soft-capped attention), Gemma 3 and
    # Phi-3 shaped models, random weights, bf16 LoRA, both trainers
    "archs": [
        cell(GEMMA2, "fixed1024", "Trainer", [(2, 8), (8, 2), (16, 1)], attn="eager", timed=4),
        cell(PHI3, "fixed1024", "Trainer", [(2, 8), (8, 2), (16, 1)], targets=PHI3_TARGETS, timed=4),
        cell(GEMMA3, "fixed1024", "Trainer", [(2, 8), (8, 2), (16, 1)], timed=4),
        cell(GEMMA2, "longtail", "SFTTrainer", [(4, 4), (16, 1)], attn="eager", timed=4),
        cell(PHI3, "longtail", "SFTTrainer", [(4, 4), (16, 1)], targets=PHI3_TARGETS, timed=4),
        cell(GEMMA3, "longtail", "SFTTrainer", [(4, 4), (16, 1)], timed=4),
    ],
    # issue 18's host-bound step times against qwen3-1.7b's in the same process minutes apart (the host's
    # drift between leases apart): 2x8 at 1024 tokens, both trainers, two rounds in the same order
    "hostarch": [
        c for _ in range(2) for trainer in ("Trainer", "SFTTrainer") for c in (
            cell(QWEN3, "fixed1024", trainer, [(2, 8)], timed=4),
            cell(PHI3, "fixed1024", trainer, [(2, 8)], targets=PHI3_TARGETS, timed=4),
            cell(GEMMA3, "fixed1024", trainer, [(2, 8)], timed=4),
            cell(GEMMA2, "fixed1024", trainer, [(2, 8)], attn="eager", timed=4))],
    # issue 18's allocator slack: which allocations grew the reserved memory (LENGTHS_RUNS_SEGMENT_TRACE=1),
    # each split alone in its process; Phi-3's fused projections against qwen3's, and Gemma 2 (eager)
    "segtrace": [
        cell(PHI3, "fixed1024", "Trainer", [(8, 2)], targets=PHI3_TARGETS, timed=1, warmup=1, fresh=True),
        cell(QWEN3, "fixed1024", "Trainer", [(8, 2)], timed=1, warmup=1, fresh=True),
        cell(GEMMA2, "fixed1024", "Trainer", [(2, 8)], attn="eager", timed=1, warmup=1, fresh=True),
    ],
    # what is alive at SFTTrainer's allocated peak (checkpointing, TRL's fused head), fixed lengths
    "segtrace2": [
        cell(QWEN3, "fixed1024", "SFTTrainer", [(16, 1)], timed=1, warmup=1, fresh=True),
        cell(GEMMA3, "fixed1024", "SFTTrainer", [(16, 1)], timed=1, warmup=1, fresh=True),
        cell(QWEN3, "fixed1024", "Trainer", [(4, 4)], timed=1, warmup=1, fresh=True),
    ],
    # more Gemma 2, Gemma 3 and Phi-3 rows, at other lengths and micro-batches than archs' (held out)
    "archs2": [
        cell(PHI3, "fixed512", "Trainer", [(4, 4), (16, 1)], targets=PHI3_TARGETS, timed=3),
        cell(GEMMA3, "fixed512", "Trainer", [(4, 4), (16, 1)], timed=3),
        cell(GEMMA2, "fixed512", "Trainer", [(4, 4), (16, 1)], attn="eager", timed=3),
        cell(PHI3, "fixed1024", "Trainer", [(4, 4)], targets=PHI3_TARGETS, timed=3),
        cell(PHI3, "longtail", "SFTTrainer", [(8, 2)], targets=PHI3_TARGETS, timed=3),
        cell(GEMMA3, "longtail", "SFTTrainer", [(8, 2)], timed=3),
        cell(GEMMA2, "longtail", "SFTTrainer", [(8, 2)], attn="eager", timed=3),
    ],
    "smoke": [
        cell(("tiny", "bench/hf/configs/smoke.json"), "longtail", "SFTTrainer", [(2, 2), (4, 1)], n=64, timed=2,
             warmup=1),
        cell(("tiny", "bench/hf/configs/smoke.json"), "chat", "Trainer", [(2, 2), (4, 1)], n=64, timed=2, warmup=1,
             precision="fp16"),
        cell(("tiny", "bench/hf/configs/smoke.json"), "longtail", "SFTTrainer", [(4, 2), (2, 4)], n=32, epoch=True, fresh=True,
             allocator="expandable", cap_gib=1.0, env={"PYTHONHASHSEED": "0"}, cpus=[0]),
    ],
}
ALLOC_CONF = {"default": None, "expandable": "expandable_segments:True"}


def read_lengths(name):
    """The distribution's lengths, one per sequence of its histogram, in the file's order."""
    path = os.path.join(HERE, "lengths", name + ".csv")
    with open(path) as f:
        rows = list(csv.DictReader(f))
    return [int(r["length"]) for r in rows for _ in range(int(r["count"]))], os.path.relpath(path, REPO)


def dataset_lengths(dist, n, seed=0, worst_last_of=None):
    """N sequences' lengths in a seeded random order (all of the histogram when n is None). With
    worst_last_of=b, the data's b longest sequences close the order (the epoch's last micro-batch of b)
    and the n - b before them are the others' seeded order."""
    lengths, path = read_lengths(dist)
    random.Random(seed).shuffle(lengths)
    if worst_last_of:
        b = worst_last_of
        longest = sorted(range(len(lengths)), key=lambda i: lengths[i])[-b:]
        rest = [lengths[i] for i in range(len(lengths)) if i not in set(longest)]
        head = rest if n is None else rest[:n - b]
        return head + [lengths[i] for i in longest], path, max(lengths)
    return (lengths if n is None else lengths[:n]), path, max(lengths)


def groups_of(cells):
    """Consecutive cells with one allocator and cap share a worker process; a fresh cell's splits each
    have their own."""
    groups = []
    for c in cells:
        if c.get("fresh"):
            groups += [(None, [dict(c, splits=[s])]) for s in c["splits"]]
            continue
        key = (c["allocator"], c["cap_gib"])
        if groups and groups[-1][0] == key:
            groups[-1][1].append(c)
        else:
            groups.append((key, [c]))
    return [[dict(c, split=list(s)) for c in cs for s in c["splits"]] for _, cs in groups]


# ---------------------------------------------------------------- the driver


def drive(args):
    os.makedirs(args.out_dir, exist_ok=True)
    rows = os.path.join(args.out_dir, args.rows)
    deadline = time.time() + args.budget_s
    groups = groups_of(PLANS["smoke" if args.smoke else args.plan])
    state_dir = tempfile.mkdtemp(prefix="lengths-runs-")
    print(f"lengths_runs: plan {'smoke' if args.smoke else args.plan}, {len(groups)} worker group(s), "
          f"{sum(map(len, groups))} splits, budget {args.budget_s:.0f} s, rows -> {rows}", flush=True)
    procs = []
    for g, jobs in enumerate(groups):
        state = os.path.join(state_dir, f"group{g}.state")
        log = os.path.join(args.out_dir, f"worker{g}.log") if args.parallel else None
        if args.parallel:
            procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__), "--_group", str(g)]
                                          + sys.argv[1:] + ["--_state", state, "--_deadline", str(deadline),
                                                            "--_concurrent", str(len(groups))],
                                          stdout=open(log, "w"), stderr=subprocess.STDOUT))
        else:
            run_group(args, g, jobs, state, deadline, rows, 1)
    for p in procs:
        p.wait()
    print(f"lengths_runs: done, {sum(1 for _ in open(rows)) if os.path.exists(rows) else 0} rows in {rows}",
          flush=True)


def run_group(args, g, jobs, state, deadline, rows, concurrent):
    """Runs one group's jobs in worker processes, a fresh one after each out-of-memory or crash."""
    while True:
        started, done = read_state(state)
        for i in sorted(started - done):  # a worker died inside this job: say so in a row, go on
            append_row(rows, dict(job_row_head(jobs[i], concurrent), error="worker process died in this split",
                                  oom=None))
            mark(state, "done", i)
            done.add(i)
        left = [i for i in range(len(jobs)) if i not in started]
        if not left:
            return
        if time.time() > deadline - args.min_split_s:
            for i in left:
                print(f"lengths_runs: budget reached, skipping {job_name(jobs[i])}", flush=True)
            return
        env = dict(os.environ, PYTHONUNBUFFERED="1", TOKENIZERS_PARALLELISM="false", HF_HUB_OFFLINE="1",
                   HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        for v in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"):
            env.pop(v, None)
        conf = ALLOC_CONF[jobs[left[0]]["allocator"]]
        if conf:
            env["PYTORCH_CUDA_ALLOC_CONF"] = conf
        env["PYTHONPATH"] = os.pathsep.join(p for p in (env.get("PYTHONPATH"), os.path.join(REPO, "python")) if p)
        env.update(jobs[left[0]].get("env") or {})  # a fresh cell's own variables (its group is that cell)
        cpus = jobs[left[0]].get("cpus")
        spec = json.dumps({"jobs": {str(i): jobs[i] for i in left}, "state": state, "deadline": deadline,
                           "rows": rows, "concurrent": concurrent, "smoke": args.smoke,
                           "smoke_oom": args.smoke_oom, "min_split_s": args.min_split_s})
        rc = subprocess.run([sys.executable, os.path.abspath(__file__), "--_worker", spec], env=env,
                            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None).returncode
        if rc not in (0, OOM_EXIT):
            print(f"lengths_runs: worker of group {g} exited with {rc}", flush=True)
        if len(read_state(state)[0]) == len(started):  # it started nothing: another try would do the same
            print(f"lengths_runs: worker of group {g} started no split; giving up on the group", flush=True)
            return


def read_state(path):
    started, done = set(), set()
    if os.path.exists(path):
        for line in open(path):
            what, i = line.split()
            (started if what == "start" else done).add(int(i))
    return started, done


def mark(path, what, i):
    with open(path, "a") as f:
        f.write(f"{what} {i}\n")


def append_row(path, row):
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # parallel groups append to one file
        f.write(json.dumps(row, sort_keys=False) + "\n")
        f.flush()
        fcntl.flock(f, fcntl.LOCK_UN)


def job_name(j):
    cap = f" cap {j['cap_gib']} GiB" if j["cap_gib"] else ""
    extra = "".join(f" {v}" for v in (j.get("quant"), j.get("attn") if j.get("attn", "sdpa") != "sdpa" else None) if v)
    return f"{j['trainer']} {j['model']}{extra} {j['dist']} {j['allocator']}{cap} {j['split'][0]}x{j['split'][1]}"


def job_row_head(j, concurrent):
    b, a = j["split"]
    return {"model": j["model"], "config": j["config"], "distribution": j["dist"], "trainer": j["trainer"],
            "allocator": j["allocator"], "micro_batch": b, "accumulation": a, "effective_batch": b * a,
            "cap_gib": j["cap_gib"], "concurrent_processes": concurrent,
            **{k: j[k] for k in ("pressure_cell", "role", "cap_share", "predicted_allocated_bytes") if k in j}}


# ---------------------------------------------------------------- the worker


def worker(spec):
    import torch
    smoke = spec["smoke"]
    cuda = not smoke
    jobs = {int(k): v for k, v in spec["jobs"].items()}
    total = torch.cuda.get_device_properties(0).total_memory if cuda else None
    ctx = Context(torch, smoke)
    for i in sorted(jobs):
        j = jobs[i]
        if time.time() > spec["deadline"] - spec["min_split_s"]:
            print(f"lengths_runs: budget reached, skipping {job_name(j)}", flush=True)
            continue
        cap = int(j["cap_gib"] * GIB) if j["cap_gib"] else None
        if cuda:  # before the split's model is built; a job without a cap may use the whole GPU
            torch.cuda.set_per_process_memory_fraction(min(1.0, cap / total) if cap else 1.0, 0)
        mark(spec["state"], "start", i)
        trace = cuda and os.environ.get("LENGTHS_RUNS_SEGMENT_TRACE") == "1"
        if trace:  # a diagnostic: what made the allocator reserve each segment (slows the steps)
            torch.cuda.memory._record_memory_history(max_entries=1_000_000, stacks="python")
        row = run_split(ctx, j, spec, cap)
        if trace:
            try:
                row["segment_trace"] = alloc_history.segment_summary(torch.cuda.memory._snapshot())
            except Exception as e:  # a diagnostic must not cost the row
                row["segment_trace"] = {"error": repr(e)}
            torch.cuda.memory._record_memory_history(enabled=None)
        append_row(spec["rows"], row)
        mark(spec["state"], "done", i)
        steps = row.get("steps") or []
        timed = [s["time_s"] for s in steps[row["warmup_steps"]:]]
        print(f"lengths_runs [{time.strftime('%H:%M:%S')}] {job_name(j)}: "
              + ("OUT OF MEMORY at step %s" % row["oom_step"] if row["oom"] else
                 f"{len(steps)} steps, {sum(timed) / max(1, len(timed)):.3f} s/step timed, "
                 f"padded {row['mean_padded_len']:.0f} (real {row['mean_real_len']:.0f}), "
                 f"peak {row['peak_reserved_bytes'] / GIB:.2f} GiB reserved / "
                 f"{row['peak_allocated_bytes'] / GIB:.2f} allocated")
              + (f" [error: {row['error']}]" if row.get("error") else "")
              + (" [budget stop]" if row.get("budget_stopped") else "")
              + f" ({row['split_wall_s']:.0f} s)", flush=True)
        if row["oom"]:
            sys.exit(OOM_EXIT)  # a fresh process for what is left: no memory of the failed run


class Context:
    """What a worker builds once and reuses: versions, tokenizers and data sets per (dist, n, vocab)."""

    def __init__(self, torch, smoke):
        import transformers, peft, accelerate
        self.torch, self.transformers, self.peft, self.smoke = torch, transformers, peft, smoke
        self.versions = {"python": platform.python_version(), "torch": torch.__version__,
                         "transformers": transformers.__version__, "peft": peft.__version__,
                         "accelerate": accelerate.__version__}
        for name in ("trl", "datasets"):
            try:
                self.versions[name] = __import__(name).__version__
            except ImportError:
                pass
        self.gpu = torch.cuda.get_device_name(0) if not smoke else "cpu"
        self.cuda_runtime = torch.version.cuda
        self._tok, self._data = {}, {}

    def tokenizer(self, vocab):
        if vocab not in self._tok:
            from tokenizers import Tokenizer, models
            tok = Tokenizer(models.WordLevel({f"t{i}": i for i in range(vocab)}, unk_token="t0"))
            self._tok[vocab] = self.transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="t0",
                                                                         eos_token="t1")
        return self._tok[vocab]

    def data(self, dist, n, vocab, worst_last_of=None):
        """(lengths, token ids per sequence as one flat tensor and offsets, file, max length), seeded."""
        key = (dist, n, vocab, worst_last_of)
        if key not in self._data:
            lengths, path, max_len = dataset_lengths(dist, n, worst_last_of=worst_last_of)
            g = self.torch.Generator().manual_seed(1)
            flat = self.torch.randint(2, vocab, (sum(lengths),), generator=g)  # 0 pads, 1 is eos
            offsets = [0]
            for n_tok in lengths:
                offsets.append(offsets[-1] + n_tok)
            self._data[key] = (lengths, flat, offsets, path, max_len)
        return self._data[key]

    def hf_dataset(self, dist, n, vocab, worst_last_of=None):
        key = ("hf", dist, n, vocab, worst_last_of)
        if key not in self._data:
            import datasets
            lengths, flat, offsets, _, _ = self.data(dist, n, vocab, worst_last_of)
            ids = [flat[offsets[i]:offsets[i + 1]].tolist() for i in range(len(lengths))]
            self._data[key] = datasets.Dataset.from_dict({"input_ids": ids})
        return self._data[key]


def token_dataset(torch, flat, offsets):
    class Sequences(torch.utils.data.Dataset):
        def __len__(self):
            return len(offsets) - 1

        def __getitem__(self, i):
            return {"input_ids": flat[offsets[i]:offsets[i + 1]]}

    return Sequences()


def pad_to_longest(torch, max_length):
    """A plain Trainer's collator: truncation at max_length, right padding to the micro-batch's longest,
    labels -100 on padding."""
    def collate(features):
        ids = [f["input_ids"][:max_length] for f in features]
        width = max(len(x) for x in ids)
        input_ids = torch.zeros((len(ids), width), dtype=torch.long)
        mask = torch.zeros((len(ids), width), dtype=torch.long)
        for r, x in enumerate(ids):
            input_ids[r, :len(x)] = x
            mask[r, :len(x)] = 1
        labels = input_ids.masked_fill(mask == 0, -100)
        return {"input_ids": input_ids, "attention_mask": mask, "labels": labels}
    return collate


def make_recorder(torch, transformers, cuda, deadline, smoke_oom):
    class Recorder(transformers.TrainerCallback):
        """Step times (synchronized), each forward's padded length, each step's peak memory."""

        def __init__(self):
            self.steps, self.fwd, self.batches = [], [], []
            self.gap_peaks, self.hook, self.t0, self.f0, self.budget_stopped = (0, 0), None, None, 0, False

        def sync(self):
            if cuda:
                torch.cuda.synchronize()

        def peaks(self):
            return (torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()) if cuda else (0, 0)

        def seen(self, module, args, kwargs):
            if module.training:
                ids = kwargs.get("input_ids", args[0] if args else None)
                self.fwd.append(int(ids.shape[1]))
                if smoke_oom and len(self.steps) == 1:
                    raise torch.OutOfMemoryError("smoke: a simulated out-of-memory in step 2")

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            self.hook = model.register_forward_pre_hook(self.seen, with_kwargs=True)
            self.sync()
            self.t_prev = time.perf_counter()

        def on_step_begin(self, args, state, control, **kwargs):
            self.sync()
            p = self.peaks()
            self.gap_peaks = (max(self.gap_peaks[0], p[0]), max(self.gap_peaks[1], p[1]))
            if cuda:
                torch.cuda.reset_peak_memory_stats()
            self.f0 = len(self.fwd)
            self.cpu0 = time.process_time()
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.sync()
            t = time.perf_counter()
            p = self.peaks()
            self.steps.append({"step": len(self.steps) + 1, "time_s": t - self.t0, "interval_s": t - self.t_prev,
                               "process_cpu_s": time.process_time() - self.cpu0,
                               "forwards": [self.f0, len(self.fwd)],
                               "peak_allocated_bytes": p[0], "peak_reserved_bytes": p[1]})
            self.t_prev = t
            if time.time() > deadline:
                control.should_training_stop = True
                self.budget_stopped = True

        def remove(self):
            if self.hook is not None:
                self.hook.remove()
                self.hook = None

    return Recorder()


def run_split(ctx, j, spec, cap):
    torch, transformers, peft = ctx.torch, ctx.transformers, ctx.peft
    smoke, cuda = ctx.smoke, not ctx.smoke
    b, a = j["split"]
    t_split = time.monotonic()
    row = job_row_head(j, spec["concurrent"])
    with open(os.path.join(REPO, j["config"])) as f:
        d = json.load(f)
    model_type = d.pop("model_type")
    vocab = d["vocab_size"]
    worst_last = b if j.get("order") == "worst_last" else None
    lengths, flat, offsets, lengths_file, max_length = ctx.data(j["dist"], j["n"], vocab, worst_last)
    if smoke:
        max_length = min(max_length, 256)
    steps_planned = (len(lengths) + b * a - 1) // (b * a) if j["epoch"] else j["warmup"] + j["timed"]
    row.update(lengths_file=lengths_file, n_sequences=len(lengths), data_order_seed=0, token_seed=1,
               order=j.get("order", "random"),
               sampler_seed=0, max_length=max_length, padding="longest", packing=False,
               data_mean_len=sum(lengths) / len(lengths), full_epoch=j["epoch"], steps_planned=steps_planned,
               warmup_steps=j["warmup"], alloc_conf=os.environ.get("PYTORCH_CUDA_ALLOC_CONF"), cap_bytes=cap,
               gpu=ctx.gpu, cuda_runtime=ctx.cuda_runtime, versions=ctx.versions, host=platform.node(),
               pid=os.getpid(), started_utc=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"))
    if cuda:
        gc.collect()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        row.update(allocated_before_build_bytes=torch.cuda.memory_allocated(),
                   reserved_before_build_bytes=torch.cuda.memory_reserved())
    model = trainer = rec = None
    workdir = tempfile.mkdtemp(prefix="lengths-split-")
    try:
        t = time.monotonic()
        cfg = transformers.AutoConfig.for_model(model_type, **d)
        attn = j.get("attn", "sdpa")
        fp16 = j.get("precision", "bf16") == "fp16"
        half = torch.float16 if fp16 else torch.bfloat16
        precision = {} if smoke else ({"fp16": True, "bf16": False} if fp16 else {"bf16": True})
        if j.get("quant"):
            model = quantized_model(torch, transformers, cfg, j, attn)
        else:
            with torch.device("cpu" if smoke else "cuda"):
                model = transformers.AutoModelForCausalLM.from_config(
                    cfg, dtype=torch.float32 if smoke else half, attn_implementation=attn)
        lora = peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM",
                               target_modules=j.get("targets") or LLAMA_TARGETS)
        row.update(quant=j.get("quant"), precision=j.get("precision", "bf16"), attn_impl=attn,
                   lora_targets=lora.target_modules and sorted(lora.target_modules))
        row["build_s"] = time.monotonic() - t
        t = time.monotonic()
        steps_arg = {"num_train_epochs": 1} if j["epoch"] else {"max_steps": steps_planned}
        common = dict(output_dir=workdir, per_device_train_batch_size=b, gradient_accumulation_steps=a, seed=0,
                      **steps_arg)
        if smoke:
            common.update(use_cpu=True, bf16=False)
        elif fp16:  # SFTConfig turns bf16 on by default; a T4 has no bf16
            common.update(precision)
        rec = make_recorder(torch, transformers, cuda, spec["deadline"], spec["smoke_oom"])
        if j["trainer"] == "SFTTrainer":
            import trl
            # TRL's defaults (gradient checkpointing, bf16, no packing, padding to the longest); only what
            # running offline needs: pre-tokenized rows, an in-memory tokenizer, and the data's max_length
            targs = trl.SFTConfig(**common, max_length=max_length)
            trainer = trl.SFTTrainer(model=model, args=targs, train_dataset=ctx.hf_dataset(j["dist"], j["n"], vocab, worst_last),
                                     processing_class=ctx.tokenizer(vocab), peft_config=lora, callbacks=[rec])
        else:
            ckpt = {}
            if j.get("quant"):  # PEFT's QLoRA recipe: fp32 casts of what is not quantized, checkpointing
                model = peft.prepare_model_for_kbit_training(model)
                ckpt = {"gradient_checkpointing": True}
            model = peft.get_peft_model(model, lora)
            targs = transformers.TrainingArguments(**common, **({} if smoke or fp16 else precision), **ckpt,
                                                   remove_unused_columns=False)
            trainer = transformers.Trainer(model=model, args=targs, train_dataset=token_dataset(torch, flat, offsets),
                                           data_collator=pad_to_longest(torch, max_length), callbacks=[rec])
        if worst_last:  # the data's own order: the worst micro-batch comes last
            sequential = torch.utils.data.SequentialSampler(trainer.train_dataset)
            trainer._get_train_sampler = lambda *args, **kwargs: sequential
        collate = trainer.data_collator

        def recording_collator(features):
            out = collate(features)
            mask = out.get("attention_mask")
            real = mask.sum(1).tolist() if mask is not None else [len(f["input_ids"]) for f in features]
            rec.batches.append((int(out["input_ids"].shape[1]), [int(x) for x in real]))
            return out

        trainer.data_collator = recording_collator
        row["trainer_init_s"] = time.monotonic() - t
        row.update(dtypes=parameter_dtypes(trainer.model), optim=str(getattr(targs.optim, "value", targs.optim)))
        row.update(grad_ckpt=bool(targs.gradient_checkpointing), bf16=bool(targs.bf16), fp16=bool(targs.fp16),
                   learning_rate=targs.learning_rate, lora=lora_info(trainer.model))
        if cuda:
            row.update(model_allocated_bytes=torch.cuda.memory_allocated(),
                       mem_get_info_before=list(torch.cuda.mem_get_info()))
            torch.cuda.reset_peak_memory_stats()
        t = time.monotonic()
        host0 = host_facts.snapshot()
        try:
            trainer.train()
            row["oom"] = False
        except torch.OutOfMemoryError as e:
            row.update(oom=True, oom_step=len(rec.steps) + 1, oom_forwards_in_step=len(rec.fwd) - rec.f0,
                       oom_padded_len=rec.fwd[-1] if rec.fwd else None, oom_message=str(e).split("\n")[0][:300])
            del e
        row["train_wall_s"] = time.monotonic() - t
        row["host_facts"] = dict(host_facts.between(host0, host_facts.snapshot()),
                                 pythonhashseed=os.environ.get("PYTHONHASHSEED"), torch_threads=torch.get_num_threads())
    except Exception as e:  # anything else: the row says what, the next split runs
        row.update(oom=row.get("oom", False), error=f"{type(e).__name__}: {e}"[:500])
    if rec is not None:
        rec.remove()
        fill_measurements(row, rec, cuda, torch)
    if cuda:
        row["mem_get_info_after"] = list(torch.cuda.mem_get_info())
        stats = torch.cuda.memory_stats()
        row.update(num_alloc_retries=stats.get("num_alloc_retries"), num_ooms=stats.get("num_ooms"))
    if trainer is not None:
        trainer.accelerator.free_memory()
    del trainer, model, rec
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    row["split_wall_s"] = time.monotonic() - t_split
    return row


def quantized_model(torch, transformers, cfg, j, attn):
    """A bitsandbytes 4-bit base from random weights: the bf16 model is built and saved once per config
    (under $TMPDIR), then loaded through BitsAndBytesConfig as a user loads a checkpoint."""
    saved = os.path.join(tempfile.gettempdir(), "lorasim-qlora-models", j["model"])
    if not os.path.exists(os.path.join(saved, "config.json")):
        transformers.set_seed(0)
        with torch.device("cuda"):
            m = transformers.AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        m.save_pretrained(saved + ".tmp")
        os.replace(saved + ".tmp", saved)
        del m
        gc.collect()
        torch.cuda.empty_cache()
    bnb = transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=j["quant"],
                                          bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)
    return transformers.AutoModelForCausalLM.from_pretrained(saved, quantization_config=bnb, device_map={"": 0},
                                                             dtype=torch.bfloat16, attn_implementation=attn)


def parameter_dtypes(model):
    """Bytes of parameters per (dtype, trainable), and the LM head's and embeddings' dtypes: whether
    prepare_model_for_kbit_training cast them to fp32."""
    by = {}
    for n, p in model.named_parameters():
        k = f"{str(p.dtype).replace('torch.', '')}{'+grad' if p.requires_grad else ''}"
        by[k] = by.get(k, 0) + p.numel() * p.element_size()
    out = {"parameter_bytes": by}
    try:
        out["lm_head"] = str(model.get_output_embeddings().weight.dtype).replace("torch.", "")
        out["embed_tokens"] = str(model.get_input_embeddings().weight.dtype).replace("torch.", "")
    except Exception as e:
        out["error"] = str(e)[:200]
    return out


def lora_info(model):
    try:
        from lorasim_hf.model_columns import lora_columns, fused_lm_head
        return dict(lora_columns(model), fused_lm_head=fused_lm_head(model))
    except Exception as e:  # the row still has what was measured
        return {"error": str(e)}


def fill_measurements(row, rec, cuda, torch):
    """Per step: wall time, micro-batches' padded and real lengths, peaks; then the row's summaries."""
    batches, fwd = rec.batches, rec.fwd
    mismatches = sum(1 for k, w in enumerate(fwd) if k >= len(batches) or batches[k][0] != w)
    for s in rec.steps:
        f0, f1 = s.pop("forwards")
        s["padded"] = [batches[k][0] for k in range(f0, min(f1, len(batches)))]
        s["real_tokens"] = [sum(batches[k][1]) for k in range(f0, min(f1, len(batches)))]
        s["lengths"] = [batches[k][1] for k in range(f0, min(f1, len(batches)))]
    n_seen = len(fwd)
    seen = batches[:n_seen]
    timed = rec.steps[row["warmup_steps"]:]
    now = (torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()) if cuda else (0, 0)
    peaks_a = [s["peak_allocated_bytes"] for s in rec.steps] + [rec.gap_peaks[0], now[0]]
    peaks_r = [s["peak_reserved_bytes"] for s in rec.steps] + [rec.gap_peaks[1], now[1]]
    padded_tokens = sum(w * len(r) for w, r in seen)
    real_tokens = sum(sum(r) for _, r in seen)
    row.update(
        steps_run=len(rec.steps), micro_batches_seen=n_seen, collator_hook_mismatches=mismatches,
        budget_stopped=rec.budget_stopped,
        mean_padded_len=sum(w for w, _ in seen) / n_seen if n_seen else None,
        mean_real_len=real_tokens / sum(len(r) for _, r in seen) if n_seen else None,
        padding_fraction=1 - real_tokens / padded_tokens if padded_tokens else None,
        max_padded_len=max((w for w, _ in seen), default=None),
        timed_steps=len(timed),
        mean_step_time_s=sum(s["time_s"] for s in timed) / len(timed) if timed else None,
        mean_step_interval_s=sum(s["interval_s"] for s in timed) / len(timed) if timed else None,
        total_step_interval_s=sum(s["interval_s"] for s in rec.steps),
        mean_padded_len_timed=(sum(sum(s["padded"]) for s in timed) / sum(len(s["padded"]) for s in timed)
                               if timed else None),
        peak_allocated_bytes=max(peaks_a), peak_reserved_bytes=max(peaks_r),
        peak_allocated_timed_bytes=max((s["peak_allocated_bytes"] for s in timed), default=None),
        peak_reserved_timed_bytes=max((s["peak_reserved_bytes"] for s in timed), default=None),
        steps=rec.steps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--plan", choices=[p for p in PLANS if p != "smoke"], default="grid")
    ap.add_argument("--out-dir", help="where the rows (and --parallel's worker logs) go; required")
    ap.add_argument("--rows", default="rows.jsonl", help="file name of the rows under --out-dir")
    ap.add_argument("--budget-s", type=float, default=530, help="no split starts, and training stops, after this")
    ap.add_argument("--min-split-s", type=float, default=25, help="no split starts with less than this left")
    ap.add_argument("--parallel", action="store_true",
                    help="run the plan's worker groups at once (memory is per process; step times then are not clean)")
    ap.add_argument("--smoke", action="store_true", help="a tiny model on the CPU: checks the script, measures nothing")
    ap.add_argument("--smoke-oom", action="store_true", help=argparse.SUPPRESS)  # tests the out-of-memory path
    ap.add_argument("--_worker", help=argparse.SUPPRESS)
    ap.add_argument("--_group", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--_state", help=argparse.SUPPRESS)
    ap.add_argument("--_deadline", type=float, help=argparse.SUPPRESS)
    ap.add_argument("--_concurrent", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args._worker:
        worker(json.loads(args._worker))
    elif args._group is not None:  # one group of a --parallel run, in its own process
        groups = groups_of(PLANS["smoke" if args.smoke else args.plan])
        run_group(args, args._group, groups[args._group], args._state, args._deadline,
                  os.path.join(args.out_dir, args.rows), args._concurrent)
    elif not args.out_dir:
        ap.error("--out-dir is required")
    else:
        drive(args)


if __name__ == "__main__":
    main()
