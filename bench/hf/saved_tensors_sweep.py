"""Runs python -m lorasim_hf.saved_tensors over a matrix of cases in one process and prints what the
forward saved, measured, against lorasim's count of it (the binary from $LORASIM, else PATH, under
hwprofiles/h200.toml with the hf-peft memory terms set to count saved tensors alone). Usage:
    python bench/hf/saved_tensors_sweep.py --matrix cpu|gpu --outdir DIR [--limit-s SECONDS]
Each case writes DIR/<name>.json as soon as it is done; a summary goes to DIR/summary.md. On the CPU
the dropout cases differ by design: nn.Dropout saves an fp32 noise tensor there, a bool mask on CUDA;
a case at micro-batch 1 is 8 bytes off in all: HF's shifted labels keep their padded storage
(s + 1 int64) at b = 1 only."""
import argparse
import itertools
import json
import os
import shutil
import sys
import time
import traceback

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
from lorasim_hf import saved_tensors as st  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
BASE_PROFILE = os.path.join(HERE, "..", "..", "hwprofiles", "h200.toml")
CFG = {m: os.path.join(HERE, "configs", m + ".json")
       for m in ("qwen3-1.7b", "llama-3.2-1b", "qwen2.5-0.5b", "mistral-7b")}
TINY = {"llama": "--model-type llama --hidden-size 64 --intermediate-size 128 --num-attention-heads 4 "
                 "--num-key-value-heads 2 --vocab-size 256",
        "qwen3": "--model-type qwen3 --hidden-size 64 --intermediate-size 128 --num-attention-heads 4 "
                 "--num-key-value-heads 2 --head-dim 32 --vocab-size 256"}


def cpu_cases():
    for (m, flags), prec, ac, attn, dr in itertools.product(TINY.items(), ["fp32", "bf16"], [0, 1],
                                                            ["sdpa", "eager"], [0.0, 0.05]):
        yield (f"tiny-{m}-{prec}-ac{ac}-{attn}-dr{dr}",
               f"{flags} --seq-len 24 --micro-batch 2 --precision {prec} --attn-impl {attn} "
               f"--lora-dropout {dr}" + (" --autocast" if ac else ""))
    for m in CFG:
        s = 32 if m == "mistral-7b" else 64
        for prec, ac, attn, dr in [("bf16", 0, "sdpa", 0.0), ("bf16", 1, "sdpa", 0.0), ("bf16", 0, "eager", 0.0),
                                   ("bf16", 1, "eager", 0.0), ("bf16", 0, "sdpa", 0.05),
                                   ("bf16", 1, "sdpa", 0.05), ("fp32", 0, "sdpa", 0.0)]:
            yield (f"{m}-{prec}-ac{ac}-{attn}-dr{dr}",
                   f"--config {CFG[m]} --vocab-size 4096 --seq-len {s} --micro-batch 1 --precision {prec} "
                   f"--attn-impl {attn} --lora-dropout {dr}" + (" --autocast" if ac else ""))
    yield ("tiny-llama-bf16-ac1-sdpa-dr0.05-ckpt", TINY["llama"] + " --seq-len 24 --micro-batch 2 --precision bf16 "
           "--autocast --lora-dropout 0.05 --grad-ckpt")
    yield ("tiny-qwen3-bf16-ac0-sdpa-dr0-ckpt", TINY["qwen3"] + " --seq-len 24 --micro-batch 1 --precision bf16 "
           "--grad-ckpt")


def gpu_cases():
    """In order of importance (a time limit cuts the tail): autocast on/off at 2048 x 1 for every
    model; dropout 0.05, checkpointing and eager there; then the rest of the 512/2048 x b=1,2 grid."""
    done = set()

    def case(m, s, b, ac, attn="sdpa", dr=0.0, ck=0):
        name = f"{m}-s{s}-b{b}-ac{ac}-{attn}-dr{dr:g}-ck{ck}"
        if name in done:
            return None
        done.add(name)
        flags = f"--config {CFG[m]} --seq-len {s} --micro-batch {b} --attn-impl {attn} --lora-dropout {dr}"
        flags += (" --autocast" if ac else "") + (" --grad-ckpt" if ck else "")
        return name, flags

    plan = [case(m, 2048, 1, ac) for m in CFG for ac in (1, 0)]
    plan += [case(m, 2048, 1, ac, dr=0.05) for m in CFG for ac in (1, 0)]
    plan += [case(m, 2048, 1, ac, ck=1) for m in CFG for ac in (1, 0)]
    plan += [case(m, 2048, 1, ac, attn="eager") for m in CFG for ac in (1, 0)]
    plan += [case(m, 512, 2, ac, attn="eager") for m in CFG for ac in (1, 0)]
    plan += [case(m, 2048, 1, ac, dr=0.05, ck=1) for m in CFG for ac in (1, 0)]
    plan += [case(m, s, b, ac) for m in CFG for s in (512, 2048) for b in (1, 2) for ac in (1, 0)]
    return [p for p in plan if p]


def row(name, r):
    c = r.get("lorasim")
    cells = [name]
    if c:
        n = (c["micro_batches"][1] - c["micro_batches"][0]) * r["seq_len"]
        m, p = c["measured_growth_bytes"], c["lorasim_growth_bytes"]
        cells += [f"{m / n:.1f}", f"{p / n:.1f}", "yes" if m == p else f"NO ({(p - m) / n:+.1f} B/token)"]
    else:
        cells += ["", "", "not compared"]
    mem = (r.get("memory") or [None])[-1]
    if mem:
        held = r["hook_saved_total"]
        cells += [f"{held / 2**20:.1f}", f"{mem['after_forward'] / 2**20:.1f}",
                  f"{mem['after_forward_output_held'] / 2**20:.1f}", f"{mem['forward_peak'] / 2**20:.1f}",
                  f"{mem['backward_peak'] / 2**20:.1f}"]
    return "| " + " | ".join(cells) + " |"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--matrix", choices=["cpu", "gpu"], required=True)
    ap.add_argument("--outdir", required=True)
    ap.add_argument("--limit-s", type=float, default=1e9)
    ap.add_argument("--only", default="", help="substring filter on case names")
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    dev = ["--device", "cuda"] if a.matrix == "gpu" else []
    cases = [c for c in (gpu_cases() if a.matrix == "gpu" else cpu_cases()) if a.only in c[0]]
    head = ("| case | measured B/token saved | lorasim B/token | equal |"
            + (" hooks MiB | after fwd MiB | after fwd, output held | fwd peak | bwd peak |" if dev else ""))
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    have_lorasim = shutil.which(os.environ.get("LORASIM") or "lorasim") is not None
    if not have_lorasim:
        print("no lorasim binary ($LORASIM or PATH): measured only, not compared", file=sys.stderr)
    t0 = time.time()
    for name, flags in cases:
        if time.time() - t0 > a.limit_s:
            lines.append(f"| {name} | skipped (time limit) |")
            continue
        out = os.path.join(a.outdir, name + ".json")
        argv = flags.split() + dev + ["--out", out]
        if have_lorasim:  # the forward without checkpointing (every block seen), in every case
            argv += ["--lorasim-profile", BASE_PROFILE]
        try:
            if st.main(argv) != 0:
                raise RuntimeError("lorasim_hf.saved_tensors failed")
            with open(out) as f:
                lines.append(row(name, json.load(f)))
        except Exception:
            traceback.print_exc()
            lines.append(f"| {name} | FAILED |")
        print(lines[-1], flush=True)
    with open(os.path.join(a.outdir, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
