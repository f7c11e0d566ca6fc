"""A quantized base (issue 18) in the Python helpers: recommend's quant options and its
BitsAndBytesConfig, the callback's detection of a bitsandbytes base, the rows' new columns, and the
probe's --quant refused where bitsandbytes cannot run."""
import json
import types

import pytest

from lorasim_hf import LorasimError, quantization_config, training_arguments
from lorasim_hf.rows import check_row
from test_recommend import RESULT, fake_lorasim

QLORA = dict(RESULT, recommended=dict(
    RESULT["recommended"],
    training_arguments=dict(RESULT["recommended"]["training_arguments"], optim="paged_adamw_8bit"),
    quantization_config={"load_in_4bit": True, "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True,
                         "bnb_4bit_compute_dtype": "bfloat16"}))


def test_quant_options_are_passed_and_optim_returned(tmp_path):
    exe, args_file = fake_lorasim(tmp_path, QLORA)
    kw = training_arguments(model="llama-3.1-8b", effective_batch=8, seq_len=1024, gpu="l4", quant="nf4",
                            double_quant=True, optim="paged_adamw_8bit", lorasim=exe)
    assert kw["optim"] == "paged_adamw_8bit"
    assert json.loads(args_file.read_text())[9:] == ["--gpu", "l4", "--quant", "nf4", "--double-quant", "true",
                                                     "--optim", "paged_adamw_8bit"]
    assert quantization_config(model="llama-3.1-8b", effective_batch=8, seq_len=1024, gpu="l4", quant="nf4",
                               lorasim=exe) == QLORA["recommended"]["quantization_config"]
    with pytest.raises(TypeError, match="double_quant must be True or False"):
        training_arguments(model="m", effective_batch=8, seq_len=8, gpu="l4", double_quant="true", lorasim=exe)


def test_no_fit_says_when_a_4bit_base_would(tmp_path):
    note = ("a 4-bit base would fit: with --quant nf4 (QLoRA) micro-batch 1 x accumulation 8 takes 22.9 s per step, "
            "peak 11.45 GiB reserved")
    exe, _ = fake_lorasim(tmp_path, dict(RESULT, recommended=None, notes=[note]))
    with pytest.raises(LorasimError, match=r"quant='nf4' \(a 4-bit base would fit"):
        training_arguments(model="llama-3.1-8b", effective_batch=8, seq_len=1024, gpu="l4", lorasim=exe)


def test_rows_take_the_quant_columns():
    row = check_row({"model": "m", "seq_len": 8, "micro_batch": 1, "step_time_s": 1.0, "quant": "nf4", "double_quant": True,
                     "kbit_prepare": True, "optim": "paged_adamw_8bit"})
    assert row["quant"] == "nf4" and row["optim"] == "paged_adamw_8bit"
    with pytest.raises(ValueError, match="column quant"):
        check_row({"model": "m", "seq_len": 8, "micro_batch": 1, "step_time_s": 1.0, "quant": "int4"})
    with pytest.raises(ValueError, match="column optim"):
        check_row({"model": "m", "seq_len": 8, "micro_batch": 1, "step_time_s": 1.0, "optim": "sgd"})


def fake_quantized(torch, four=True, quant_type="nf4", double=True, compute="bfloat16", embed=None, adapters=None):
    """What transformers gives for a bitsandbytes model, as far as the callback reads it."""
    config = types.SimpleNamespace(dtype=torch.bfloat16)
    embedding = types.SimpleNamespace(weight=torch.zeros(2, 2, dtype=embed or torch.float32))
    adapter = torch.zeros(2, 2, dtype=adapters or torch.float32, requires_grad=True)
    qc = {"load_in_4bit": four, "load_in_8bit": not four, "bnb_4bit_quant_type": quant_type,
          "bnb_4bit_use_double_quant": double, "bnb_4bit_compute_dtype": compute}
    return types.SimpleNamespace(config=config, is_loaded_in_4bit=four, is_loaded_in_8bit=not four,
                                 quantization_config=qc, get_input_embeddings=lambda: embedding,
                                 parameters=lambda: iter([embedding.weight, adapter]))


def test_the_callback_detects_a_quantized_base(torch):
    from lorasim_hf.model_columns import quant_columns
    args = types.SimpleNamespace(optim="paged_adamw_8bit")
    assert quant_columns(fake_quantized(torch), args) == {
        "optim": "paged_adamw_8bit", "quant": "nf4", "double_quant": True, "precision": "bf16", "kbit_prepare": True,
        "adapter_dtype": "fp32"}
    # TRL's SFTTrainer keeps a quantized base's adapters in the compute dtype: the row says so.
    assert quant_columns(fake_quantized(torch, embed=torch.bfloat16, adapters=torch.bfloat16),
                         args)["adapter_dtype"] == "bf16"
    # Not prepared: the embeddings stay in the compute dtype.
    assert quant_columns(fake_quantized(torch, embed=torch.bfloat16), args)["kbit_prepare"] is False
    eight = quant_columns(fake_quantized(torch, four=False), types.SimpleNamespace(optim="adamw_8bit"))
    assert eight["quant"] == "int8" and eight["optim"] == "adamw_bnb_8bit" and eight["precision"] == "bf16"
    # A float model: quant none; an optimizer lorasim does not count is left out with a warning.
    plain = types.SimpleNamespace(config=types.SimpleNamespace())
    with pytest.warns(UserWarning, match="optimizer 'adafactor'"):
        assert quant_columns(plain, types.SimpleNamespace(optim="adafactor")) == {"quant": "none"}


def test_probe_refuses_quant_on_the_cpu_and_without_bitsandbytes(monkeypatch):
    from lorasim_hf import probe, probe_quant
    from lorasim_hf._deps import MissingDependency
    with pytest.raises(probe.PlanError, match="bitsandbytes quantizes on CUDA only"):
        probe.check_quant("nf4", "cpu")
    with pytest.raises(probe.PlanError, match="--quant must be one of"):
        probe.check_quant("int4", "cuda")
    probe.check_quant("none", "cpu")
    real = probe_quant.importlib.import_module
    monkeypatch.setattr(probe_quant.importlib, "import_module",
                        lambda n: (_ for _ in ()).throw(ImportError(n)) if n == "bitsandbytes" else real(n))
    with pytest.raises(MissingDependency, match="pip install bitsandbytes"):
        probe.check_quant("nf4", "cuda")


def test_probe_rows_say_the_double_quantization_it_ran_with():
    from lorasim_hf.probe_quant import quant_columns
    run = {"loop": "probe", "stack": "hf-peft", "autocast": True}
    assert quant_columns("nf4", run) == {"optim": "adamw_torch_fused", "quant": "nf4", "double_quant": True,
                                         "kbit_prepare": True}
    assert quant_columns("nf4", run, False)["double_quant"] is False
    assert quant_columns("int8", run, True)["double_quant"] is False  # 8-bit has no double quantization


def test_probe_takes_double_quant_from_lorasims_plan_and_refuses_a_bad_value(tmp_path, capsys):
    from lorasim_hf import probe
    with pytest.raises(SystemExit):
        probe.main(["--plan", str(tmp_path / "p.json"), "--quant", "nf4", "--double-quant", "maybe"])
    assert "--double-quant" in capsys.readouterr().err
