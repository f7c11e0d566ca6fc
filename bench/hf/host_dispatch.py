#!/usr/bin/env python3
"""How fast this machine's CPU dispatches PyTorch operators: a few seconds of timing, no model.

The hf-peft stack's host time is `host_per_op_s` x the operators a micro-batch dispatches
(docs/stacks.md). That coefficient belongs to the CPU that dispatches, so a profile calibrated on
one machine carries that machine's CPU. This measures the same kind of work on any machine: a tiny
LoRA-shaped block (RMSNorm, a frozen linear plus a low-rank adapter, SiLU, a residual) run forward
and backward under bf16 autocast, on tensors so small that the device never sets the pace. Its
aten operators are counted once with a dispatch mode, then the block is timed without it; the
result is seconds of host time per dispatched operator. Comparing two machines' figures says how
their host terms should compare (bench/results/h100/README.md reports whether that predicts a
calibrated host term better than the prior does).

    python3 bench/hf/host_dispatch.py [--device cuda|cpu] [--seconds 4] [--out FILE.json]
"""
import argparse, json, os, platform, statistics, time


def block(torch, dim, rank, device, dtype):
    g = torch.Generator(device="cpu").manual_seed(0)
    w = torch.randn(dim, dim, generator=g).to(device, dtype)  # frozen base weight
    a = (torch.randn(rank, dim, generator=g) * 0.01).to(device, torch.float32).requires_grad_()
    b = torch.zeros(dim, rank, device=device, dtype=torch.float32, requires_grad=True)
    norm = torch.ones(dim, device=device, dtype=dtype)

    def step(x):
        # (n, dim) -> (n, dim): RMSNorm in fp32, base + adapter, SiLU, residual, a scalar loss.
        h = x.float()
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + 1e-6)
        h = (h.to(dtype) * norm)
        y = torch.nn.functional.linear(h, w) + torch.nn.functional.linear(torch.nn.functional.linear(h, a), b) * 2.0
        y = torch.nn.functional.silu(y) + x
        loss = y.float().pow(2).mean()
        loss.backward()
        a.grad = None
        b.grad = None
    return step


def count_ops(torch, fn, x):
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            Count.n += 1
            return func(*args, **(kwargs or {}))
    with Count():
        fn(x)
    return Count.n


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--device", default="cuda" if os.environ.get("CUDA_VISIBLE_DEVICES", "x") != "" else "cpu")
    p.add_argument("--seconds", type=float, default=4.0, help="time spent timing (default 4)")
    p.add_argument("--out", help="also write the result here as JSON")
    args = p.parse_args()
    import torch
    device = args.device if (args.device != "cuda" or torch.cuda.is_available()) else "cpu"
    dtype = torch.bfloat16
    fn = block(torch, 64, 8, device, dtype)
    x = torch.randn(8, 64, device=device, dtype=dtype)
    ctx = (lambda: torch.autocast(device_type=device.split(":")[0], dtype=dtype))
    with ctx():
        for _ in range(50):
            fn(x)  # warm-up: the autograd graph's caches, the allocator's blocks
        ops = count_ops(torch, fn, x)
    sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
    per_rep = []
    deadline = time.perf_counter() + args.seconds
    with ctx():
        while time.perf_counter() < deadline:
            sync()
            t0 = time.perf_counter()
            for _ in range(200):
                fn(x)
            sync()
            per_rep.append((time.perf_counter() - t0) / 200)
    per_rep.sort()
    # The fastest quarter: what the CPU can do, without the scheduler's and the GPU's interruptions.
    fast = per_rep[: max(1, len(per_rep) // 4)]
    out = {
        "device": torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu",
        "cpu": platform.processor() or platform.machine(),
        "cpu_model": _cpu_model(),
        "torch": torch.__version__,
        "ops_per_iteration": ops,
        "host_per_op_s": statistics.mean(fast) / ops,
        "host_per_op_s_median": statistics.median(per_rep) / ops,
        "repetitions": len(per_rep),
    }
    print(json.dumps(out))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(out, f, indent=1)


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


if __name__ == "__main__":
    main()
