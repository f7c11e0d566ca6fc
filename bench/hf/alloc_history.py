"""What PyTorch's caching allocator recorded (torch.cuda.memory._record_memory_history, then
_snapshot()): the blocks alive at the allocated peak, and which allocations made it take new
segments from CUDA. Used by bench/hf/peak_snapshot.py and lengths_runs.py's segment trace."""
import os


def live_at_peak(snapshot):
    """(allocated peak in bytes, the blocks alive at it, largest first)."""
    events = [e for trace in snapshot["device_traces"] for e in trace]
    live, cur, peak, at_peak = {}, 0, 0, {}
    for e in events:
        if e["action"] == "alloc":
            live[e["addr"]] = e
            cur += e["size"]
            if cur > peak:
                peak, at_peak = cur, dict(live)
        elif e["action"] == "free_completed" and e["addr"] in live:
            cur -= live.pop(e["addr"])["size"]
    return peak, sorted(at_peak.values(), key=lambda e: -e["size"])


def segment_summary(snapshot):
    """The allocator's segment_alloc events (each a cudaMalloc that grew reserved memory), in order,
    with the allocated bytes at that moment and the innermost Python frames that asked for them; and
    the segments alive at the end, with their free bytes (what fragmentation left unused)."""
    events = [e for trace in snapshot["device_traces"] for e in trace]
    allocated, reserved, grown = 0, 0, []
    for e in events:
        a = e["action"]
        if a == "alloc":
            allocated += e["size"]
        elif a == "free_completed":
            allocated -= e["size"]
        elif a in ("segment_alloc", "segment_map"):
            reserved += e["size"]
            frames = [f"{os.path.basename(f['filename'])}:{f['line']}:{f['name']}" for f in e.get("frames", [])
                      if f.get("filename", "").endswith(".py")][:4]
            grown.append({"size": e["size"], "allocated": allocated, "reserved": reserved, "frames": frames})
        elif a in ("segment_free", "segment_unmap"):
            reserved -= e["size"]
    # The blocks alive at the allocated peak, grouped by the frames that allocated them.
    peak, blocks = live_at_peak(snapshot)
    by_frames = {}
    for e in blocks:
        py = [f"{os.path.basename(f['filename'])}:{f['line']}:{f['name']}" for f in e.get("frames", [])
              if f.get("filename", "").endswith(".py")]
        key = " < ".join(py[:3]) or "(no Python frame)"
        n, b = by_frames.get(key, (0, 0))
        by_frames[key] = (n + 1, b + e["size"])
    grouped = [{"frames": k, "blocks": n, "bytes": b} for k, (n, b) in
               sorted(by_frames.items(), key=lambda kv: -kv[1][1])][:80]
    segments = [{"size": sg["total_size"], "allocated": sg["allocated_size"],
                 "blocks": len(sg["blocks"]), "free_blocks": sorted((b["size"] for b in sg["blocks"]
                                                                     if b["state"] == "inactive"), reverse=True)[:6]}
                for sg in snapshot["segments"]]
    return {"segment_allocs": grown, "segments": sorted(segments, key=lambda x: -x["size"])[:60],
            "allocated_peak": peak, "live_at_peak": grouped}
