#!/usr/bin/env python3
"""Data-parallel Trainer runs for issue 19 (docs/data-parallel.md): every split of an effective
batch on N GPUs of one host, each split one `torchrun --standalone --nproc_per_node N` launch of a
transformers `Trainer` (DDP over NCCL; Gloo on the CPU) with `LorasimCallback` appending its row
(rank 0 writes; `processes` = N, micro_batch and accumulation per process). First, the interconnect
is calibrated both ways (docs/data-parallel.md), so one GPU call gives both: the runner's c10d
(`lorasim calibrate --interconnect --processes N`, NCCL) and the hf-peft stack's torch.distributed
(`torchrun -m lorasim_hf.probe_allreduce`, fitted by `lorasim calibrate --interconnect
--measurements`); rows and profiles land beside --out (OUT-allreduce-*.csv, OUT-interconnect-*.toml).
Then:

    lorasim validate --measurements ddp-rows.jsonl --profile ddp-rows-interconnect-hf.toml

Offline: models from config.json with random bf16 weights, random tokens.

    python3 bench/hf/ddp_runs.py --gpus 2 --out ddp-rows.jsonl            # both cells, every split
    python3 bench/hf/ddp_runs.py --gpus 2 --out smoke.jsonl --smoke       # a tiny model on 2 CPU processes
"""
import argparse, json, os, shutil, subprocess, sys, tempfile, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)
os.environ.setdefault("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True")

# (preset, config, seq_len, effective batch over all GPUs, grad_ckpt): on 2 H200s the first is
# host-bound at every split and the second device-bound (`lorasim simulate --gpu h200 --gpus 2`
# says which; its 4x2 and 8x1 are predicted not to fit, which their runs check).
CELLS = [
    ("qwen3-1.7b", "configs/qwen3-1.7b.json", 512, 16, False),
    ("qwen3-4b", "configs/qwen3-4b.json", 4096, 16, False),
]


