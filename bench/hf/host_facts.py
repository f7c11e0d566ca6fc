"""What the host did while a process trained: a diagnostic of why one process's host-bound steps run
slower than another's on the same machine (bench/hf/lengths_runs.py's `hostvar` plan).

`snapshot()` reads, without importing torch, the machine's CPU time by state (/proc/stat: a VM's
`steal` is time the hypervisor gave the vCPUs to someone else), this process's CPU time and context
switches, the load, the CPUs' clock and the CPUs the process may run on; `between(a, b)` is what
changed from one snapshot to the next, in seconds and counts. Linux only; on another system the
fields it cannot read are absent.
"""
import os
import time

_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _machine_cpu_s():
    """CPU seconds by state, summed over the machine's CPUs (the first line of /proc/stat)."""
    try:
        with open("/proc/stat") as f:
            parts = f.readline().split()
    except OSError:
        return {}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    return {k: int(v) / tick for k, v in zip(_STAT_FIELDS, parts[1:1 + len(_STAT_FIELDS)])}


def _context_switches():
    out = {}
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    k, v = line.split(":")
                    out[k.strip()] = int(v)
    except OSError:
        pass
    return out


def _clock_mhz():
    """The CPUs' current clocks as /proc/cpuinfo reports them (a VM may report its nominal clock)."""
    try:
        with open("/proc/cpuinfo") as f:
            mhz = [float(line.split(":")[1]) for line in f if line.startswith("cpu MHz")]
    except (OSError, ValueError):
        return {}
    return {"min": min(mhz), "mean": sum(mhz) / len(mhz), "max": max(mhz)} if mhz else {}


def _last_cpu():
    """The CPU this process's main thread last ran on (field 39 of /proc/self/stat)."""
    try:
        with open("/proc/self/stat") as f:
            stat = f.read()
        return int(stat[stat.rindex(")") + 2:].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def snapshot():
    t = os.times()
    snap = {"wall_s": time.monotonic(), "process_user_s": t.user, "process_system_s": t.system,
            "machine_cpu_s": _machine_cpu_s(), "context_switches": _context_switches(),
            "clock_mhz": _clock_mhz(), "last_cpu": _last_cpu()}
    if hasattr(os, "getloadavg"):
        snap["loadavg_1m"] = os.getloadavg()[0]
    if hasattr(os, "sched_getaffinity"):
        snap["affinity"] = sorted(os.sched_getaffinity(0))
    return snap


def between(a, b):
    """What changed from snapshot `a` to snapshot `b`: this process's CPU seconds, the machine's CPU
    seconds by state (steal among them), context switches; and both ends' clocks, load and CPU."""
    wall = b["wall_s"] - a["wall_s"]
    out = {"wall_s": wall,
           "process_cpu_s": (b["process_user_s"] - a["process_user_s"]) + (b["process_system_s"] - a["process_system_s"]),
           "machine_cpu_s": {k: b["machine_cpu_s"][k] - a["machine_cpu_s"][k]
                             for k in b["machine_cpu_s"] if k in a["machine_cpu_s"]},
           "context_switches": {k: b["context_switches"][k] - a["context_switches"][k]
                                for k in b["context_switches"] if k in a["context_switches"]},
           "clock_mhz": [a["clock_mhz"], b["clock_mhz"]], "last_cpu": [a["last_cpu"], b["last_cpu"]]}
    for k in ("loadavg_1m", "affinity"):
        if k in a:
            out[k] = [a[k], b[k]] if k == "loadavg_1m" else a[k]
    return out
