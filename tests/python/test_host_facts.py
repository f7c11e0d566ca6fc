"""bench/hf/host_facts.py: what the host did while a split trained."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "hf"))
import host_facts  # noqa: E402


def snap(wall, user, system, steal, vol, invol, cpu):
    return {"wall_s": wall, "process_user_s": user, "process_system_s": system,
            "machine_cpu_s": {"user": 10.0 + user, "steal": steal},
            "context_switches": {"voluntary_ctxt_switches": vol, "nonvoluntary_ctxt_switches": invol},
            "clock_mhz": {"min": 2000.0, "mean": 2500.0, "max": 3000.0}, "last_cpu": cpu,
            "loadavg_1m": 0.5, "affinity": [0, 1]}


def test_between_is_the_change_from_one_snapshot_to_the_next():
    d = host_facts.between(snap(100.0, 1.0, 0.25, 3.0, 10, 2, 0), snap(112.5, 9.0, 1.5, 4.5, 25, 9, 1))
    assert d["wall_s"] == 12.5
    assert d["process_cpu_s"] == 9.25  # (9 - 1) user + (1.5 - 0.25) system
    assert d["machine_cpu_s"] == {"user": 8.0, "steal": 1.5}
    assert d["context_switches"] == {"voluntary_ctxt_switches": 15, "nonvoluntary_ctxt_switches": 7}
    assert d["last_cpu"] == [0, 1]
    assert d["loadavg_1m"] == [0.5, 0.5]
    assert d["affinity"] == [0, 1]


def test_snapshot_reads_this_process_and_machine():
    a = host_facts.snapshot()
    sum(i * i for i in range(200_000))  # some CPU time of this process
    b = host_facts.snapshot()
    d = host_facts.between(a, b)
    assert d["wall_s"] > 0
    assert d["process_cpu_s"] >= 0
    if sys.platform.startswith("linux"):
        assert set(d["machine_cpu_s"]) >= {"user", "system", "idle", "steal"}
        assert all(v >= 0 for v in d["machine_cpu_s"].values())
        assert d["affinity"] == sorted(os.sched_getaffinity(0))
        assert isinstance(d["last_cpu"][1], int)
