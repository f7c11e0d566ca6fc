import hashlib
import json
import os
import shutil

import pytest

from conftest import LLAMA, lorasim_validate


class RandomTokens:
    def __init__(self, torch, n, seq_len, vocab):
        self.ids = torch.randint(0, vocab, (n, seq_len), generator=torch.Generator().manual_seed(0))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def train(torch, tmp_path, callback, max_steps=4, dataset=None, collator=None, **args):
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
    dataset = dataset if dataset is not None else RandomTokens(torch, 32, 16, LLAMA["vocab_size"])
    Trainer(model=model, args=targs, train_dataset=dataset, data_collator=collator, callbacks=[callback]).train()
    return model


def test_row_from_a_trainer_run(tmp_path, torch):
    from lorasim_hf import LorasimCallback
    path = tmp_path / "runs.jsonl"
    cb = LorasimCallback(str(path), warmup_steps=2)
    train(torch, tmp_path, cb, gradient_checkpointing=True)
    (line,) = path.read_text().splitlines()
    row = json.loads(line)
    assert row == cb.row
    config_path, digest = row.pop("model"), row.pop("model_config_sha256")
    assert config_path == f"runs.configs/{digest[:16]}.json"  # relative to the rows file
    data = (tmp_path / config_path).read_bytes()
    assert hashlib.sha256(data).hexdigest() == digest
    config = json.loads(data)
    assert config["model_type"] == "llama" and config["hidden_size"] == 32 and config["rope_theta"] == 10000.0
    assert row.pop("step_time_s") > 0
    assert row.pop("device_memory_bytes") > 0
    # A float base under TrainingArguments' default optimizer (issue 18's columns).
    assert (row.pop("quant"), row.pop("optim")) == ("none", "adamw_torch_fused")
    assert row == {"seq_len": 16, "micro_batch": 2, "accumulation": 2, "grad_ckpt": True, "lora_rank": 4,
                   "lora_alpha": 8.0, "lora_targets": "q;v", "precision": "fp32", "oom": False, "stack": "hf-peft",
                   "attn_impl": "sdpa", "lora_dropout": 0.05, "allocator": "default", "autocast": False,
                   "loop": "trainer", "fused_lm_head": False, "device": "cpu", "processes": 1, "collation": "fixed",
                   "padded_lengths": "16:4", "real_tokens": 32.0, "new_shapes_per_step": 0.0}
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
    from lorasim_hf.model_columns import allocator_from_env
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
    from lorasim_hf.model_columns import fused_lm_head
    import types
    import transformers
    model = transformers.AutoModelForCausalLM.from_config(transformers.LlamaConfig(**{k: v for k, v in LLAMA.items() if k != "model_type"}))
    assert fused_lm_head(model) is False

    def _fused_forward(self, *args, fused_lm_head=False, **kwargs):  # the name TRL's add_fused_lm_head gives it
        return None
    model.forward = types.MethodType(_fused_forward, model)
    assert fused_lm_head(model) is True


def fake_models(tmp_path, names=("qwen3-1.7b", "tiny")):
    """A `lorasim` whose `models --format json` lists `names`."""
    import stat
    import sys
    script = tmp_path / "lorasim"
    script.write_text(f"#!{sys.executable}\nimport json\n"
                      f"print(json.dumps([{{'name': n}} for n in {list(names)!r}]))\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return str(script)


@pytest.mark.parametrize("path", ["/proc/x.jsonl", "/proc/x.csv", "/nonexistent-dir/runs.jsonl"])
def test_an_unwritable_path_is_refused_at_construction(path, torch):
    from lorasim_hf import LorasimCallback
    with pytest.raises(OSError, match=f"cannot write the measurement file '{path}'"):
        LorasimCallback(path)


def test_a_csv_whose_header_lacks_columns_is_refused_at_construction(tmp_path, torch):
    from lorasim_hf import LorasimCallback
    path = tmp_path / "runs.csv"
    path.write_text("model,seq_len,micro_batch,step_time_s\nqwen3-1.7b,512,4,1.0\n")
    with pytest.raises(ValueError, match="its header has no column accumulation, grad_ckpt, .*fused_lm_head"):
        LorasimCallback(str(path))
    assert path.read_text() == "model,seq_len,micro_batch,step_time_s\nqwen3-1.7b,512,4,1.0\n"


def test_the_path_is_checked_again_when_training_begins(tmp_path, torch):
    from lorasim_hf import LorasimCallback
    path = tmp_path / "runs.csv"
    cb = LorasimCallback(str(path))
    assert not path.exists()  # the check leaves no empty file behind
    path.write_text("model,seq_len,micro_batch\n")  # another run wrote a narrower file meanwhile
    with pytest.raises(ValueError, match="its header has no column accumulation"):
        train(torch, tmp_path, cb, max_steps=1)
    gone = tmp_path / "sub" / "runs.jsonl"
    (tmp_path / "sub").mkdir()
    cb = LorasimCallback(str(gone))
    (tmp_path / "sub").rmdir()
    with pytest.raises(OSError, match="cannot write the measurement file"):
        cb.on_train_begin(None, None, None)


def test_an_unknown_preset_name_is_refused_naming_the_known_ones(tmp_path, torch):
    from lorasim_hf import LorasimCallback
    exe = fake_models(tmp_path)
    with pytest.raises(ValueError, match=r"model_name 'qwen3-1.7B' is not a lorasim preset \(did you mean "
                                         r"'qwen3-1.7b'\?\); known: qwen3-1.7b, tiny"):
        LorasimCallback(str(tmp_path / "runs.jsonl"), model_name="qwen3-1.7B", lorasim=exe)
    assert LorasimCallback(str(tmp_path / "runs.jsonl"), model_name="tiny", lorasim=exe).model_name == "tiny"


def test_preset_names_come_from_the_real_binary(tmp_path, torch):
    from conftest import lorasim_binary
    from lorasim_hf import LorasimCallback
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/lorasim or $LORASIM)")
    with pytest.raises(ValueError, match="known: .*qwen3-1.7b"):
        LorasimCallback(str(tmp_path / "runs.jsonl"), model_name="qwen9-1b", lorasim=exe)


