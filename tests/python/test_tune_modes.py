"""lorasim_hf.tune's checkpointing modes and its refusals, on a tiny random Llama on the CPU with the
built lorasim binary: grad_ckpt="auto" weighs checkpointing on and off only where the trainer
leaves it at its default, an explicit choice is kept, and a base profile without bf16 is refused
for a bf16 trainer before any step."""
import json

import pytest

from test_tune import adapters, sft_tokenizer, sft_trainer, trainer_of, tune_of  # noqa: F401


def fake_memory(trainer, torch, without_ckpt_up_to, with_ckpt_up_to=None):
    """Out of memory above a micro-batch, one bound without checkpointing and one with; counts the steps."""
    real_step, calls = trainer.training_step, []

    def step(model, inputs, num_items_in_batch=None):
        calls.append(inputs["input_ids"].shape[0])
        on = trainer.model.is_gradient_checkpointing
        bound = with_ckpt_up_to if on else without_ckpt_up_to
        if bound is not None and inputs["input_ids"].shape[0] > bound:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (from the test)")
        return real_step(model, inputs, num_items_in_batch)

    trainer.training_step = step
    return calls


def test_the_default_is_told_from_an_explicit_choice(tmp_path, torch):
    from lorasim_hf.tune import checkpointing_at_default
    assert checkpointing_at_default(trainer_of(torch, tmp_path, 2, 4))  # TrainingArguments: False
    assert not checkpointing_at_default(trainer_of(torch, tmp_path, 2, 4, gradient_checkpointing=True))
    by_hand = trainer_of(torch, tmp_path, 2, 4)
    by_hand.model.gradient_checkpointing_enable()
    assert not checkpointing_at_default(by_hand)
    transformers = pytest.importorskip("transformers")
    tokenizer = sft_tokenizer(transformers)
    assert checkpointing_at_default(sft_trainer(torch, tmp_path, 2, 4, tokenizer))  # SFTConfig: True
    assert not checkpointing_at_default(sft_trainer(torch, tmp_path, 2, 4, tokenizer, gradient_checkpointing=False))


def test_auto_turns_checkpointing_on_where_it_lets_a_larger_micro_batch_run(tmp_path, torch, lorasim, capsys,
                                                                           steady_clock):
    tuned = trainer_of(torch, tmp_path, 1, 8)
    fake_memory(tuned, torch, without_ckpt_up_to=2, with_ckpt_up_to=8)
    result = tune_of(tuned, tmp_path, lorasim, max_trial_steps=10)
    trials = [line for line in capsys.readouterr().out.splitlines() if line.startswith("  trial")]
    # Without checkpointing (the prior's faster mode) down from 8x1 to 2x4, which runs; then with
    # it up from the smallest micro-batch that could beat 2x4 (4x2: 2x4 ran without, and is faster)
    # to 8x1, which runs. 1 + 1 + 2 + 2 + 3 steps, 1 left: no trial for the refit.
    assert trials == ["  trial 1: 8x1 no checkpointing, 1 step: out of memory",
                      "  trial 2: 4x2 no checkpointing, 1 step: out of memory",
                      "  trial 3: 2x4 no checkpointing, 2 steps: 0.0050 s/step +- 0.0%",
                      "  trial 4: 4x2 checkpointed, 2 steps: 0.0030 s/step +- 0.0%",
                      "  trial 5: 8x1 checkpointed, 3 steps: 0.0020 s/step +- 0.0%"]
    assert (result.micro_batch, result.accumulation, result.grad_ckpt) == (8, 1, True)
    assert tuned.args.gradient_checkpointing is True and result.trial_steps == 9
    rows = [json.loads(line) for line in open(result.rows_path)]
    assert [(r["micro_batch"], r["grad_ckpt"], r["oom"]) for r in rows] == [
        (8, False, True), (4, False, True), (2, False, False), (4, True, False), (8, True, False)]
    assert not tuned.model.is_gradient_checkpointing  # as before tune: train() turns it on
    tuned.train()
    plain = trainer_of(torch, tmp_path, 8, 1, gradient_checkpointing=True)
    plain.train()
    a, b = adapters(tuned.model), adapters(plain.model)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_an_explicit_choice_is_kept_and_grad_ckpt_true_or_false_sets_one(tmp_path, torch, lorasim, steady_clock):
    # The trainer asks for checkpointing: "auto" keeps it, and weighs nothing.
    kept = trainer_of(torch, tmp_path, 2, 4, gradient_checkpointing=True)
    result = tune_of(kept, tmp_path, lorasim, max_trial_steps=6)
    assert result.grad_ckpt is True and kept.args.gradient_checkpointing is True
    assert {r["grad_ckpt"] for r in result.table} == {None}  # one mode: the table has no checkpointing column
    assert all(json.loads(line)["grad_ckpt"] for line in open(result.rows_path))
    # tune's own grad_ckpt=True on a trainer left at its default: set, and every trial ran with it.
    forced = trainer_of(torch, tmp_path, 2, 4)
    result = tune_of(forced, tmp_path, lorasim, max_trial_steps=6, grad_ckpt=True)
    assert result.grad_ckpt is True and forced.args.gradient_checkpointing is True
    assert all(json.loads(line)["grad_ckpt"] for line in open(result.rows_path))
    # ... and grad_ckpt=False on a trainer that asked for it: off on the arguments.
    off = trainer_of(torch, tmp_path, 2, 4, gradient_checkpointing=True)
    result = tune_of(off, tmp_path, lorasim, max_trial_steps=6, grad_ckpt=False)
    assert result.grad_ckpt is False and off.args.gradient_checkpointing is False
    assert not any(json.loads(line)["grad_ckpt"] for line in open(result.rows_path))
    with pytest.raises(TypeError, match="grad_ckpt must be True, False or 'auto'"):
        tune_of(off, tmp_path, lorasim, grad_ckpt="false")


