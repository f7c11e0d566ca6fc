"""lorasim_hf.tune on a tiny random Llama (and Qwen3 under TRL's SFTTrainer), on the CPU, with the
built lorasim binary: the split it sets keeps the effective batch and the trial budget, and
training after it is bit-identical to training with that split and no tune."""
import json
import random

import pytest

from conftest import Tokens, LLAMA, QWEN3, lorasim_binary, lorasim_validate






def peft_model(torch, config=LLAMA, dropout=0.1):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM
    kw = {k: v for k, v in config.items() if k != "model_type"}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(config["model_type"], **kw), dtype=torch.float32)
    return get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"],
                                            lora_dropout=dropout, task_type="CAUSAL_LM"))


def trainer_of(torch, tmp_path, micro_batch, accumulation, max_steps=3, **args):
    """A Trainer with dropout (so the RNG matters) over a shuffled dataset (so the data order does)."""
    from transformers import Trainer, TrainingArguments
    targs = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=max_steps,
                              per_device_train_batch_size=micro_batch, gradient_accumulation_steps=accumulation,
                              report_to=[], use_cpu=True, logging_strategy="no", save_strategy="no",
                              disable_tqdm=True, dataloader_num_workers=0, **args)
    return Trainer(model=peft_model(torch), args=targs, train_dataset=Tokens(torch, 40, 16, LLAMA["vocab_size"]))


def adapters(model):
    return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}


def tune_of(trainer, tmp_path, lorasim, **kw):
    from lorasim_hf.tune import tune  # the function (importing the submodule rebinds the package name)
    kw.setdefault("gpu", "h200")
    return tune(trainer, lorasim=lorasim, cache_dir=str(tmp_path / "cache"), **kw)


