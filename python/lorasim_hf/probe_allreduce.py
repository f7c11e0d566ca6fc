"""Times torch.distributed all-reduces over message sizes, for `lorasim calibrate --interconnect
--measurements` to fit the interconnect of the hf-peft stack (docs/data-parallel.md). Launch it with
torchrun, one process per GPU (NCCL) or, on the CPU, as many as you like (Gloo):

    torchrun --nproc_per_node 2 -m lorasim_hf.probe_allreduce --out rows.csv

Rank 0 writes the rows in the format lorasim reads (backend,device,processes,bytes,time_s): each
size's time is the slowest rank's mean over the timed repeats, as nccl-tests reports it.
"""
import argparse
import os
import sys
import tempfile
import time

from lorasim_hf._deps import require

HEADER = "backend,device,processes,bytes,time_s"


def sizes(min_bytes, max_bytes):
    """Message sizes from min_bytes, x4 each, up to max_bytes (included), multiples of 4 bytes."""
    if min_bytes < 4 or max_bytes < min_bytes:
        raise ValueError("sizes must run from at least 4 bytes up, smallest first")
    out, b = [], min_bytes
    while b <= max_bytes:
        out.append(b // 4 * 4)
        b *= 4
    if out[-1] != max_bytes // 4 * 4:
        out.append(max_bytes // 4 * 4)
    return out


def time_allreduce(dist, torch, device, sizes_bytes, warmup=3, repeats=10):
    """[(bytes, seconds)] for one all-reduce of each size: the slowest rank's mean."""
    out = []
    cuda = device.type == "cuda"
    for nbytes in sizes_bytes:
        t = torch.ones(nbytes // 4, dtype=torch.float32, device=device)
        for _ in range(warmup):
            dist.all_reduce(t)
        if cuda:
            torch.cuda.synchronize(device)
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(repeats):
            dist.all_reduce(t)
        if cuda:
            torch.cuda.synchronize(device)
        mean = torch.tensor([(time.perf_counter() - t0) / repeats], dtype=torch.float64, device=device)
        dist.all_reduce(mean, op=dist.ReduceOp.MAX)
        out.append((nbytes, float(mean.item())))
    return out


def write_csv(path, backend, device_name, processes, timed):
    """Writes the rows atomically (a temporary file in the same folder, then a rename)."""
    if "," in device_name or "," in backend:
        raise ValueError(f"a device or backend name with a comma: {device_name!r}")
    lines = [HEADER] + [f"{backend},{device_name},{processes},{b},{t!r}" for b, t in timed]
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".allreduce-", suffix=".csv")
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, path)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m lorasim_hf.probe_allreduce", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="rows file to write (.csv), by rank 0")
    p.add_argument("--min-bytes", type=int, default=1 << 10)
    p.add_argument("--max-bytes", type=int, default=64 << 20)
    p.add_argument("--repeats", type=int, default=10, help="timed all-reduces per size")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="auto: CUDA (NCCL) where torch sees a GPU, else the CPU (Gloo)")
    a = p.parse_args(argv)
    if not a.out.endswith(".csv"):
        p.error("--out must name a .csv file")
    if a.repeats < 1:
        p.error("--repeats must be at least 1")
    try:
        sizes_bytes = sizes(a.min_bytes, a.max_bytes)
    except ValueError as e:
        p.error(str(e))
    torch = require("torch")
    import torch.distributed as dist
    if "WORLD_SIZE" not in os.environ:
        p.error("launch it with torchrun (torchrun --nproc_per_node 2 -m lorasim_hf.probe_allreduce ...): "
                "no WORLD_SIZE in the environment")
    cuda = a.device == "cuda" or (a.device == "auto" and torch.cuda.is_available())
    if cuda and not torch.cuda.is_available():
        p.error("--device cuda: torch sees no CUDA device")
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo")
    try:
        world = dist.get_world_size()
        if world < 2:
            p.error("an all-reduce needs at least 2 processes (torchrun --nproc_per_node 2)")
        timed = time_allreduce(dist, torch, device, sizes_bytes, repeats=a.repeats)
        dist.barrier()
        if dist.get_rank() == 0:
            name = torch.cuda.get_device_name(device) if cuda else "cpu"
            write_csv(a.out, dist.get_backend(), name, world, timed)
            print(f"wrote {len(timed)} all-reduce rows to {a.out}", file=sys.stderr)
    finally:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
