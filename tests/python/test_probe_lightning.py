"""The probe's lightning runs (`stack: lightning`) on a tiny CPU model: a real Lightning Trainer trains
the probe's model on the probe's micro-batches with the run's settings; the rows say so and time its
steps; the shared model is given back as built; the plan's key is checked; a missing Lightning is one
line; the rows go through lorasim's reader."""
import io
import json
import os
import subprocess
import sys

import pytest

from conftest import LLAMA, PYTHON_DIR, lorasim_validate
from lorasim_hf import probe, probe_lightning, probe_runs
from test_probe_shapes import expected_new_shapes, varied

L = pytest.importorskip("lightning.pytorch")

COMMON = dict(model="llama", hf_config=LLAMA, num_layers=1, precision="fp32", autocast=False, lora_rank=4,
              lora_alpha=8, seq_len=16, stack="lightning")


@pytest.fixture
def fits(monkeypatch):
    """The Trainer of every fit, as it ended."""
    seen, fit = [], L.Trainer.fit

    def spy(trainer, *args, **kwargs):
        seen.append(trainer)
        return fit(trainer, *args, **kwargs)
    monkeypatch.setattr(L.Trainer, "fit", spy)
    return seen


def plan(*runs):
    return {"device": "cpu", "allocator": "default", "runs": list(runs)}


def test_a_lightning_trainer_trains_the_probes_model_with_the_runs_settings(torch, fits):
    runs = [dict(COMMON, micro_batch=2, accumulation=3, steps=2, warmup_steps=1),
            dict(COMMON, micro_batch=1, accumulation=1, steps=1, warmup_steps=0, precision="bf16", autocast=True)]
    rows, failures = probe.run_plan(plan(*runs), out=io.StringIO(), log=io.StringIO())
    assert failures == 0 and len(rows) == 2 and len(fits) == 2
    first, second = fits
    assert first.global_step == 3 and first.accumulate_grad_batches == 3 and first.gradient_clip_val == 1.0
    assert str(first.precision) == "32-true" and str(second.precision) == "bf16-mixed"
    assert second.global_step == 1 and second.accumulate_grad_batches == 1
    assert [type(o).__name__ for o in first.optimizers] == ["AdamW"]
    assert first.optimizers[0].defaults["fused"] is True and second.optimizers[0].defaults["fused"] is False
    for row, run in zip(rows, runs):
        assert row["stack"] == "lightning" and row["loop"] == "probe" and row["oom"] is False
        assert (row["micro_batch"], row["accumulation"], row["precision"]) == (
            run["micro_batch"], run["accumulation"], run["precision"])
        assert row["collation"] == "fixed" and row["real_tokens"] == run["micro_batch"] * 16
        assert row["padded_lengths"] == f"16:{run['steps'] * run['accumulation']}"  # the timed micro-batches only
        assert row["step_time_s"] > row["optimizer_time_s"] > 0 and row["micro_batch_time_s"] > 0
        assert "peak_reserved_bytes" not in row  # no CUDA, no memory figures
    assert rows[0]["optim"] == "adamw_torch_fused" and rows[1]["optim"] == "adamw_torch"
    # One timed step: the micro-batches' time is the step's less the optimizer's, per micro-batch.
    one = rows[1]
    assert one["micro_batch_time_s"] == pytest.approx(one["step_time_s"] - one["optimizer_time_s"], rel=1e-12)


def test_lightning_runs_draw_the_probes_micro_batches_of_many_lengths(torch):
    probe_lightning.package()
    hf, lit = varied(), varied(stack="lightning")
    rows, failures = probe.run_plan(plan(lit, hf), out=io.StringIO(), log=io.StringIO())
    assert failures == 0
    lit_row, hf_row = rows
    assert lit_row["stack"] == "lightning" and hf_row["stack"] == "hf-peft"
    for key in ("collation", "padded_lengths", "real_tokens", "seq_len"):
        assert lit_row[key] == hf_row[key], key
    new, _ = expected_new_shapes(8, 1, 2, 1)
    assert lit_row["new_shapes_per_step"] == pytest.approx(new / 8) and new > 0
    assert hf_row["new_shapes_per_step"] == 0.0  # the same order again: the process has met every shape


def test_a_fused_head_run_takes_its_loss_per_micro_batch_from_the_fused_head(torch, monkeypatch):
    pytest.importorskip("trl")
    calls, fused_loss = [], probe_runs.fused_loss

    def spy(*args):
        calls.append(args[-1])  # the accumulation it divides by: Lightning divides by the window itself
        return fused_loss(*args)
    monkeypatch.setattr(probe_runs, "fused_loss", spy)
    run = dict(COMMON, micro_batch=2, accumulation=2, steps=2, warmup_steps=1, fused_lm_head=True)
    rows, failures = probe.run_plan(plan(run), out=io.StringIO(), log=io.StringIO())
    assert failures == 0 and rows[0]["fused_lm_head"] is True and rows[0]["stack"] == "lightning"
    assert calls == [1] * 6  # every micro-batch of the 3 steps


