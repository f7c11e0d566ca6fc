"""What a Python user hands training_arguments (issue 29): Hugging Face objects and names as
`model`, TrainingArguments / SFTConfig as `args`, and the advice when nothing fits -- against a
fake `lorasim` that records its command line, and the docs' example against the real one."""
import ast
import json
import os
import re
import stat
import sys

import pytest

from conftest import QWEN3, lorasim_binary
from lorasim_hf import LorasimError, training_arguments

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPLIT = {"per_device_train_batch_size": 4, "gradient_accumulation_steps": 2, "gradient_checkpointing": True,
         "bf16": False, "fp16": True}
RESULT = {"recommended": {"micro_batch": 4, "accumulation": 2, "training_arguments": SPLIT},
          "usable_memory_bytes": 16 * 2**30, "notes": []}
PRESETS = [{"name": n} for n in ("qwen3-1.7b", "llama-3.1-8b", "tiny")]


@pytest.fixture
def fake(tmp_path):
    """A lorasim that answers `models` with PRESETS and `recommend` with RESULT (or the result file's),
    recording its arguments and the --model-config it was given."""
    d = tmp_path / "fake"
    d.mkdir()
    script = d / "lorasim"
    script.write_text(f"""#!{sys.executable}
import json, os, sys
d = {str(d)!r}
if sys.argv[1] == "models":
    print(json.dumps({PRESETS!r}))
    sys.exit(0)
json.dump(sys.argv[1:], open(os.path.join(d, "args.json"), "w"))
if "--model-config" in sys.argv:
    path = sys.argv[sys.argv.index("--model-config") + 1]
    open(os.path.join(d, "config.json"), "w").write(open(path).read())
result = os.path.join(d, "result.json")
print(open(result).read() if os.path.exists(result) else json.dumps({RESULT!r}))
""")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return d


def _call(fake, model, **kw):
    kw.setdefault("gpu", "t4")
    out = training_arguments(model, 8, 512, lorasim=str(fake / "lorasim"), **kw)
    return out, json.loads((fake / "args.json").read_text())


def _model_flag(args):
    i = args.index("--model") if "--model" in args else args.index("--model-config")
    return args[i:i + 2]


def _tiny_qwen3():
    from transformers import AutoConfig
    return AutoConfig.for_model(**QWEN3)


def test_a_pretrained_config_is_written_for_lorasim(fake):
    _, args = _call(fake, _tiny_qwen3())
    assert _model_flag(args)[0] == "--model-config"
    written = json.loads((fake / "config.json").read_text())
    assert written["model_type"] == "qwen3" and written["hidden_size"] == 32
    assert not os.path.exists(_model_flag(args)[1])  # a temporary file, removed after the call


def test_a_peft_model_gives_its_base_models_config(fake):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    model = get_peft_model(AutoModelForCausalLM.from_config(_tiny_qwen3()), LoraConfig(r=4, target_modules=["q_proj"]))
    _, args = _call(fake, model)
    assert _model_flag(args)[0] == "--model-config"
    assert json.loads((fake / "config.json").read_text())["num_hidden_layers"] == 3
    assert "--kbit-prepare" not in args  # a float base: no QLoRA recipe to say


def test_a_quantized_models_recipe_is_read_from_the_model(fake):
    # bitsandbytes needs CUDA; what quant_columns reads is what transformers sets on a 4-bit model.
    import torch
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_config(_tiny_qwen3())
    model.is_loaded_in_4bit = True
    model.config.quantization_config = {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                                        "bnb_4bit_use_double_quant": True, "bnb_4bit_compute_dtype": "bfloat16"}
    _, args = _call(fake, model)  # fp32 embeddings under bf16 compute: prepare_model_for_kbit_training ran
    assert args[args.index("--kbit-prepare") + 1] == "true"
    model.to(torch.bfloat16)  # as loaded: everything but the quantized weights in the compute dtype
    _, args = _call(fake, model)
    assert args[args.index("--kbit-prepare") + 1] == "false"
    assert args[args.index("--adapter-dtype") + 1] == "compute"  # its trainable weights are bf16, as SFTTrainer's
    _, args = _call(fake, model, kbit_prepare=True)  # what the caller says wins
    assert args[args.index("--kbit-prepare") + 1] == "true"