def test_the_split_is_set_the_effective_batch_kept_and_the_trials_within_budget(tmp_path, torch, lorasim):
    trainer = trainer_of(torch, tmp_path, 1, 8)
    result = tune_of(trainer, tmp_path, lorasim, max_trial_steps=7)
    assert result.micro_batch * result.accumulation == 8
    assert 2 <= result.trial_steps <= 7
    assert trainer.args.per_device_train_batch_size == result.micro_batch
    assert trainer.args.gradient_accumulation_steps == result.accumulation
    assert trainer._train_batch_size == result.micro_batch  # what train() starts its loop from
    tried = [r for r in result.table if r["tried"]]
    assert 1 <= len(tried) <= 3 and all(r["measured_step_time_s"] > 0 for r in tried)
    # gradient_checkpointing left at its default: both settings are weighed, every split twice in the table.
    assert sorted((r["micro_batch"], r["accumulation"], r["grad_ckpt"]) for r in result.table) == sorted(
        (b, 8 // b, ckpt) for b in (1, 2, 4, 8) for ckpt in (False, True))
    # The prior's pick (8x1: everything fits on the H200) is tried first; the rows are lorasim's
    # format (its C++ reader parses them).
    rows = [json.loads(line) for line in open(result.rows_path)]
    assert rows[0]["micro_batch"] == 8 and not rows[0]["grad_ckpt"]
    assert all(r["stack"] == "hf-peft" and r["lora_targets"] == "q;v;down" for r in rows)
    lorasim_validate(result.rows_path)


@pytest.mark.parametrize("args", [{"gradient_checkpointing": True}, {"bf16": True}], ids=["ckpt", "bf16-autocast"])
def test_training_after_tune_is_bit_identical_to_training_with_its_split(tmp_path, torch, lorasim, args):
    tuned = trainer_of(torch, tmp_path, 1, 8, **args)
    seen = []  # whether each forward of a decoder layer ran under autocast (a read-only hook)
    layer = tuned.model.get_base_model().model.layers[0]
    hook = layer.register_forward_pre_hook(lambda m, a: seen.append(torch.is_autocast_enabled("cpu")))
    result = tune_of(tuned, tmp_path, lorasim, max_trial_steps=10)
    hook.remove()
    rows = [json.loads(line) for line in open(result.rows_path)]
    assert all(r["autocast"] == bool(args.get("bf16")) for r in rows)
    assert seen and set(seen) == {bool(args.get("bf16"))}  # the trials ran as train() will
    assert tuned.args.gradient_checkpointing == result.grad_ckpt
    tuned.train()
    plain = trainer_of(torch, tmp_path, result.micro_batch, result.accumulation,
                       **dict(args, gradient_checkpointing=result.grad_ckpt))
    plain.train()
    a, b = adapters(tuned.model), adapters(plain.model)
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a), [k for k in a if not torch.equal(a[k], b[k])]
    # ... and training did move the adapters (a test of no training at all would pass the line above).
    untrained = adapters(peft_model(torch))
    assert any(not torch.equal(a[k], untrained[k]) for k in a)


def test_rng_weights_optimizer_and_trainer_state_are_as_before(tmp_path, torch, lorasim):
    import numpy
    trainer = trainer_of(torch, tmp_path, 2, 4)
    random.seed(7), numpy.random.seed(7), torch.manual_seed(7)
    rng = (random.getstate(), numpy.random.get_state()[1].copy(), torch.get_rng_state().clone())
    params = {n: p for n, p in trainer.model.named_parameters() if p.requires_grad}
    storage = {n: p.data_ptr() for n, p in params.items()}
    weights = adapters(trainer.model)
    trainer.model.eval()
    tune_of(trainer, tmp_path, lorasim)
    assert random.getstate() == rng[0]
    assert (numpy.random.get_state()[1] == rng[1]).all()
    assert torch.equal(torch.get_rng_state(), rng[2])
    assert all(p.data_ptr() == storage[n] and torch.equal(p, weights[n]) and p.grad is None
               for n, p in params.items())
    assert trainer.optimizer is None and trainer.lr_scheduler is None and trainer.state.global_step == 0
    assert not trainer.model.training and not hasattr(trainer, "current_gradient_accumulation_steps")
    assert "forward" not in vars(trainer.model)  # the trials' autocast wrapper is gone


def test_a_pick_that_runs_out_of_memory_walks_down_and_is_not_set(tmp_path, torch, lorasim, recwarn, steady_clock):
    trainer = trainer_of(torch, tmp_path, 1, 8)
    real_step = trainer.training_step

    def step(model, inputs, num_items_in_batch=None):
        if inputs["input_ids"].shape[0] >= 8:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (from the test)")
        return real_step(model, inputs, num_items_in_batch)

    trainer.training_step = step
    result = tune_of(trainer, tmp_path, lorasim, max_trial_steps=10, grad_ckpt=False)
    by_split = {(r["micro_batch"], r["accumulation"]): r for r in result.table}
    assert by_split[(8, 1)]["tried"] and by_split[(8, 1)]["oom"] is True
    rows = [json.loads(line) for line in open(result.rows_path)]
    # The prior's 8x1 runs out of memory in its first step; the walk goes down to 4x2, which runs;
    # then two smaller splits for the refit: 1 + 2 + 2 + 2 steps.
    assert [(r["micro_batch"], r["oom"]) for r in rows] == [(8, True), (4, False), (2, False), (1, False)]
    assert "step_time_s" not in rows[0] and result.trial_steps == 7 and result.profile_path
    assert (result.micro_batch, result.accumulation) == (4, 2)  # 3 ms a step against 5 and 9
    assert all(p.grad is None for p in trainer.model.parameters())
    # lorasim recommend --measured matched every trial row to the workload (else tune warns).
    assert not [w for w in recwarn if "did not match" in str(w.message)]


def test_the_search_walks_up_from_a_cautious_prior_to_the_out_of_memory(tmp_path, torch, lorasim, capsys,
                                                                        steady_clock, monkeypatch):
    # A cautious prior (its worst case fits only 1x16): the trials walk up until 16x1 runs out of
    # memory (faked above 8), and set 8x2 -- a micro-batch the prior refused.
    import importlib
    tune = importlib.import_module("lorasim_hf.tune").tune  # the module's: the package's `tune` is the function
    flow = importlib.import_module("lorasim_hf.tune_flow")  # where every framework's tuner predicts
    real_predict = flow.predict

    def cautious(*args, **kw):
        p = real_predict(*args, **kw)
        for s in p["splits"]:
            s["fits"] = s["micro_batch"] == 1
        p["recommended"] = next(dict(s) for s in p["splits"] if s["micro_batch"] == 1)
        return p

    monkeypatch.setattr(flow, "predict", cautious)
    trainer = trainer_of(torch, tmp_path, 1, 16)
    real_step = trainer.training_step

    def step(model, inputs, num_items_in_batch=None):
        if inputs["input_ids"].shape[0] > 8:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (from the test)")
        return real_step(model, inputs, num_items_in_batch)

    trainer.training_step = step
    result = tune(trainer, gpu="h200", lorasim=lorasim, cache_dir=str(tmp_path / "cache"), max_trial_steps=10,
                  grad_ckpt=False)
    out = capsys.readouterr().out.splitlines()
    trials = [line for line in out if line.startswith("  trial")]
    # Each step: accumulation + 1 ms (the steady clock); 16x1 runs out of memory in its first step.
    assert trials == ["  trial 1: 1x16, 2 steps: 0.0170 s/step +- 0.0%",
                      "  trial 2: 2x8, 2 steps: 0.0090 s/step +- 0.0%",
                      "  trial 3: 4x4, 2 steps: 0.0050 s/step +- 0.0%",
                      "  trial 4: 8x2, 2 steps: 0.0030 s/step +- 0.0%",
                      "  trial 5: 16x1, 1 step: out of memory"]
    assert (result.micro_batch, result.accumulation) == (8, 2) and result.trial_steps == 9
    assert trainer.args.per_device_train_batch_size == 8 and trainer.args.gradient_accumulation_steps == 2
    assert out[0].startswith("lorasim tune: starting from the embedded profile 'h200' (gpu=); effective batch 16")
    assert "  the prior's pick: 1x16" in out[1]
    assert "lorasim tune: measured fastest: 8x2 at 0.0030 s/step" in out


def test_every_split_out_of_memory_is_an_error(tmp_path, torch, lorasim):
    from lorasim_hf import LorasimError
    trainer = trainer_of(torch, tmp_path, 1, 4)

    def step(model, inputs, num_items_in_batch=None):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory (from the test)")

    trainer.training_step = step
    with pytest.raises(LorasimError, match="every split tried ran out of memory"):
        tune_of(trainer, tmp_path, lorasim, max_trial_steps=8)
    assert trainer.args.per_device_train_batch_size == 1 and trainer.args.gradient_accumulation_steps == 4


def test_the_refined_profile_is_cached_and_is_the_next_base(tmp_path, torch, lorasim, steady_clock):
    # Three splits tried (lorasim fit needs three runs that did not run out of memory): 4x1 (the
    # prior's pick, 3 steps), then 2x2 and 1x4 (2 each) for the refit.
    first = tune_of(trainer_of(torch, tmp_path, 2, 2), tmp_path, lorasim, max_trial_steps=7, grad_ckpt=False)
    assert sum(r["tried"] for r in first.table) == 3 and first.trial_steps == 7
    cached = [p for p in (tmp_path / "cache").rglob("profile.toml") if p.parent.name != "runs"]
    assert first.profile_path and any(p.read_text() == open(first.profile_path).read() for p in cached)
    # On the CPU a base is required, unless a refined one is cached for this device and versions.
    from lorasim_hf.tune import tune  # the function (importing the submodule rebinds the package name)
    with pytest.raises(ValueError, match="on the CPU needs gpu="):
        tune(trainer_of(torch, tmp_path, 2, 2), lorasim=lorasim, cache_dir=str(tmp_path / "empty"))
    second = tune(trainer_of(torch, tmp_path, 2, 2), lorasim=lorasim, cache_dir=str(tmp_path / "cache"),
                  max_trial_steps=4, verbose=False, grad_ckpt=False)
    assert second.micro_batch * second.accumulation == 4
    # gpu= given while a refined profile is cached: the cached one is the base, and tune says so.
    with pytest.warns(UserWarning, match=r"the refined profile cached for this device \(.*profile.toml\) replaces "
                                         r"gpu='t4'; to start from gpu= again, delete that file"):
        tune(trainer_of(torch, tmp_path, 2, 2), gpu="t4", lorasim=lorasim, cache_dir=str(tmp_path / "cache"),
             max_trial_steps=2, verbose=False, grad_ckpt=False)


def test_bad_arguments_are_refused_before_any_trial(tmp_path, torch, lorasim):
    from lorasim_hf.tune import set_split
    from lorasim_hf import LorasimError
    trainer = trainer_of(torch, tmp_path, 2, 4)
    with pytest.raises(ValueError, match="max_trial_steps must be >= 2"):
        tune_of(trainer, tmp_path, lorasim, max_trial_steps=1)
    with pytest.raises(TypeError, match="max_trial_steps must be a whole number"):
        tune_of(trainer, tmp_path, lorasim, max_trial_steps=4.5)
    with pytest.raises(ValueError, match="at most one of gpu="):
        tune_of(trainer, tmp_path, lorasim, profile="x.toml")
    with pytest.raises(LorasimError, match="not the effective batch 8"):
        set_split(trainer, 3, 2, 8)
    assert trainer.args.per_device_train_batch_size == 2


def sft_tokenizer(transformers):
    from tokenizers import Tokenizer, models, pre_tokenizers
    words = [f"w{i}" for i in range(QWEN3["vocab_size"] - 3)]
    vocab = {w: i for i, w in enumerate(["<unk>", "<pad>", "</s>"] + words)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                                                eos_token="</s>")


def sft_trainer(torch, tmp_path, micro_batch, accumulation, tokenizer, **args):
    trl = pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    gen = random.Random(3)
    texts = [" ".join(f"w{gen.randrange(100)}" for _ in range(gen.randint(4, 30))) for _ in range(48)]
    config = trl.SFTConfig(output_dir=str(tmp_path / "sft"), max_steps=3, per_device_train_batch_size=micro_batch,
                           gradient_accumulation_steps=accumulation, max_length=24, report_to=[], use_cpu=True,
                           logging_strategy="no", save_strategy="no", disable_tqdm=True, bf16=False,
                           dataloader_num_workers=0, **args)
    return trl.SFTTrainer(model=peft_model(torch, QWEN3), args=config, processing_class=tokenizer,
                          train_dataset=datasets.Dataset.from_dict({"text": texts}))


def test_sfttrainer_on_data_of_many_lengths_is_tuned_and_bit_identical(tmp_path, torch, lorasim):
    transformers = pytest.importorskip("transformers")
    tokenizer = sft_tokenizer(transformers)
    tuned = sft_trainer(torch, tmp_path, 1, 8, tokenizer)
    result = tune_of(tuned, tmp_path, lorasim, max_trial_steps=8)
    assert result.micro_batch * result.accumulation == 8 and result.trial_steps <= 8
    rows = [json.loads(line) for line in open(result.rows_path)]
    # SFTConfig's defaults: checkpointing (left at its default: weighed on and off) and TRL's fused LM head.
    assert {r["grad_ckpt"] for r in result.table} == {False, True}
    assert all(r["fused_lm_head"] for r in rows)
    assert not any(tuned._metrics["train"].values()) and tuned._total_train_tokens == 0  # no trial in its logs
    assert all(r["seq_len"] <= 24 for r in rows)
    lengths = open(result.rows_path.replace("rows.jsonl", "lengths.csv")).read().splitlines()
    assert lengths[0] == "length,count" and len(lengths) > 2  # many lengths: a --lengths file, not --seq-len
    assert tuned.args.gradient_checkpointing == result.grad_ckpt
    tuned.train()
    plain = sft_trainer(torch, tmp_path, result.micro_batch, result.accumulation, tokenizer,
                        gradient_checkpointing=result.grad_ckpt)
    plain.train()
    a, b = adapters(tuned.model), adapters(plain.model)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_an_untried_pick_is_set_only_below_a_split_that_ran_and_clearly_faster():
    pytest.importorskip("torch")
    from lorasim_hf.tune_pick import final_split
    from lorasim_hf.tune_search import Measured, Split

    def results():
        return {Split(4, 2): Measured(Split(4, 2), 2, micro_batch_times_s=[0.15, 0.15, 0.15], optimizer_times_s=[0.0]),
                Split(2, 4): Measured(Split(2, 4), 2, micro_batch_times_s=[0.125] * 7, optimizer_times_s=[0.0])}

    def pick(b, time_s):
        return {None: {"recommended": {"micro_batch": b, "accumulation": 8 // b, "step_time_s": time_s},
                       "splits": [{"micro_batch": k, "accumulation": 8 // k, "fits": True} for k in (1, 2, 4, 8)]}}

    # Measured: 4x2 0.30 s, 2x4 0.50 s. lorasim's pick of a tried split: the noise rule's choice.
    assert final_split(results(), pick(4, 0.30), True, 8)[0] == Split(4, 2)
    # An untried 1x8 predicted 10% faster than the best measured, under a refined profile: set.
    split, lines = final_split(results(), pick(1, 0.27), True, 8)
    assert split == Split(1, 8) and "predicts 1x8 (not tried) at 0.2700 s/step, 10% faster" in lines[-1]
    # ... but not 2% faster (within the noise threshold), not unrefined, not above every split that ran.
    assert final_split(results(), pick(1, 0.294), True, 8)[0] == Split(4, 2)
    assert final_split(results(), pick(1, 0.27), False, 8)[0] == Split(4, 2)
    assert final_split(results(), pick(8, 0.10), True, 8)[0] == Split(4, 2)
    # A measured peak lorasim calls over the usable memory is not set; without a measured peak
    # (the CPU) the trial that ran outranks the prediction.
    over = results()
    over[Split(4, 2)].peak_bytes = 10 * 2**30
    p = pick(4, 0.30)
    p[None]["splits"][2]["fits"] = False
    assert final_split(over, p, True, 8)[0] == Split(2, 4)
    assert final_split(results(), p, True, 8)[0] == Split(4, 2)
    # A trial that ran under the limit training runs under (a capped allocator fills its cap before it
    # frees cached blocks, so its peak sits at the cap) has shown that it fits: it stands.
    over = results()
    over[Split(4, 2)].peak_bytes = 10 * 2**30
    assert final_split(over, p, True, 8, ran_under_limit=True)[0] == Split(4, 2)


def test_the_device_name_gives_the_embedded_profile_and_the_cache_key(torch):
    import peft
    import transformers
    from lorasim_hf.tune_cache import cache_key, embedded_gpu
    assert embedded_gpu("Tesla T4") == "t4"
    assert embedded_gpu("NVIDIA L4") == "l4" and embedded_gpu("NVIDIA L40S") is None
    assert embedded_gpu("NVIDIA A100-SXM4-80GB") == "a100-80gb"
    assert embedded_gpu("NVIDIA A100-PCIE-40GB", 40 * 2**30) == "a100-40gb"
    assert embedded_gpu("NVIDIA H100 80GB HBM3") == "h100-sxm" and embedded_gpu("NVIDIA H200") == "h200"
    assert embedded_gpu("NVIDIA A10G") == "a10g" and embedded_gpu("NVIDIA GeForce RTX 4090") is None
    key = cache_key(torch.device("cpu"))
    assert key == (f"cpu__torch-{torch.__version__}__transformers-{transformers.__version__}"
                   f"__peft-{peft.__version__}")
