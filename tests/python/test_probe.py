import io
import json
import os
import subprocess
import sys

import pytest

from conftest import LLAMA, PYTHON_DIR, QWEN3, lorasim_validate
from lorasim_hf import probe


def tiny_plan(tmp_path):
    """Two models: a Llama truncated to 1 of 2 layers (fp32, no autocast, two splits and lengths),
    a Qwen3 (bf16 under autocast, checkpointing, dropout, q/v only); model names are config paths."""
    llama = tmp_path / "llama.json"
    qwen3 = tmp_path / "qwen3.json"
    llama.write_text(json.dumps(LLAMA))
    qwen3.write_text(json.dumps(QWEN3))
    common = {"steps": 2, "warmup_steps": 1, "lora_rank": 4, "lora_alpha": 8}
    fp32 = dict(common, model=str(llama), hf_config=LLAMA, num_layers=1, precision="fp32", autocast=False)
    return {"device": "cpu", "allocator": "default", "runs": [
        dict(fp32, seq_len=16, micro_batch=1, accumulation=2),
        dict(common, model=str(qwen3), hf_config=QWEN3, num_layers=None, seq_len=16, micro_batch=2,
             grad_ckpt=True, lora_dropout=0.05, lora_targets=["q", "v"]),
        dict(fp32, seq_len=32, micro_batch=2, accumulation=1),
    ]}


def test_plan_defaults_and_errors(tmp_path):
    plan = {"runs": [{"model": "m", "hf_config": LLAMA, "seq_len": 8, "micro_batch": 1}]}
    device, allocator, runs = probe.load_plan(plan)
    assert (device, allocator) == ("cuda", "expandable")
    assert runs[0]["accumulation"] == 1 and runs[0]["precision"] == "bf16" and runs[0]["autocast"] is True
    assert runs[0]["lora_targets"] == "all" and runs[0]["lora_dropout"] == 0.0 and runs[0]["attn_impl"] == "sdpa"
    with pytest.raises(probe.PlanError, match="run 1: missing 'seq_len'"):
        probe.load_plan({"runs": [{"model": "m", "hf_config": LLAMA, "micro_batch": 1}]})
    with pytest.raises(probe.PlanError, match="micro_batch must be a whole number"):
        probe.load_plan({"runs": [{"model": "m", "hf_config": LLAMA, "seq_len": 8, "micro_batch": 0}]})
    with pytest.raises(probe.PlanError, match="model_type"):
        probe.load_plan({"runs": [{"model": "m", "hf_config": {}, "seq_len": 8, "micro_batch": 1}]})
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(probe.PlanError, match="cannot read plan"):
        probe.load_plan(bad)


def test_config_is_truncated_with_its_per_layer_lists():
    run = {"hf_config": dict(QWEN3, torch_dtype="bfloat16"), "num_layers": 2}
    kw = probe.hf_config_kwargs(run)
    assert kw["num_hidden_layers"] == 2 and kw["layer_types"] == ["full_attention"] * 2
    assert kw["use_cache"] is False and "torch_dtype" not in kw


def test_allocator_setting(monkeypatch):
    monkeypatch.setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:128,expandable_segments:True")
    probe.set_allocator("default")
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:128"
    probe.set_allocator("expandable")
    assert os.environ["PYTORCH_CUDA_ALLOC_CONF"] == "max_split_size_mb:128,expandable_segments:True"


def test_rows_from_a_tiny_plan_in_process(tmp_path, torch):
    out, log = io.StringIO(), io.StringIO()
    rows, failures = probe.run_plan(tiny_plan(tmp_path), out=out, log=log)
    assert failures == 0
    # The model shared by runs 1 and 3 is built once and measured first.
    assert [(r["seq_len"], r["micro_batch"], r["accumulation"]) for r in rows] == [(16, 1, 2), (32, 2, 1), (16, 2, 1)]
    assert [json.loads(line) for line in out.getvalue().splitlines()] == [json.loads(json.dumps(r)) for r in rows]
    llama, qwen3 = rows[0], rows[2]
    assert llama["num_layers"] == 1 and llama["precision"] == "fp32" and llama["autocast"] is False
    assert qwen3["grad_ckpt"] is True and qwen3["lora_targets"] == "q;v" and qwen3["lora_dropout"] == 0.05
    for r in rows:
        assert r["oom"] is False and r["step_time_s"] > 0 and r["micro_batch_time_s"] > 0
        assert r["stack"] == "hf-peft" and r["loop"] == "probe" and r["allocator"] == "default"
        assert "peak_reserved_bytes" not in r  # no CUDA, no memory figures
        # The run described: the CPU, one process, fixed-length random tokens.
        assert r["device"] == "cpu" and r["processes"] == 1 and r["device_memory_bytes"] > 0
        assert r["collation"] == "fixed" and r["real_tokens"] == r["micro_batch"] * r["seq_len"]
        assert r["padded_lengths"] == f"{r['seq_len']}:{2 * r['accumulation']}"  # 2 timed steps
    assert "[3/3]" in log.getvalue() and "probe: 3 of 3 runs" in log.getvalue()
    path = tmp_path / "probe.jsonl"
    path.write_text(out.getvalue())
    lorasim_validate(str(path))


def test_plain_loop_trains_the_same_adapters_without_trainer_extras(tmp_path, torch):
    plan = tiny_plan(tmp_path)
    plan["runs"] = [dict(plan["runs"][0], loop="plain"), dict(plan["runs"][0], loop="trainer")]
    rows, failures = probe.run_plan(plan, out=io.StringIO(), log=io.StringIO())
    assert failures == 0
    assert [r["loop"] for r in rows] == ["plain", "probe"]
    with pytest.raises(probe.PlanError, match="loop must be one of trainer, plain"):
        probe.load_plan({"runs": [dict(plan["runs"][0], loop="accelerate")]})


def test_module_entry_point_streams_rows(tmp_path):
    plan = tiny_plan(tmp_path)
    plan["runs"] = plan["runs"][:1]
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps(plan))
    env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR), OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, "-m", "lorasim_hf.probe", "--plan", str(plan_path)],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 1 and json.loads(lines[0])["micro_batch"] == 1
    assert "[1/1]" in proc.stderr


def test_missing_peft_is_one_line_and_exit_2(tmp_path):
    plan_path = tmp_path / "plan.json"
    plan_path.write_text(json.dumps({"device": "cpu", "runs": []}))
    code = ("import sys, importlib.abc\n"
            "class Hide(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path, target=None):\n"
            "        if name.split('.')[0] == 'peft':\n"
            "            raise ModuleNotFoundError(\"No module named 'peft'\", name='peft')\n"
            "sys.meta_path.insert(0, Hide())\n"
            "from lorasim_hf.probe import main\n"
            f"sys.exit(main(['--plan', {str(plan_path)!r}]))\n")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    assert proc.stderr == "error: missing python package peft (pip install peft==0.21.2)\n"
    assert proc.stdout == ""