def test_a_profile_without_bf16_is_refused_for_a_bf16_trainer_before_any_step(tmp_path, torch, lorasim, capsys):
    from lorasim_hf import LorasimError
    trainer = trainer_of(torch, tmp_path, 2, 4, bf16=True)
    calls = fake_memory(trainer, torch, without_ckpt_up_to=None)
    with pytest.raises(LorasimError, match=r"the trainer trains in bf16 \(its arguments say bf16=True\) but the "
                                           r"embedded profile 't4' \(gpu=\) is of the NVIDIA Tesla T4 16GB, which has "
                                           r"no bf16; train in fp16 \(fp16=True, bf16=False"):
        tune_of(trainer, tmp_path, lorasim, gpu="t4")
    assert calls == [] and capsys.readouterr().out == ""
    assert trainer.args.per_device_train_batch_size == 2
    # A profile file is read the same way: its [gpu] table says bf16_supported.
    t4 = tmp_path / "t4.toml"
    t4.write_text('schema_version = 1\n[gpu]\nname = "t4"\ndisplay_name = "NVIDIA Tesla T4 16GB"\n'
                  'bf16_supported = false\n')
    with pytest.raises(LorasimError, match=r"but the profile file .*t4.toml is of the NVIDIA Tesla T4 16GB"):
        tune_of(trainer, tmp_path, lorasim, gpu=None, profile=str(t4))
    # An fp16 trainer on the T4 profile is tuned.
    fp16 = trainer_of(torch, tmp_path, 2, 4)
    result = tune_of(fp16, tmp_path, lorasim, gpu="t4", max_trial_steps=4, grad_ckpt=False, verbose=False)
    assert result.micro_batch * result.accumulation == 8


def test_the_first_line_names_the_profile_and_the_trials_print_before_the_table(tmp_path, torch, lorasim, capsys):
    result = tune_of(trainer_of(torch, tmp_path, 2, 2), tmp_path, lorasim, max_trial_steps=4, grad_ckpt=False)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "lorasim tune: starting from the embedded profile 'h200' (gpu=); effective batch 4; at most 4 " \
                     "trial optimizer steps"
    table = out.index(f"lorasim tune: {result.micro_batch}x{result.accumulation} (per_device_train_batch_size x "
                      "gradient_accumulation_steps)")
    trials = [i for i, line in enumerate(out) if line.startswith("  trial ")]
    assert trials and max(trials) < table
    assert any(line.startswith("lorasim tune: measured fastest: ") or "within the noise" in line
               for line in out[max(trials):table])
