"""lorasim_hf.tune on data of many lengths: every trial also runs its split's worst micro-batch -- the
b longest sequences together, collated as training collates them -- so a split whose worst
micro-batch runs out of memory is found out although its trial's ordinary micro-batches run; the
step time is the ordinary micro-batches', the measurement row holds the worst too; training after
tune is bit-identical. CPU, tiny random Llama, the built lorasim binary."""
import json
import random

import pytest

from test_tune import adapters, peft_model, tune_of  # noqa: F401

SHORT, LONG, N = 6, 48, 200


class Ragged:
    """N sequences of SHORT tokens, one of LONG at `long_at`: a plain torch Dataset of many lengths."""

    def __init__(self, torch, vocab, long_at):
        gen = torch.Generator().manual_seed(1)
        self.ids = [torch.randint(0, vocab, (LONG if i == long_at else SHORT,), generator=gen) for i in range(N)]

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i]}


def pad_collate(torch):
    """Pads to the longest of the micro-batch (right, pad id 0, labels -100 on the pads)."""
    def collate(features):
        width = max(len(f["input_ids"]) for f in features)
        ids = torch.zeros((len(features), width), dtype=torch.long)
        mask = torch.zeros_like(ids)
        for r, f in enumerate(features):
            ids[r, :len(f["input_ids"])] = f["input_ids"]
            mask[r, :len(f["input_ids"])] = 1
        return {"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, -100)}
    return collate


def ragged_trainer(torch, tmp_path, micro_batch, accumulation):
    from transformers import Trainer, TrainingArguments
    from conftest import LLAMA
    args = TrainingArguments(output_dir=str(tmp_path / "out"), max_steps=3, per_device_train_batch_size=micro_batch,
                             gradient_accumulation_steps=accumulation, report_to=[], use_cpu=True,
                             logging_strategy="no", save_strategy="no", disable_tqdm=True, dataloader_num_workers=0)
    # The long sequence where the trials' own order (a private generator of args.seed) reaches it
    # last: no ordinary micro-batch of a trial holds it.
    order = list(range(N))
    random.Random(args.seed).shuffle(order)
    return Trainer(model=peft_model(torch), args=args, train_dataset=Ragged(torch, LLAMA["vocab_size"], order[-1]),
                   data_collator=pad_collate(torch))


def test_the_worst_micro_batch_runs_out_of_memory_where_the_ordinary_ones_fit(tmp_path, torch, lorasim, capsys,
                                                                            monkeypatch):
    from lorasim_hf.tune_trials import Trials
    trainer = ragged_trainer(torch, tmp_path, 1, 8)
    real_step, seen, clock = trainer.training_step, [], [0.0]
    monkeypatch.setattr(Trials, "_mark", lambda self: clock[0])

    def step(model, inputs, num_items_in_batch=None):
        # A micro-batch takes 1 ms per token cell; more than 100 cells are out of memory.
        rows, width = inputs["input_ids"].shape
        seen.append((rows, width))
        clock[0] += rows * width * 1e-3
        if rows * width > 100:
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (from the test)")
        return real_step(model, inputs, num_items_in_batch)

    trainer.training_step = step
    result = tune_of(trainer, tmp_path, lorasim, max_trial_steps=10, grad_ckpt=False)
    out = capsys.readouterr().out.splitlines()
    assert "  each trial also runs its worst micro-batch, the longest sequences together (up to 48 tokens): in its " \
           "peak, not in its step time" in out
    # 8x1's ordinary micro-batches (8 x 6 cells) run; its worst (8 x 48) runs out of memory in the
    # second step, after the ordinary one. So does 4x2's; 2x4's worst is 96 cells and runs.
    assert seen[:3] == [(8, SHORT), (8, SHORT), (8, LONG)]
    assert seen[3:7] == [(4, SHORT), (4, SHORT), (4, SHORT), (4, SHORT)] and seen[7] == (4, LONG)
    trials = [line for line in out if line.startswith("  trial")]
    # Ordinary micro-batches only in the step time: 2x4 is 4 x 12 ms, 1x8 8 x 6 ms (a tie: the
    # larger micro-batch is set).
    assert trials == ["  trial 1: 8x1, 2 steps: out of memory",
                      "  trial 2: 4x2, 2 steps: out of memory",
                      "  trial 3: 2x4, 2 steps: 0.0480 s/step +- 0.0%",
                      "  trial 4: 1x8, 2 steps: 0.0480 s/step +- 0.0%"]
    assert (result.micro_batch, result.accumulation) == (2, 4) and result.trial_steps == 8
    rows = [json.loads(line) for line in open(result.rows_path)]
    assert [(r["micro_batch"], r["oom"]) for r in rows] == [(8, True), (4, True), (2, False), (1, False)]
    # The row holds every timed micro-batch, the worst too: 2x4 timed 3 + 4 ordinary of 12 cells
    # and its worst of 96 (the long sequence and a short one): 4 x (7 x 12 + 96) / 8 ms, its widths
    # 6 (7 times) and 48 (once).
    two = rows[2]
    assert two["padded_lengths"] == f"{SHORT}:7;{LONG}:1" and two["seq_len"] == LONG
    assert two["collation"] == "longest" and two["real_tokens"] == (7 * 2 * SHORT + LONG + SHORT) / 8  # the mask's
    assert two["step_time_s"] == pytest.approx(4 * (7 * 12 + 96) / 8 * 1e-3)
    # Training after tune is bit-identical to training 2x4 untuned.
    del trainer.training_step
    trainer.train()
    plain = ragged_trainer(torch, tmp_path, 2, 4)
    plain.train()
    a, b = adapters(trainer.model), adapters(plain.model)
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert any(not torch.equal(a[k], adapters(peft_model(torch))[k]) for k in a)


def test_the_longest_examples_from_a_column_or_the_items_and_the_scan_cap(torch):
    datasets = pytest.importorskip("datasets")
    from lorasim_hf.tune_worst import example_lengths, longest_examples
    lengths = [3, 9, 2, 9, 5, 1]
    ds = datasets.Dataset.from_dict({"input_ids": [[7] * n for n in lengths]}).shuffle(seed=0)
    shuffled = [len(x) for x in ds["input_ids"]]
    assert example_lengths(ds) == shuffled  # the arrow column, through the shuffle's index mapping
    items = [{"input_ids": torch.ones(n)} for n in lengths]
    assert example_lengths(items) == lengths
    # Longest first; the earlier index first among equals; fewer examples than asked: the longest repeats.
    assert longest_examples(lengths, 3) == [1, 3, 4]
    assert longest_examples([4, 2], 4) == [0, 1, 0, 0]
    with pytest.warns(UserWarning, match=r"the worst micro-batch is sought among the first 4 of 6 examples"):
        assert example_lengths(ds, limit=4) == shuffled[:4]
