"""A CPU Trainer run on data of many lengths through LorasimCallback, padded to the longest of each
micro-batch, and `lorasim validate` scoring its row by the histogram of the widths it trained on.

The histogram comes from the callback's row when it records one (`padded_lengths`); until then this
test builds it from the micro-batches the Trainer fed in the timed steps (a forward hook behind the
same warm-up), and checks the two agree when both are there."""
import json
import subprocess
import warnings

import pytest

from conftest import LLAMA, lorasim_binary
from lorasim_hf import length_batches as lb


class VaryingLengths:
    """Random token sequences of the given lengths."""

    def __init__(self, torch, lengths, vocab):
        gen = torch.Generator().manual_seed(0)
        self.rows = [torch.randint(0, vocab, (n,), generator=gen) for n in lengths]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return {"input_ids": self.rows[i]}


def widths_seen(transformers, torch, warmup_steps):
    """A callback recording the padded width and real tokens of every training forward after
    `warmup_steps` optimizer steps, as LorasimCallback times them."""

    class Seen(transformers.TrainerCallback):
        def __init__(self):
            self.record, self.steps, self.hook = lb.WidthRecord("longest"), 0, None

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            self.hook = model.register_forward_pre_hook(self.seen, with_kwargs=True)

        def seen(self, module, args, kwargs):
            if module.training and self.steps >= warmup_steps:
                self.record.add(int(kwargs["input_ids"].shape[1]), int(kwargs["attention_mask"].sum()))

        def on_step_end(self, args, state, control, **kwargs):
            self.steps += 1

        def on_train_end(self, args, state, control, **kwargs):
            self.hook.remove()

    return Seen()


def test_a_trainer_row_on_padded_data_is_scored_by_its_widths(tmp_path, torch):
    import transformers
    from peft import LoraConfig, get_peft_model
    from lorasim_hf import LorasimCallback
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/lorasim or $LORASIM)")
    kw = {k: v for k, v in LLAMA.items() if k != "model_type"}
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(transformers.AutoConfig.for_model("llama", **kw),
                                                          dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                             task_type="CAUSAL_LM"))
    lengths = [5, 9, 12, 12, 17, 20, 24, 31, 33, 40, 47, 48] * 4
    path = tmp_path / "runs.jsonl"
    cb = LorasimCallback(str(path), warmup_steps=2)
    seen = widths_seen(transformers, torch, warmup_steps=2)
    targs = transformers.TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=6, per_device_train_batch_size=2,
                                           gradient_accumulation_steps=2, report_to=[], use_cpu=True,
                                           logging_strategy="no", save_strategy="no", disable_tqdm=True,
                                           dataloader_num_workers=0, seed=3)
    with warnings.catch_warnings():  # the callback may say seq_len varied: it did, on purpose
        warnings.simplefilter("ignore", UserWarning)
        transformers.Trainer(model=model, args=targs, train_dataset=VaryingLengths(torch, lengths, LLAMA["vocab_size"]),
                             data_collator=lambda f: lb.pad_features(torch, f), callbacks=[cb, seen]).train()
    (line,) = [ln for ln in path.read_text().splitlines() if not ln.startswith("#")]
    row = json.loads(line)
    built = dict(seen.record.columns(), seq_len=seen.record.largest())
    assert sum(seen.record.widths.values()) == 4 * 2  # 4 timed steps of 2 micro-batches
    assert len(seen.record.widths) > 1  # the data's lengths made the widths vary
    if "padded_lengths" in row:  # the callback records the histogram itself
        assert {k: row[k] for k in built} == built
    row.update(built)
    rows = tmp_path / "lengths-runs.jsonl"
    rows.write_text(json.dumps(row) + "\n")

    def validate(file):
        proc = subprocess.run([exe, "validate", "--measurements", str(file), "--gpu", "h200", "--allow-device-mismatch", "--format", "json"],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)["groups"][0]

    group = validate(rows)
    (split,) = group["splits"]
    assert split["predicted_from"] == "padded_lengths"
    assert " padding=longest " in group["workload"]
    assert (split["micro_batch"], split["accumulation"]) == (2, 2)
    # The widths are what it priced: the same row at one width (no varying shapes) is predicted
    # with less reserved memory than the histogram's varying widths.
    one = dict(row, padded_lengths=f"{row['seq_len']}:8")
    single = tmp_path / "one-width.jsonl"
    single.write_text(json.dumps(one) + "\n")
    (split_one,) = validate(single)["splits"]
    assert split_one["predicted_peak_reserved_bytes"] < split["predicted_peak_reserved_bytes"]
