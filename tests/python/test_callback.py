import json
import os

import pytest

from conftest import LLAMA, lorasim_validate


class RandomTokens:
    def __init__(self, torch, n, seq_len, vocab):
        self.ids = torch.randint(0, vocab, (n, seq_len), generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def train(torch, tmp_path, callback, max_steps=4, **args):
    """A short Trainer run of a tiny Llama with LoRA r=4 on q,v (dropout 0.05); returns the PEFT model."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM, Trainer, TrainingArguments
    kw = {k: v for k, v in LLAMA.items() if k != "model_type"}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model("llama", **kw), dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                             lora_dropout=0.05, task_type="CAUSAL_LM"))
    targs = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=max_steps, per_device_train_batch_size=2,
                              gradient_accumulation_steps=2, report_to=[], use_cpu=True, logging_strategy="no",
                              save_strategy="no", disable_tqdm=True, dataloader_num_workers=0, **args)
    Trainer(model=model, args=targs, train_dataset=RandomTokens(torch, 32, 16, LLAMA["vocab_size"]),
            callbacks=[callback]).train()
    return model


def test_row_from_a_trainer_run(tmp_path, torch):
    from lorasim_hf import LorasimCallback
    path = tmp_path / "runs.jsonl"
    cb = LorasimCallback(str(path), warmup_steps=2)
    train(torch, tmp_path, cb, gradient_checkpointing=True)
    (line,) = path.read_text().splitlines()
    row = json.loads(line)
    assert row == cb.row
    config_path = row.pop("model")
    assert config_path == os.path.abspath(str(path) + ".configs/llama.json")
    config = json.loads(open(config_path).read())
    assert config["model_type"] == "llama" and config["hidden_size"] == 32 and config["rope_theta"] == 10000.0
    assert row.pop("step_time_s") > 0
    assert row == {"seq_len": 16, "micro_batch": 2, "accumulation": 2, "grad_ckpt": True, "lora_rank": 4,
                   "lora_alpha": 8.0, "lora_targets": "q;v", "precision": "fp32", "oom": False, "stack": "hf-peft",
                   "attn_impl": "sdpa", "lora_dropout": 0.05, "allocator": "default", "autocast": False,
                   "loop": "trainer", "fused_lm_head": False}
    lorasim_validate(str(path))


def test_preset_name_csv_and_too_few_steps(tmp_path, torch):
    from lorasim_hf import LorasimCallback
    path = tmp_path / "runs.csv"
    cb = LorasimCallback(str(path), warmup_steps=1, model_name="tiny")
    train(torch, tmp_path, cb, max_steps=2, bf16=True)
    header, line = path.read_text().splitlines()
    row = dict(zip(header.split(","), line.split(",")))
    assert row["model"] == "tiny" and row["autocast"] == "true" and row["grad_ckpt"] == "false"
    assert not os.path.exists(str(path) + ".configs")
    # Nothing after the warm-up: a warning, no row.
    cb = LorasimCallback(str(path), warmup_steps=5, model_name="tiny")
    with pytest.warns(UserWarning, match="no step after the 5 warm-up steps"):
        train(torch, tmp_path, cb, max_steps=2)
    assert len(path.read_text().splitlines()) == 2


def test_allocator_from_env():
    from lorasim_hf.callback import allocator_from_env
    assert allocator_from_env({}) == "default"
    assert allocator_from_env({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}) == "expandable"
    assert allocator_from_env({"PYTORCH_ALLOC_CONF": "max_split_size_mb:64, expandable_segments:true"}) == "expandable"
    assert allocator_from_env({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}) == "default"


def test_training_is_unchanged(tmp_path, torch):
    from lorasim_hf import LorasimCallback
    from transformers import TrainerCallback

    def adapters(callback, sub):
        model = train(torch, tmp_path / sub, callback, max_steps=3)
        return {n: p.detach().clone() for n, p in model.named_parameters() if p.requires_grad}

    watched = adapters(LorasimCallback(str(tmp_path / "runs.jsonl"), warmup_steps=1, model_name="tiny"), "a")
    plain = adapters(TrainerCallback(), "b")
    assert watched.keys() == plain.keys()
    assert all(torch.equal(watched[n], plain[n]) for n in plain)


def test_fused_lm_head_is_recognised_by_trls_patched_forward(torch):
    from lorasim_hf.callback import fused_lm_head
    import types
    import transformers
    model = transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(**{k: v for k, v in LLAMA.items() if k != "model_type"}))
    assert fused_lm_head(model) is False

    def _fused_forward(self, *args, fused_lm_head=False, **kwargs):  # the name TRL's add_fused_lm_head gives it
        return None
    model.forward = types.MethodType(_fused_forward, model)
    assert fused_lm_head(model) is True
