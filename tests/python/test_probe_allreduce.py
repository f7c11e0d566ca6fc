"""The all-reduce probe: its sizes, and two torchrun-launched Gloo processes writing rows that
`lorasim calibrate --interconnect --measurements` fits into a CPU profile's [interconnect], marked
gloo-cpu (docs/data-parallel.md)."""
import os
import shutil
import subprocess
import sys

import pytest

from conftest import lorasim_binary

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.abspath(os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, PYTHON_DIR)

from lorasim_hf import probe_allreduce  # noqa: E402


def test_sizes_step_by_four_and_end_on_the_largest():
    assert probe_allreduce.sizes(1024, 64 << 20) == [1024 * 4 ** i for i in range(9)]
    assert probe_allreduce.sizes(1024, 5000) == [1024, 4096, 5000]
    with pytest.raises(ValueError):
        probe_allreduce.sizes(2048, 1024)


def test_rows_are_written_in_the_format_lorasim_reads(tmp_path):
    path = tmp_path / "rows.csv"
    probe_allreduce.write_csv(str(path), "gloo", "cpu", 2, [(1024, 1.5e-5), (4096, 2.5e-5)])
    assert path.read_text() == "backend,device,processes,bytes,time_s\ngloo,cpu,2,1024,1.5e-05\ngloo,cpu,2,4096,2.5e-05\n"


def torchrun():
    exe = os.path.join(os.path.dirname(sys.executable), "torchrun")
    return exe if os.access(exe, os.X_OK) else shutil.which("torchrun")


def test_two_gloo_processes_write_rows_that_fit_into_a_cpu_profile(tmp_path, torch):
    launcher = torchrun()
    if launcher is None:
        pytest.skip("no torchrun next to this Python (torch's launcher)")
    if not torch.distributed.is_available() or not torch.distributed.is_gloo_available():
        pytest.skip("this torch has no Gloo backend")
    rows = tmp_path / "rows.csv"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join([PYTHON_DIR, os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([launcher, "--standalone", "--nproc_per_node", "2", "-m", "lorasim_hf.probe_allreduce",
                           "--device", "cpu", "--max-bytes", str(16 << 20), "--repeats", "3", "--out", str(rows)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    lines = rows.read_text().splitlines()
    assert lines[0] == "backend,device,processes,bytes,time_s"
    assert [l.split(",")[:4] for l in lines[1:]] == [["gloo", "cpu", "2", str(1024 * 4 ** i)] for i in range(8)]
    assert all(float(l.split(",")[4]) > 0 for l in lines[1:])

    exe = lorasim_binary()
    if exe is None or not os.access(os.path.join(os.path.dirname(exe), "lorasim-train"), os.X_OK):
        pytest.skip("no lorasim and lorasim-train to make a CPU profile and fit the rows into it")
    # A CPU profile: the runner's own two-rank timing. Up to 16 MiB: on a busy CPU smaller messages
    # can take as long as their latency alone, which gives no bandwidth.
    cpu = tmp_path / "cpu.toml"
    made = subprocess.run([exe, "calibrate", "--interconnect", "--device", "cpu", "--processes", "2", "--max-bytes",
                           "16MiB", "--repeats", "2", "--out", str(cpu)], capture_output=True, text=True, env=env)
    assert made.returncode == 0, made.stderr
    out = tmp_path / "fitted.toml"
    fit = subprocess.run([exe, "calibrate", "--interconnect", "--measurements", str(rows), "--profile", str(cpu),
                          "--out", str(out)], capture_output=True, text=True)
    assert fit.returncode == 0, fit.stderr
    text = out.read_text()
    assert 'link = "gloo-cpu"' in text and "calibrated = true" in text
    assert "8 rows of 1 KiB..16 MiB" in text