def worker(args):
    """One rank of one split."""
    import torch, transformers, peft
    from lorasim_hf.callback import LorasimCallback
    from random_tokens import random_tokens
    local = int(os.environ.get("LOCAL_RANK", "0"))
    cuda = not args.smoke
    if cuda:
        torch.cuda.set_device(local)
    with open(os.path.join(HERE, args.config)) as f:
        d = json.load(f)
    cfg = transformers.AutoConfig.for_model(d.pop("model_type"), **d)
    with torch.device(f"cuda:{local}" if cuda else "cpu"):
        model = transformers.AutoModelForCausalLM.from_config(
            cfg, dtype=torch.bfloat16 if cuda else torch.float32, attn_implementation="sdpa")
    model = peft.get_peft_model(model, peft.LoraConfig(
        r=16, lora_alpha=32, lora_dropout=0.0, task_type="CAUSAL_LM",
        target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    b, a = args.micro_batch, args.accumulation
    with tempfile.TemporaryDirectory() as workdir:
        targs = transformers.TrainingArguments(
            output_dir=workdir, per_device_train_batch_size=b, gradient_accumulation_steps=a, max_steps=args.steps,
            learning_rate=1e-4, bf16=cuda, use_cpu=not cuda, gradient_checkpointing=args.grad_ckpt,
            gradient_checkpointing_kwargs={"use_reentrant": False} if args.grad_ckpt else None,
            ddp_find_unused_parameters=False, ddp_backend="nccl" if cuda else "gloo",
            logging_strategy="no", eval_strategy="no", save_strategy="no", report_to="none",
            dataloader_num_workers=0, disable_tqdm=True, seed=0, remove_unused_columns=False)
        # The smoke model is no preset: its config is stored beside the rows.
        cb = LorasimCallback(args.out, warmup_steps=args.warmup, model_name=None if args.smoke else args.model)
        transformers.Trainer(model=model, args=targs,
                             train_dataset=random_tokens(torch, b * a * args.steps * world, args.seq_len, cfg.vocab_size),
                             data_collator=transformers.default_data_collator, callbacks=[cb]).train()
        if cb.row:
            print(f"ddp_runs: rank 0 of {world}: {b}x{a}x{world} {cb.row['step_time_s']:.4f} s/step", flush=True)


def lorasim_binary(given):
    """--lorasim, $LORASIM, or the build tree's; None when none is there."""
    for path in (given, os.environ.get("LORASIM"), os.path.join(HERE, "..", "..", "build", "cli", "lorasim")):
        if path and os.access(path, os.X_OK):
            return os.path.abspath(path)
    return None


def calibrate_interconnect(args, launcher):
    """All-reduces timed by the runner's c10d and by torch.distributed, each fitted into a profile."""
    stem = os.path.splitext(args.out)[0]
    exe = lorasim_binary(args.lorasim)
    device = "cpu" if args.smoke else "cuda"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(HERE, "..", "..", "python"),
                                                       os.environ.get("PYTHONPATH", "")]))
    hf_rows = f"{stem}-allreduce-hf.csv"
    rc = subprocess.run([launcher, "--standalone", "--nproc_per_node", str(args.gpus), "-m", "lorasim_hf.probe_allreduce",
                         "--device", device, "--out", hf_rows], env=env).returncode
    print(f"ddp_runs: torch.distributed all-reduce rows {'written to ' + hf_rows if rc == 0 else f'failed (exit {rc})'}",
          flush=True)
    if exe is None:
        print("ddp_runs: no lorasim binary (--lorasim, $LORASIM or build/cli/lorasim): the runner's c10d timing "
              "and the fits are skipped", flush=True)
        return
    # The runner's rows go into the GPU's profile (CPU rows, in --smoke, into the CPU's own).
    base = ["--device", "cpu"] if args.smoke else ["--device", "cuda", "--profile", os.path.join(HERE, "..", "..", "hwprofiles", "h200.toml")]
    runner_toml = f"{stem}-interconnect-lorasim.toml"
    cmd = [exe, "calibrate", "--interconnect", "--processes", str(args.gpus), *base, "--out", runner_toml,
           "--save-measurements", f"{stem}-allreduce-lorasim.csv"]
    rc = subprocess.run(cmd).returncode
    print(f"ddp_runs: c10d all-reduce rows of the runner: {'ok' if rc == 0 else f'failed (exit {rc})'}", flush=True)
    if os.path.exists(hf_rows):
        profile = runner_toml if args.smoke else os.path.join(HERE, "..", "..", "hwprofiles", "h200.toml")
        subprocess.run([exe, "calibrate", "--interconnect", "--measurements", hf_rows, "--profile", profile,
                        "--out", f"{stem}-interconnect-hf.toml"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=8, help="optimizer steps per split, warm-up included")
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--smoke", action="store_true", help="a tiny model on CPU processes (Gloo): checks the script")
    ap.add_argument("--lorasim", help="the lorasim binary for the interconnect calibration (default: $LORASIM, build/cli/lorasim)")
    ap.add_argument("--no-interconnect", action="store_true", help="skip the interconnect calibration")
    # The worker's own arguments (one split), set by the launcher below.
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    for k, t in (("model", str), ("config", str), ("seq-len", int), ("micro-batch", int), ("accumulation", int)):
        ap.add_argument("--" + k, type=t, help=argparse.SUPPRESS)
    ap.add_argument("--grad-ckpt", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)
    launcher = os.path.join(os.path.dirname(sys.executable), "torchrun")
    launcher = launcher if os.access(launcher, os.X_OK) else shutil.which("torchrun")
    if launcher is None:
        sys.exit("ddp_runs: no torchrun next to this Python (it comes with torch)")
    cells = [("tiny", "configs/smoke.json", 32, 4 * args.gpus, False)] if args.smoke else CELLS
    start = time.monotonic()
    if not args.no_interconnect:
        calibrate_interconnect(args, launcher)
    for name, cfg, seq, batch, ckpt in cells:
        if batch % args.gpus:
            sys.exit(f"ddp_runs: effective batch {batch} does not divide among {args.gpus} GPUs")
        per_gpu = batch // args.gpus
        for b in [d for d in range(1, per_gpu + 1) if per_gpu % d == 0]:
            cmd = [launcher, "--standalone", "--nproc_per_node", str(args.gpus), os.path.abspath(__file__), "--worker",
                   "--out", args.out, "--steps", str(args.steps), "--warmup", str(args.warmup), "--model", name,
                   "--config", cfg, "--seq-len", str(seq), "--micro-batch", str(b), "--accumulation", str(per_gpu // b)]
            cmd += (["--grad-ckpt"] if ckpt else []) + (["--smoke"] if args.smoke else [])
            rc = subprocess.run(cmd).returncode
            print(f"ddp_runs [{time.monotonic() - start:.0f} s] {name} s={seq} {b}x{per_gpu // b}x{args.gpus}: "
                  f"{'ok' if rc == 0 else f'failed (exit {rc}; out of memory leaves no row)'}", flush=True)


if __name__ == "__main__":
    main()
