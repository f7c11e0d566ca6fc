"""A two-process CPU Trainer run (torchrun, Gloo) through LorasimCallback: every rank sees world
size 2, rank 0 alone writes one row with processes 2 and each process's micro_batch and
accumulation, and `lorasim validate` predicts that row on two GPUs (docs/data-parallel.md)."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import lorasim_binary

HERE = os.path.dirname(os.path.abspath(__file__))


def torchrun():
    exe = os.path.join(os.path.dirname(sys.executable), "torchrun")
    return exe if os.access(exe, os.X_OK) else shutil.which("torchrun")


def test_two_process_trainer_writes_one_row_of_world_size_two(tmp_path, torch):
    launcher = torchrun()
    if launcher is None:
        pytest.skip("no torchrun next to this Python (torch's launcher)")
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("this torch has no Gloo backend")
    path = tmp_path / "rows.jsonl"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(
        [HERE, os.path.abspath(os.path.join(HERE, "..", "..", "python")), os.environ.get("PYTHONPATH", "")]))
    # Two ranks of a tiny model take ~15 s on one shared core; the limit is for a hung rendezvous.
    proc = subprocess.run([launcher, "--standalone", "--nproc_per_node", "2", os.path.join(HERE, "ddp_trainer_worker.py"),
                           str(path)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "rank 0 world 2 wrote True" in proc.stdout and "rank 1 world 2 wrote False" in proc.stdout, proc.stdout
    (line,) = path.read_text().splitlines()  # one row: rank 1 wrote nothing
    row = json.loads(line)
    assert row["processes"] == 2
    assert row["micro_batch"] == 2 and row["accumulation"] == 2  # per process: B = 2 x 2 x 2
    assert row["device"] == "cpu" and row["step_time_s"] > 0

    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/lorasim or $LORASIM) to validate the row with")
    v = subprocess.run([exe, "validate", "--measurements", str(path), "--gpu", "h200", "--allow-device-mismatch",
                        "--format", "json"], capture_output=True, text=True)
    assert v.returncode == 0, v.stderr
    group = json.loads(v.stdout)["groups"][0]
    assert "gpus=2" in group["workload"]
    (split,) = group["splits"]
    assert (split["micro_batch"], split["accumulation"]) == (2, 2)
    assert split["measured_step_time_s"] == row["step_time_s"]
