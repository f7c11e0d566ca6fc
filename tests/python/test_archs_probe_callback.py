"""Gemma 2 and Phi-3 through the probe and the Trainer callback (tiny random models, CPU): the LoRA
target names each model_type has (lorasim_hf.targets), the rows they write, and `lorasim validate`
reading those rows (the C++ side counts the same architectures)."""
import io
import json

import pytest

from conftest import lorasim_validate
from lorasim_hf import probe, targets
from test_callback import RandomTokens

GEMMA2 = {"model_type": "gemma2", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 4,
          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 128,
          "query_pre_attn_scalar": 16, "sliding_window": 8,
          "layer_types": ["sliding_attention", "full_attention"] * 2}
PHI3 = {"model_type": "phi3", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 4, "vocab_size": 128, "pad_token_id": 0,
        "bos_token_id": 1, "eos_token_id": 2}


def test_target_modules_per_model_type():
    assert targets.peft_target_modules("llama", "all") == ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj",
                                                             "up_proj", "down_proj"]
    assert targets.peft_target_modules("gemma2", ["q", "v"]) == ["q_proj", "v_proj"]
    assert targets.peft_target_modules("phi3", "all") == ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]
    assert targets.peft_target_modules("phi3", ["q", "k", "v", "down"]) == ["qkv_proj", "down_proj"]
    with pytest.raises(ValueError, match="phi3 fuses q, k, v into qkv_proj: adapt all of them"):
        targets.peft_target_modules("phi3", ["q", "v"])
    # Gemma 3's wrapper: the language model's modules only, not the vision tower's q/k/v.
    assert targets.peft_target_modules("gemma3", ["q", "o"]) == r".*language_model\..*\.(q_proj|o_proj)"
    assert targets.short_names(["qkv_proj", "gate_up_proj", "lm_head"]) == ["q", "k", "v", "gate", "up"]


def plan(tmp_path):
    gemma, phi = tmp_path / "gemma2.json", tmp_path / "phi3.json"
    gemma.write_text(json.dumps(GEMMA2))
    phi.write_text(json.dumps(PHI3))
    common = {"steps": 2, "warmup_steps": 1, "lora_rank": 4, "lora_alpha": 8, "seq_len": 16, "micro_batch": 2}
    return {"device": "cpu", "allocator": "default", "runs": [
        # Truncated to 2 of 4 layers (layer_types shrinks with it); 16 tokens > the window of 8.
        dict(common, model=str(gemma), hf_config=GEMMA2, num_layers=2, precision="fp32", autocast=False),
        dict(common, model=str(gemma), hf_config=GEMMA2, precision="bf16", attn_impl="eager", grad_ckpt=True),
        dict(common, model=str(phi), hf_config=PHI3, precision="fp32", autocast=False),
        dict(common, model=str(phi), hf_config=PHI3, precision="bf16", lora_targets=["q", "k", "v", "o"]),
    ]}


def test_probe_trains_gemma2_and_phi3_and_validate_reads_the_rows(tmp_path, torch):
    out, log = io.StringIO(), io.StringIO()
    rows, failures = probe.run_plan(plan(tmp_path), out=out, log=log)
    assert failures == 0, log.getvalue()
    assert len(rows) == 4
    for r in rows:
        assert r["oom"] is False and r["step_time_s"] > 0 and r["stack"] == "hf-peft"
    assert sorted(r["lora_targets"] for r in rows) == ["all", "all", "all", "q;k;v;o"]
    path = tmp_path / "probe.jsonl"
    path.write_text(out.getvalue())
    lorasim_validate(str(path))


def test_probe_refuses_part_of_a_fused_module(tmp_path, torch):
    p = plan(tmp_path)
    p["runs"] = [dict(p["runs"][2], lora_targets=["q", "v"])]
    with pytest.raises(probe.PlanError, match="phi3 fuses q, k, v into qkv_proj"):
        probe.run_plan(p, out=io.StringIO(), log=io.StringIO())


@pytest.mark.parametrize("cfg, modules, expected", [
    (PHI3, ["qkv_proj", "gate_up_proj"], "q;k;v;gate;up"),
    (PHI3, "all-linear", "all"),
    (GEMMA2, ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"], "all"),
])
def test_callback_rows_name_the_projections(tmp_path, torch, cfg, modules, expected):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM, Trainer, TrainingArguments
    from lorasim_hf import LorasimCallback
    kw = {k: v for k, v in cfg.items() if k != "model_type"}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(cfg["model_type"], **kw), dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=modules, task_type="CAUSAL_LM"))
    path = tmp_path / "runs.jsonl"
    cb = LorasimCallback(str(path), warmup_steps=2)
    targs = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=4, per_device_train_batch_size=2,
                              gradient_accumulation_steps=1, report_to=[], use_cpu=True, logging_strategy="no",
                              save_strategy="no", disable_tqdm=True, dataloader_num_workers=0)
    Trainer(model=model, args=targs, train_dataset=RandomTokens(torch, 16, 16, cfg["vocab_size"]),
            callbacks=[cb]).train()
    (line,) = path.read_text().splitlines()
    row = json.loads(line)
    assert row["lora_targets"] == expected
    lorasim_validate(str(path))


def test_callback_reads_a_pattern_limited_to_gemma3s_language_model(tmp_path, torch):
    # Gemma 3's wrapper: SigLIP has q_proj/k_proj/v_proj too; the pattern adapts the text decoder's
    # q and o only, and the row says so.
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM, Trainer, TrainingArguments
    from lorasim_hf import LorasimCallback
    cfg = AutoConfig.for_model(
        "gemma3", mm_tokens_per_image=4,
        text_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, head_dim=16, vocab_size=300, sliding_window=8),
        vision_config=dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
                           image_size=28, patch_size=14))
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32)
    pattern = targets.peft_target_modules("gemma3", ["q", "o"])
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=pattern, task_type="CAUSAL_LM"))
    assert not [n for n, _ in model.named_modules() if "vision" in n and "lora_A" in n]
    path = tmp_path / "runs.jsonl"
    cb = LorasimCallback(str(path), warmup_steps=2)
    targs = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=4, per_device_train_batch_size=2,
                              report_to=[], use_cpu=True, logging_strategy="no", save_strategy="no",
                              disable_tqdm=True, dataloader_num_workers=0)
    Trainer(model=model, args=targs, train_dataset=RandomTokens(torch, 16, 16, 300), callbacks=[cb]).train()
    (line,) = path.read_text().splitlines()
    row = json.loads(line)
    assert row["lora_targets"] == "q;o"
    config = json.loads((tmp_path / row["model"]).read_text())
    assert config["model_type"] == "gemma3" and "vision_config" in config
    lorasim_validate(str(path))
