"""`lorasim calibrate --stack hf-peft` warns, with the likely cause, when its fit misses the timings:
a stand-in probe times every run at random, as a CPU with fighting threads does."""
import os
import stat
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR, lorasim_binary

NOISY_PROBE = '''
import json, random, sys
sys.path.insert(0, {python_dir!r})
from lorasim_hf.probe import load_plan
from lorasim_hf.rows import json_line
device, allocator, runs = load_plan(sys.argv[sys.argv.index("--plan") + 1])
rng = random.Random(0)
for r in runs:
    row = {{k: r[k] for k in ("model", "num_layers", "seq_len", "micro_batch", "accumulation", "grad_ckpt",
                              "lora_rank", "lora_alpha", "lora_targets", "precision", "attn_impl", "lora_dropout",
                              "autocast")}}
    row.update(stack="hf-peft", allocator=allocator, loop="probe", oom=False, device="cpu", processes=1,
               step_time_s=rng.choice([0.01, 0.5, 3.0]) * r["micro_batch"] * r["accumulation"])
    print(json_line(row), flush=True)
'''


def test_a_noisy_calibration_is_written_with_a_warning_naming_the_cause(tmp_path):
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/lorasim or $LORASIM)")
    probe = tmp_path / "python"
    probe.write_text(f"#!{sys.executable}\n" + NOISY_PROBE.format(python_dir=os.path.abspath(PYTHON_DIR)))
    probe.chmod(probe.stat().st_mode | stat.S_IXUSR)
    out = tmp_path / "hf.toml"
    proc = subprocess.run([exe, "calibrate", "--stack", "hf-peft", "--device", "cpu", "--python",
                           str(probe), "--steps", "3", "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert out.exists()
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning: the fit misses")]
    assert len(warnings) == 1, proc.stderr
    assert "OMP_NUM_THREADS" in warnings[0] and "too few timed steps (--steps 3" in warnings[0], warnings[0]
