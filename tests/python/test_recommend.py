import json
import os
import stat
import sys

import pytest

from lorasim_hf import LorasimError, training_arguments

RESULT = {"splits": [{"micro_batch": 1, "accumulation": 8, "fits": True}, {"micro_batch": 8, "accumulation": 1,
                                                                          "fits": False}],
          "recommended": {"micro_batch": 4, "accumulation": 2, "step_time_s": 0.5,
                          "hf_args": "--per_device_train_batch_size 4 --gradient_accumulation_steps 2"},
          "usable_memory_bytes": 16 * 2**30, "notes": []}


def fake_lorasim(tmp_path, result=RESULT, exit_code=0, stderr=""):
    """A `lorasim` that records its arguments and prints `result` as `recommend --format json` does."""
    args_file = tmp_path / "args.json"
    script = tmp_path / "lorasim"
    script.write_text(f"#!{sys.executable}\n"
                      "import json, sys\n"
                      f"json.dump(sys.argv[1:], open({str(args_file)!r}, 'w'))\n"
                      f"sys.stderr.write({stderr!r})\n"
                      f"print(json.dumps({result!r}))\n"
                      f"sys.exit({exit_code})\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script), args_file


def test_recommended_split_as_training_arguments(tmp_path):
    exe, args_file = fake_lorasim(tmp_path)
    kw = training_arguments(model="qwen3-1.7b", effective_batch=8, seq_len=512, gpu="l4", grad_ckpt=True,
                            lora_targets=["q", "v"], lorasim=exe)
    assert kw == {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2}
    assert json.loads(args_file.read_text()) == [
        "recommend", "--format", "json", "--model", "qwen3-1.7b", "--effective-batch", "8", "--seq-len", "512",
        "--gpu", "l4", "--grad-ckpt", "--lora-targets", "q,v"]


def test_stack_options_are_passed_only_when_given(tmp_path, monkeypatch):
    exe, args_file = fake_lorasim(tmp_path)
    monkeypatch.setenv("LORASIM", exe)  # found through $LORASIM
    config = tmp_path / "config.json"
    training_arguments(model=str(config), effective_batch=16, seq_len=1024, profile="my.toml", stack="hf-peft",
                       attn_impl="sdpa", lora_dropout=0.05, allocator="default", autocast=False)
    assert json.loads(args_file.read_text())[3:] == [
        "--model-config", str(config), "--effective-batch", "16", "--seq-len", "1024", "--profile", "my.toml",
        "--stack", "hf-peft", "--attn-impl", "sdpa", "--lora-dropout", "0.05", "--allocator", "default",
        "--autocast", "false"]


def test_nothing_fits_missing_binary_and_failures_are_clear(tmp_path, monkeypatch):
    exe, _ = fake_lorasim(tmp_path, result=dict(RESULT, recommended=None))
    with pytest.raises(LorasimError, match="no split of effective batch 8 at 512 tokens fits in 16.0 GiB usable"):
        training_arguments(model="qwen3-8b", effective_batch=8, seq_len=512, gpu="t4", lorasim=exe)
    monkeypatch.delenv("LORASIM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(LorasimError, match="lorasim binary 'lorasim' not found"):
        training_arguments(model="qwen3-8b", effective_batch=8, seq_len=512, gpu="t4")
    bad = tmp_path / "bad"
    bad.mkdir()
    exe, _ = fake_lorasim(bad, exit_code=2, stderr="error: unknown GPU 'h300' (see `lorasim profiles`)\n")
    with pytest.raises(LorasimError, match="recommend failed: error: unknown GPU 'h300'"):
        training_arguments(model="qwen3-8b", effective_batch=8, seq_len=512, gpu="h300", lorasim=exe)
    with pytest.raises(ValueError, match="exactly one of gpu"):
        training_arguments(model="qwen3-8b", effective_batch=8, seq_len=512, lorasim=exe)


def test_with_the_real_binary():
    from conftest import lorasim_binary
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/lorasim or $LORASIM)")
    kw = training_arguments(model="qwen3-1.7b", effective_batch=16, seq_len=512, gpu="h200", lorasim=exe)
    assert kw["per_device_train_batch_size"] * kw["gradient_accumulation_steps"] == 16


def test_stack_options_reach_the_real_binary():
    from conftest import lorasim_binary
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/lorasim or $LORASIM)")
    kw = training_arguments(model="qwen3-1.7b", effective_batch=16, seq_len=512, gpu="h200", stack="hf-peft",
                            attn_impl="eager", lora_dropout=0.05, allocator="expandable", autocast=False,
                            lorasim=exe)
    assert kw["per_device_train_batch_size"] * kw["gradient_accumulation_steps"] == 16
    with pytest.raises(LorasimError, match="--lora-dropout: the lorasim stack has no LoRA dropout"):
        training_arguments(model="qwen3-1.7b", effective_batch=16, seq_len=512, gpu="h200", stack="lorasim",
                           lora_dropout=0.05, lorasim=exe)


@pytest.mark.parametrize("arg, value", [("effective_batch", 4.7), ("seq_len", 64.9), ("effective_batch", True),
                                        ("seq_len", "64"), ("lora_rank", 8.0)])
def test_non_integer_sizes_are_refused_by_name(tmp_path, arg, value):
    exe, args_file = fake_lorasim(tmp_path)
    kw = dict(model="qwen3-1.7b", effective_batch=4, seq_len=64, gpu="h200", lorasim=exe)
    kw[arg] = value
    with pytest.raises(TypeError, match=rf"^{arg} must be a whole number \(int\), got {value!r}"):
        training_arguments(**kw)
    assert not args_file.exists()  # lorasim never ran


def test_sizes_below_one_are_refused(tmp_path):
    exe, _ = fake_lorasim(tmp_path)
    with pytest.raises(ValueError, match="^effective_batch must be >= 1, got 0"):
        training_arguments(model="qwen3-1.7b", effective_batch=0, seq_len=64, gpu="h200", lorasim=exe)


@pytest.mark.parametrize("arg", ["grad_ckpt", "autocast", "fused_lm_head"])
@pytest.mark.parametrize("value", ["false", "true", 0, 1])
def test_booleans_must_be_booleans(tmp_path, arg, value):
    exe, args_file = fake_lorasim(tmp_path)
    with pytest.raises(TypeError, match=rf"^{arg} must be True or False, got {value!r}"):
        training_arguments(model="qwen3-1.7b", effective_batch=4, seq_len=64, gpu="h200", lorasim=exe,
                           **{arg: value})
    assert not args_file.exists()


def test_numpy_style_integers_are_whole_numbers(tmp_path):
    import numbers

    class Int64(int):  # what numpy.int64 is to numbers.Integral
        pass
    assert isinstance(Int64(8), numbers.Integral)
    exe, args_file = fake_lorasim(tmp_path)
    training_arguments(model="qwen3-1.7b", effective_batch=Int64(8), seq_len=Int64(512), gpu="h200", lorasim=exe)
    assert json.loads(args_file.read_text())[5:9] == ["--effective-batch", "8", "--seq-len", "512"]


def test_an_unknown_preset_is_refused_by_the_real_binary():
    from conftest import lorasim_binary
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/lorasim or $LORASIM)")
    with pytest.raises(LorasimError, match="unknown model 'qwen3-1.7B', did you mean 'qwen3-1.7b'"):
        training_arguments(model="qwen3-1.7B", effective_batch=16, seq_len=512, gpu="h200", lorasim=exe)
