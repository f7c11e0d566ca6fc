import json
import os
import stat
import sys

import pytest

from lorasim_hf import LorasimError, training_arguments

RESULT = {"splits": [{"micro_batch": 1, "accumulation": 8, "fits": True}, {"micro_batch": 8, "accumulation": 1,
                                                                          "fits": False}],
          "recommended": {"micro_batch": 4, "accumulation": 2, "grad_ckpt": True, "step_time_s": 0.5,
                          "hf_args": "--per_device_train_batch_size 4 --gradient_accumulation_steps 2 "
                                     "--gradient_checkpointing true --fp16 true",
                          "training_arguments": {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2,
                                                 "gradient_checkpointing": True, "bf16": False, "fp16": True}},
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
    assert kw == {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2, "gradient_checkpointing": True,
                  "bf16": False, "fp16": True}
    assert json.loads(args_file.read_text()) == [
        "recommend", "--format", "json", "--model", "qwen3-1.7b", "--effective-batch", "8", "--seq-len", "512",
        "--gpu", "l4", "--grad-ckpt", "true", "--lora-targets", "q,v"]


@pytest.mark.parametrize("grad_ckpt, flag", [(True, ["--grad-ckpt", "true"]), (False, ["--grad-ckpt", "false"]),
                                             ("auto", ["--grad-ckpt", "auto"]), (None, [])])
def test_grad_ckpt_is_said_either_way(tmp_path, grad_ckpt, flag):
    # recommend's own default is auto: False must reach it as false, not be left out.
    exe, args_file = fake_lorasim(tmp_path)
    training_arguments(model="qwen3-1.7b", effective_batch=8, seq_len=512, gpu="l4", grad_ckpt=grad_ckpt, lorasim=exe)
    assert json.loads(args_file.read_text())[11:] == flag


def test_trainer_preset_is_passed_and_checked(tmp_path):
    exe, args_file = fake_lorasim(tmp_path)
    training_arguments(model="qwen3-1.7b", effective_batch=8, seq_len=512, gpu="t4", trainer="sft", lorasim=exe)
    assert json.loads(args_file.read_text())[11:] == ["--trainer", "sft"]
    with pytest.raises(ValueError, match="trainer must be one of sft, trainer, loop, got 'SFTTrainer'"):
        training_arguments(model="qwen3-1.7b", effective_batch=8, seq_len=512, gpu="t4", trainer="SFTTrainer",
                           lorasim=exe)


def _with_arguments(**change):
    args = dict(RESULT["recommended"]["training_arguments"], **change)
    return dict(RESULT, recommended=dict(RESULT["recommended"], training_arguments=args))


@pytest.mark.parametrize("result, message", [
    (_with_arguments(per_device_train_batch_size=4.0), "per_device_train_batch_size=4.0: not a whole number"),
    (_with_arguments(gradient_accumulation_steps=True), "gradient_accumulation_steps=True: not a whole number"),
    (_with_arguments(gradient_checkpointing="true"), "gradient_checkpointing='true': not true or false"),
    (_with_arguments(fp16=1), "fp16=1: not true or false"),
    (_with_arguments(bf16=True), "both bf16 and fp16"),
    (dict(RESULT, recommended={"micro_batch": 4, "accumulation": 2}), "no training_arguments: the binary is older"),
])
def test_what_the_binary_gives_is_checked_before_it_is_returned(tmp_path, result, message):
    exe, _ = fake_lorasim(tmp_path, result=result)
    with pytest.raises(LorasimError, match=message):
        training_arguments(model="qwen3-1.7b", effective_batch=8, seq_len=512, gpu="l4", lorasim=exe)


def test_stack_options_are_passed_only_when_given(tmp_path, monkeypatch):
    exe, args_file = fake_lorasim(tmp_path)
    monkeypatch.setenv("LORASIM", exe)  # found through $LORASIM
    config = tmp_path / "config.json"
    config.write_text("{}")
    training_arguments(model=str(config), effective_batch=16, seq_len=1024, profile="my.toml", stack="hf-peft",
                       attn_impl="sdpa", lora_dropout=0.05, allocator="default", autocast=False)
    assert json.loads(args_file.read_text())[3:] == [
        "--model-config", str(config), "--effective-batch", "16", "--seq-len", "1024", "--profile", "my.toml",
        "--stack", "hf-peft", "--attn-impl", "sdpa", "--lora-dropout", "0.05", "--allocator", "default",
        "--autocast", "false"]


def test_nothing_fits_missing_binary_and_failures_are_clear(tmp_path, monkeypatch):
    exe, _ = fake_lorasim(tmp_path, result=dict(RESULT, recommended=None, no_fit_advice=["seq_len", "memory"]))
    with pytest.raises(LorasimError, match="no split of effective batch 8 at 512 tokens fits in 16.0 GiB usable "
                                           "with or without gradient checkpointing; try a shorter seq_len or a GPU "
                                           "with more memory$"):
        training_arguments(model="qwen3-8b", effective_batch=8, seq_len=512, gpu="t4", lorasim=exe)
    off = tmp_path / "off"
    off.mkdir()
    exe, _ = fake_lorasim(off, result=dict(RESULT, recommended=None, no_fit_advice=["grad_ckpt", "seq_len", "memory"]))
    with pytest.raises(LorasimError, match="fits in 16.0 GiB usable; try grad_ckpt='auto', a shorter"):
        training_arguments(model="qwen3-8b", effective_batch=8, seq_len=512, gpu="t4", grad_ckpt=False, lorasim=exe)
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
    assert kw["bf16"] is True and kw["fp16"] is False
    assert isinstance(kw["gradient_checkpointing"], bool)


def test_the_readme_example_carries_the_precision_a_t4_needs():
    """The README's Python example, as printed: `**split` alone sets what the prediction assumed."""
    from conftest import lorasim_binary
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/lorasim or $LORASIM)")
    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
    example = readme.split("```python\n", 1)[1].split("```", 1)[0]
    assert "bf16=True" not in example and "**split" in example and 'gpu="t4"' in example
    split = training_arguments(model="qwen3-1.7b", effective_batch=16, seq_len=512, gpu="t4", lorasim=exe)
    assert split["fp16"] is True and split["bf16"] is False  # a T4 has no bf16
    transformers = pytest.importorskip("transformers")
    import dataclasses
    fields = {f.name for f in dataclasses.fields(transformers.TrainingArguments)}
    assert set(split) <= fields
    # On this CPU the bf16 form of the same call constructs (fp16 needs a GPU).
    h200 = training_arguments(model="qwen3-1.7b", effective_batch=16, seq_len=512, gpu="h200", lorasim=exe)
    args = transformers.TrainingArguments(output_dir=os.devnull, use_cpu=True, **h200)
    assert args.bf16 and args.per_device_train_batch_size == h200["per_device_train_batch_size"]


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
    allowed = "True, False or 'auto'" if arg == "grad_ckpt" else "True or False"
    with pytest.raises(TypeError, match=rf"^{arg} must be {allowed}, got {value!r}"):
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
