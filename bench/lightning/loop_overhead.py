#!/usr/bin/env python3
"""Where a Lightning step's time goes (issue 30): the `fixed` cell's module and data (qwen3-1.7b,
512 tokens, bf16-mixed, clipping at 1.0, AdamW), each split trained in one process three ways:

  lightning    a Lightning Trainer, timed as the truth phase times it (lightning_gpu.py)
  loop         the same module's training_step in a plain loop: collate, batch.to(device), the
               forward under autocast, loss / a, backward, then clip_grad_norm_, step, zero_grad
  loop-pinned  the same with the batch in pinned memory, copied with non_blocking=True

Each line: the mean step of steps 3-6 and the mean host seconds per micro-batch (wall time from
the micro-batch's start to backward() returning, no synchronisation: what the host spends before
it may run ahead). Lightning's own split of its step is not visible from outside: its step against
the loop's says what the loop adds.

    python3 bench/lightning/loop_overhead.py --out-dir $OUT [--splits 16x1,8x2,4x4,1x16]
"""
import argparse, json, os, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "hf"))
import lightning_gpu  # noqa: E402
import tune_gpu  # noqa: E402

STEPS = 6


def loop_steps(cell, module, a, pinned):
    torch = cell.torch
    dev = torch.device("cuda")
    module.to(dev)
    opt = module.configure_optimizers()
    loader = iter(torch.utils.data.DataLoader(cell.dataset, batch_size=module.batch_size, shuffle=True,
                                              collate_fn=cell.collate, pin_memory=pinned))
    times, hosts = [], []
    for _ in range(STEPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(a):
            m0 = time.perf_counter()
            batch = {k: v.to(dev, non_blocking=pinned) for k, v in next(loader).items()}
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = module.training_step(batch, 0) / a
            loss.backward()
            hosts.append(time.perf_counter() - m0)
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    steady = times[2:]
    return sum(steady) / len(steady), sum(hosts[2 * a:]) / len(hosts[2 * a:])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--splits", default="16x1,8x2,4x4,1x16")
    args = ap.parse_args()
    ns = argparse.Namespace(smoke=False, fixed_1x16=False, dataset_size=256, attn="sdpa", precision="bf16-mixed")
    cell = lightning_gpu.Cell("fixed", args.out_dir, time.time() + 3600, ns)
    out = os.path.join(args.out_dir, "loop-overhead.jsonl")
    for text in args.splits.split(","):
        b, a = (int(x) for x in text.split("x"))
        timer = cell.StepTimer()
        module = cell.module(b)
        cell.trainer(a, STEPS, [timer]).fit(module)
        rows = [dict(split=text, mode="lightning", step_time_s=sum(timer.times[2:]) / len(timer.times[2:]))]
        module = None
        cell.free()
        for pinned in (False, True):
            step, host = loop_steps(cell, cell.module(b), a, pinned)
            cell.free()
            rows.append(dict(split=text, mode="loop-pinned" if pinned else "loop", step_time_s=step,
                             host_s_per_micro_batch=host))
        for r in rows:
            tune_gpu.emit(out, r, tag="loop_overhead")


if __name__ == "__main__":
    main()