def test_without_a_binary_the_name_is_kept_with_a_warning(tmp_path, torch, monkeypatch):
    from lorasim_hf import LorasimCallback
    monkeypatch.delenv("LORASIM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.warns(UserWarning, match="model_name 'qwen3-1.7b' not checked"):
        cb = LorasimCallback(str(tmp_path / "runs.jsonl"), model_name="qwen3-1.7b")
    assert cb.model_name == "qwen3-1.7b"


def test_a_config_path_as_model_name_must_exist(tmp_path, torch):
    from lorasim_hf import LorasimCallback
    config = tmp_path / "my-model.json"
    with pytest.raises(ValueError, match="names no config.json file"):
        LorasimCallback(str(tmp_path / "runs.jsonl"), model_name=str(config))
    config.write_text(json.dumps(LLAMA))
    assert LorasimCallback(str(tmp_path / "runs.jsonl"), model_name=str(config)).model_name == str(config)


class VaryingTokens:
    """Sequences of the given lengths (no padding: the collator pads)."""

    def __init__(self, torch, lengths, vocab):
        gen = torch.Generator().manual_seed(1)
        self.seqs = [torch.randint(1, vocab, (n,), generator=gen) for n in lengths]

    def __len__(self):
        return len(self.seqs)

    def __getitem__(self, i):
        return {"input_ids": self.seqs[i]}


class PadToLongest:
    """Pads each micro-batch to its longest sequence (or to a multiple), as HF's padding collators do,
    and remembers what it produced: the widths and the real tokens of every batch."""

    def __init__(self, torch, pad_to_multiple_of=None):
        self.torch, self.pad_to_multiple_of, self.made = torch, pad_to_multiple_of, []

    def __call__(self, features):
        torch = self.torch
        width = max(len(f["input_ids"]) for f in features)
        if self.pad_to_multiple_of:
            width = -(-width // self.pad_to_multiple_of) * self.pad_to_multiple_of
        ids = torch.zeros(len(features), width, dtype=torch.long)
        mask = torch.zeros(len(features), width, dtype=torch.long)
        for r, f in enumerate(features):
            n = len(f["input_ids"])
            ids[r, :n], mask[r, :n] = f["input_ids"], 1
        labels = ids.masked_fill(mask == 0, -100)
        self.made.append((len(features), width, int(mask.sum())))
        return {"input_ids": ids, "attention_mask": mask, "labels": labels}


LENGTHS = [5, 17, 9, 30, 12, 3, 22, 8, 14, 27, 6, 11, 19, 4, 25, 16]


@pytest.mark.parametrize("multiple", [None, 8])
def test_the_row_records_what_the_model_saw_of_padded_batches(tmp_path, torch, multiple):
    """Pad-to-longest data of many lengths: the histogram of padded widths, the real tokens and the
    collation are exactly those of the batches the collator made (one epoch, every batch timed)."""
    from collections import Counter
    from lorasim_hf import LorasimCallback
    from lorasim_hf.seen import forget_shapes
    forget_shapes()  # a fresh process: every shape is new the first time
    path = tmp_path / "runs.jsonl"
    collator = PadToLongest(torch, multiple)
    cb = LorasimCallback(str(path), warmup_steps=0)
    train(torch, tmp_path, cb, max_steps=-1, num_train_epochs=1, dataset=VaryingTokens(torch, LENGTHS, 128),
          collator=collator, remove_unused_columns=False)
    made = collator.made
    assert len(made) == len(LENGTHS) // 2  # 8 micro-batches of 2: 4 steps of 2 micro-batches, all timed
    widths = Counter(w for _, w, _ in made)
    row = json.loads(path.read_text())
    assert row["padded_lengths"] == ";".join(f"{w}:{c}" for w, c in sorted(widths.items()))
    assert row["seq_len"] == max(widths) and row["micro_batch"] == 2 and row["accumulation"] == 2
    assert row["real_tokens"] == sum(LENGTHS) / len(made)
    assert row["collation"] == ("multiple:8" if multiple else "longest")
    # Every micro-batch timed: each distinct width met once, over the 4 steps.
    assert row["new_shapes_per_step"] == len(widths) / 4
    lorasim_validate(str(path))


class PackedTokens:
    """A padding-free collator as TRL's: one row of several sequences, position ids restarting at each."""

    def __init__(self, torch):
        self.torch, self.made = torch, []

    def __call__(self, features):
        torch = self.torch
        ids = torch.cat([f["input_ids"] for f in features])[None]
        pos = torch.cat([torch.arange(len(f["input_ids"])) for f in features])[None]
        self.made.append(ids.shape[1])
        return {"input_ids": ids, "position_ids": pos, "labels": ids.clone()}


def test_packed_micro_batches_are_one_row_of_their_tokens(tmp_path, torch):
    """What `packing=True` feeds: the row says 1 x the packed width the model saw, not the batch size x
    the longest sequence."""
    from collections import Counter
    from lorasim_hf import LorasimCallback
    path = tmp_path / "runs.jsonl"
    collator = PackedTokens(torch)
    cb = LorasimCallback(str(path), warmup_steps=0)
    train(torch, tmp_path, cb, max_steps=-1, num_train_epochs=1, dataset=VaryingTokens(torch, LENGTHS, 128),
          collator=collator, remove_unused_columns=False)
    row = json.loads(path.read_text())
    assert row["micro_batch"] == 1 and row["seq_len"] == max(collator.made)
    assert row["padded_lengths"] == ";".join(f"{w}:{c}" for w, c in sorted(Counter(collator.made).items()))
    assert row["real_tokens"] == sum(LENGTHS) / len(collator.made)
    assert row["collation"] == "padding-free"


def test_two_configs_of_one_name_do_not_collide_and_the_rows_move_with_their_folder(tmp_path, torch):
    from lorasim_hf.rows import store_config
    from conftest import lorasim_binary
    import subprocess
    two = json.dumps(dict(LLAMA, num_hidden_layers=2)).encode()
    six = json.dumps(dict(LLAMA, num_hidden_layers=6)).encode()
    rows = tmp_path / "a" / "runs.jsonl"
    rows.parent.mkdir()
    (m2, h2), (m6, h6) = store_config(two, rows), store_config(six, rows)
    assert m2 != m6 and store_config(two, rows) == (m2, h2)  # equal configs share a file
    from lorasim_hf.rows import write_rows
    base = {"seq_len": 16, "micro_batch": 2, "step_time_s": 0.1, "stack": "hf-peft", "device": "cpu"}
    write_rows(rows, [dict(base, model=m2, model_config_sha256=h2), dict(base, model=m6, model_config_sha256=h6)])
    shutil.move(str(tmp_path / "a"), str(tmp_path / "moved"))
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/lorasim or $LORASIM)")
    proc = subprocess.run([exe, "validate", "--measurements", str(tmp_path / "moved" / "runs.jsonl"), "--gpu", "h200",
                           "--allow-device-mismatch", "--format", "json"], capture_output=True, text=True,
                          cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    labels = [g["workload"] for g in json.loads(proc.stdout)["groups"]]
    assert len(labels) == 2 and " L=2 " in labels[0] and " L=6 " in labels[1]


def test_a_config_file_given_as_model_name_is_stored_beside_the_rows(tmp_path, torch):
    from lorasim_hf import LorasimCallback
    config = tmp_path / "elsewhere" / "my-model.json"
    config.parent.mkdir()
    config.write_text(json.dumps(LLAMA))
    path = tmp_path / "runs.jsonl"
    train(torch, tmp_path, LorasimCallback(str(path), warmup_steps=1, model_name=str(config)), max_steps=2)
    row = json.loads(path.read_text())
    assert row["model"] == f"runs.configs/{row['model_config_sha256'][:16]}.json"
    assert (tmp_path / row["model"]).read_bytes() == config.read_bytes()
