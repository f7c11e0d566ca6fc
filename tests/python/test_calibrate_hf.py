"""`lorasim calibrate --stack hf-peft` end to end on the CPU: the real binary, the real probe in this
Python, the fitted profile read back by `lorasim simulate`."""
import csv
import json
import os
import shutil
import subprocess
import sys

import pytest



def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=900, **kw)


@pytest.fixture(scope="module")
def exe(lorasim):
    """conftest's lorasim binary (skipped without one), under this file's name for it."""
    return lorasim


@pytest.fixture(scope="module")
def pip_lorasim(exe, tmp_path_factory):
    """`lorasim` alone, as `pip install .` installs it: no lorasim-train beside it."""
    path = tmp_path_factory.mktemp("pip") / "lorasim"
    shutil.copy(exe, path)
    return str(path)


@pytest.fixture(scope="module")
def hf_calibration(pip_lorasim, tmp_path_factory):
    """`lorasim calibrate --device cpu` where only the hf-peft stack can run: that stack, fitted on
    the CPU's own profile (no --gpu or --profile needed)."""
    d = tmp_path_factory.mktemp("hf")
    out, rows = d / "hf.toml", d / "rows.csv"
    proc = run([pip_lorasim, "calibrate", "--device", "cpu", "--python", sys.executable, "--out", str(out),
                "--save-measurements", str(rows)])
    return proc, out, rows


def stack_table(toml_text):
    """The [stack.hf-peft] table's lines as a dict of raw values (the C++ side is the parser)."""
    table, inside = {}, False
    for line in toml_text.splitlines():
        line = line.strip()
        if line.startswith("["):
            inside = line == "[stack.hf-peft]"
            continue
        if inside and "=" in line:
            key, value = (part.strip() for part in line.split("=", 1))
            table[key] = value
    return table


def test_calibrate_hf_peft_writes_a_calibrated_stack_table(hf_calibration):
    proc, out, _ = hf_calibration
    assert proc.returncode == 0, proc.stderr
    table = stack_table(out.read_text())
    assert table.get("calibrated") == "true", out.read_text()
    assert "lorasim calibrate --stack hf-peft" in table["source"]
    # The host's time is in the fitted terms. On a loaded 2-core CPU the split between the fixed
    # and the per-operator cost of 9 tiny runs is noise (either may fit to 0), their sum is not.
    host = [float(table[k]) for k in ("host_fixed_s", "host_per_op_s")]
    assert all(v >= 0 for v in host) and sum(host) > 0, host
    assert "stack.hf-peft." in proc.stdout  # the rows moved the stack's terms, and it says which


def test_calibrate_hf_peft_saves_the_plans_rows(hf_calibration):
    proc, _, rows = hf_calibration
    assert proc.returncode == 0, proc.stderr
    with open(rows, newline="") as f:
        table = list(csv.DictReader(f))
    # The plan on the CPU: 9 runs of one width, 4 of many lengths (two micro-batches, each with its
    # replay) and 2 through TRL's fused LM head (calibrate/hf_plan.h).
    assert len(table) == 15
    assert sum(1 for r in table if ";" in r["padded_lengths"]) == 4  # several widths
    assert sum(1 for r in table if r["fused_lm_head"] == "true") == 2
    assert {r["stack"] for r in table} == {"hf-peft"}
    assert {r["model"] for r in table} == {"tiny"}
    assert all(float(r["step_time_s"]) > 0 for r in table)


def test_simulate_reads_the_calibrated_profile_and_names_the_stack(exe, hf_calibration):
    proc, out, _ = hf_calibration
    assert proc.returncode == 0, proc.stderr
    sim = run([exe, "simulate", "--profile", str(out), "--model", "tiny", "--effective-batch", "4",
               "--seq-len", "32", "--precision", "fp32", "--autocast", "false", "--format", "json"])
    assert sim.returncode == 0, sim.stderr
    doc = json.loads(sim.stdout)
    assert "hf-peft" in json.dumps(doc), sim.stdout


def test_missing_python_is_one_line_naming_the_option(exe, tmp_path):
    out = tmp_path / "hf.toml"
    proc = run([exe, "calibrate", "--stack", "hf-peft", "--device", "cpu",
                "--python", "/nonexistent/python3", "--out", str(out)])
    assert proc.returncode != 0
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, proc.stderr
    assert "--python" in errors[0], proc.stderr
    assert not out.exists()


def test_without_lorasim_train_calibrate_runs_the_hf_stack_and_says_so(hf_calibration):
    proc, out, _ = hf_calibration
    assert proc.returncode == 0, proc.stderr
    assert "note: this lorasim has no lorasim-train" in proc.stderr and "--stack hf-peft" in proc.stderr


def test_a_profile_calibrated_on_the_cpu_describes_the_cpu(hf_calibration):
    proc, out, _ = hf_calibration
    assert proc.returncode == 0, proc.stderr
    gpu = {}
    for line in out.read_text().split("[gpu]", 1)[1].split("\n[")[0].splitlines():
        if "=" in line:
            key, value = (part.strip() for part in line.split("=", 1))
            gpu[key] = value
    assert gpu["name"] == '"cpu"', out.read_text()[:400]
    assert "H200" not in gpu["display_name"]


def test_validate_of_cpu_rows_points_at_a_command_that_runs_there(pip_lorasim, hf_calibration):
    proc, out, rows = hf_calibration
    assert proc.returncode == 0, proc.stderr
    bare = run([pip_lorasim, "validate", "--measurements", str(rows)])
    assert bare.returncode != 0
    assert "lorasim calibrate --device cpu" in bare.stderr, bare.stderr  # the command that made `out` above
    checked = run([pip_lorasim, "validate", "--measurements", str(rows), "--profile", str(out)])
    assert checked.returncode == 0, checked.stderr
    assert "describes the" not in checked.stderr