def test_the_shared_model_is_given_back_where_and_as_it_was_built(torch, monkeypatch):
    moved = []  # Lightning's teardown moves the module to the CPU (a GPU model, in a CUDA run)
    monkeypatch.setattr(torch.nn.Module, "cpu", lambda self: moved.append(type(self).__name__) or self)
    bf16 = dict(COMMON, micro_batch=1, steps=1, warmup_steps=0, precision="bf16")  # bf16-true casts every tensor
    _, _, (run,) = probe.load_plan(plan(bf16))
    p = probe.Probe("cpu", "default", io.StringIO(), io.StringIO())
    model, vocab = p.build(run)
    before = {n: (t.dtype, t.device) for n, t in list(model.named_parameters()) + list(model.named_buffers())}
    assert torch.float32 in {d for d, _ in before.values()}  # PEFT's fp32 adapters, RoPE's fp32 buffer
    row = p.run(model, vocab, run)
    assert row["stack"] == "lightning" and row["precision"] == "bf16"
    after = {n: (t.dtype, t.device) for n, t in list(model.named_parameters()) + list(model.named_buffers())}
    assert after == before and moved == []


def test_the_stack_key_is_checked():
    base = {"model": "m", "hf_config": LLAMA, "seq_len": 8, "micro_batch": 1}
    assert probe.load_plan({"runs": [base]})[2][0]["stack"] == "hf-peft"
    with pytest.raises(probe.PlanError, match=r"run 1: stack must be one of hf-peft, lightning, got 'keras'"):
        probe.load_plan({"runs": [dict(base, stack="keras")]})
    with pytest.raises(probe.PlanError, match="a lightning run's loop is Lightning's"):
        probe.load_plan({"runs": [dict(base, stack="lightning", loop="plain")]})
    with pytest.raises(probe.PlanError, match="--quant is for hf-peft runs only"):
        probe.run_plan({"device": "cpu", "runs": [dict(base, stack="lightning")]}, quant="nf4")


def _main(tmp_path, runs, hide=()):
    """`python -m lorasim_hf.probe --plan` in a fresh process, the packages in `hide` made absent."""
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan(*runs)))
    code = ("import sys, importlib.abc\n"
            "class Hide(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            f"        if name.split('.')[0] in {list(hide)!r}:\n"
            "            raise ModuleNotFoundError(f\"No module named '{name}'\", name=name)\n"
            "sys.meta_path.insert(0, Hide())\n"
            "from lorasim_hf.probe import main\n"
            f"sys.exit(main(['--plan', {str(plan_path)!r}]))\n")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR), OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)


def test_missing_lightning_is_one_line_and_exit_2(tmp_path):
    proc = _main(tmp_path, [dict(COMMON, micro_batch=1)], hide=("lightning", "pytorch_lightning"))
    assert proc.returncode == 2
    assert proc.stderr == "error: missing python package lightning (pip install lightning==2.6.6)\n"
    assert proc.stdout == ""


def test_the_entry_point_streams_lightning_rows_and_only_the_probes_progress(tmp_path):
    proc = _main(tmp_path, [dict(COMMON, micro_batch=1, steps=1)])
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    assert json.loads(line)["stack"] == "lightning"
    assert proc.stderr.splitlines()[-2:][0].startswith("[1/1] llama L=1 s=16 b=1 a=1 lightning: ")
    assert "GPU available" not in proc.stderr and "workers" not in proc.stderr


def test_lightning_runs_under_pytorch_lightning_too(torch, monkeypatch):
    pytest.importorskip("pytorch_lightning")
    real = probe_lightning._PACKAGES
    monkeypatch.setattr(probe_lightning, "_PACKAGES", ("pytorch_lightning",) + real)
    rows, failures = probe.run_plan(plan(dict(COMMON, micro_batch=1, steps=1)), out=io.StringIO(), log=io.StringIO())
    assert failures == 0 and rows[0]["stack"] == "lightning"
    assert "pytorch_lightning" in probe_lightning._CLASSES


# Needs lorasim's C++ lightning stack (issue 30): a lorasim built before it refuses `stack=lightning`.
def test_lightning_rows_go_through_validate(tmp_path, torch):
    config = tmp_path / "llama.json"  # a config path names the model, so lorasim can read the rows
    config.write_text(json.dumps(LLAMA))
    out = io.StringIO()
    rows, failures = probe.run_plan(plan(dict(COMMON, model=str(config), micro_batch=1, steps=1),
                                         varied(model=str(config), stack="lightning", steps=2)), out=out,
                                    log=io.StringIO())
    assert failures == 0 and len(rows) == 2
    path = tmp_path / "rows.jsonl"
    path.write_text(out.getvalue())
    lorasim_validate(str(path))