def test_the_tuners_flags_say_the_models_qlora_recipe():
    # tune (tune_workload) passes these: a prepared base and one as loaded predict differently.
    import torch
    from transformers import AutoModelForCausalLM
    from lorasim_hf.model_columns import quant_flags
    model = AutoModelForCausalLM.from_config(_tiny_qwen3())
    assert quant_flags(model) == ({}, [])  # a float base: nothing to say
    model.is_loaded_in_4bit = True
    model.config.quantization_config = {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4",
                                        "bnb_4bit_compute_dtype": "bfloat16"}
    row, flags = quant_flags(model)
    assert row["kbit_prepare"] is True and flags[:2] == ["--kbit-prepare", "true"]
    model.to(torch.bfloat16)
    assert quant_flags(model)[1][:2] == ["--kbit-prepare", "false"]


def test_a_save_pretrained_folder_and_a_peft_adapter_folder(fake, tmp_path):
    folder = tmp_path / "saved"
    _tiny_qwen3().save_pretrained(folder)
    _, args = _call(fake, str(folder))
    assert _model_flag(args) == ["--model-config", str(folder / "config.json")]
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "Qwen/Qwen3-1.7B"}))
    _, args = _call(fake, adapter)  # a PathLike too
    assert _model_flag(args) == ["--model", "qwen3-1.7b"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="has no config.json"):
        _call(fake, str(empty))


@pytest.mark.parametrize("hub_id, preset", [("Qwen/Qwen3-1.7B", "qwen3-1.7b"),
                                            ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b")])
def test_a_hub_id_with_a_preset_of_its_name(fake, hub_id, preset):
    _, args = _call(fake, hub_id)
    assert _model_flag(args) == ["--model", preset]


def test_a_hub_id_without_a_preset_says_what_to_pass(fake):
    with pytest.raises(ValueError, match=r"Hub id that no lorasim preset matches .*lorasim downloads nothing: pass its "
                                         r"config \(AutoConfig.from_pretrained\('org/Unknown-7B'\)\)"):
        _call(fake, "org/Unknown-7B")
    with pytest.raises(TypeError, match="model must be a preset name"):
        _call(fake, 42)


def test_args_come_back_with_the_split_set(fake, tmp_path):
    from transformers import TrainingArguments
    from trl import SFTConfig
    given = TrainingArguments(output_dir=str(tmp_path / "out"), learning_rate=3e-4, use_cpu=True)
    out, args = _call(fake, "qwen3-1.7b", args=given)
    assert isinstance(out, TrainingArguments) and out is not given
    assert {k: getattr(out, k) for k in SPLIT} == SPLIT
    assert out.learning_rate == 3e-4 and given.per_device_train_batch_size == 8  # the caller's is untouched
    assert "--trainer" not in args
    sft = SFTConfig(output_dir=str(tmp_path / "sft"), use_cpu=True)
    out, args = _call(fake, "qwen3-1.7b", args=sft)
    assert isinstance(out, SFTConfig) and out.gradient_accumulation_steps == 2
    assert args[args.index("--trainer") + 1] == "sft"  # an SFTConfig is SFTTrainer's defaults


def test_no_fit_advice_is_lorasims_in_this_apis_words(fake):
    note = "a 4-bit base would fit: with --quant nf4 micro-batch 1 x accumulation 8 takes 2 s per step"
    (fake / "result.json").write_text(json.dumps(dict(RESULT, recommended=None, notes=[note],
                                                      no_fit_advice=["grad_ckpt", "seq_len", "quant", "memory"])))
    with pytest.raises(LorasimError) as e:
        _call(fake, "qwen3-1.7b", grad_ckpt=False)
    assert str(e.value).endswith(f"try grad_ckpt='auto', a shorter seq_len, quant='nf4' ({note}) or a GPU with more "
                                 "memory")
    assert "effective batch" not in str(e.value).split("; try")[1]  # micro-batch 1 is already a split


def test_the_docs_l4_example_returns_what_the_docs_say():
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/cli/lorasim or $LORASIM)")
    text = open(os.path.join(ROOT, "docs", "python.md")).read()
    call = 'split = training_arguments(model="qwen3-1.7b", effective_batch=32, seq_len=1024, gpu="l4")\n'
    said = re.match(r"((?:# .*\n)+)", text[text.index(call) + len(call):]).group(1)
    expected = ast.literal_eval(said.replace("# ", "").replace("\n", " ").replace("False", "False").strip())
    assert training_arguments(model="qwen3-1.7b", effective_batch=32, seq_len=1024, gpu="l4", lorasim=exe) == expected
