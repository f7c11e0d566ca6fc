"""Micro-batches of many lengths (lorasim_hf.length_batches) and the probe trained on them: the
sampler's order, the collation's pads, and rows that lorasim validate predicts from their widths."""
import io
import json
import subprocess

import pytest

from conftest import LLAMA, lorasim_binary
from lorasim_hf import length_batches as lb
from lorasim_hf import probe


def test_read_lengths_reads_both_forms_and_names_the_bad_line(tmp_path):
    one = tmp_path / "one.txt"
    one.write_text("# lengths\nlength\n12\n\n7  # short\n")
    assert lb.read_lengths(one) == [12, 7]
    hist = tmp_path / "hist.csv"
    hist.write_text("length,count\n5,2\n9,0\n30,1\n")
    assert lb.read_lengths(hist) == [5, 5, 30]
    bad = tmp_path / "bad.csv"
    bad.write_text("length,count\n5,2\n0,1\n")
    with pytest.raises(ValueError, match=r"bad.csv:3: a token length must be positive"):
        lb.read_lengths(bad)
    bad.write_text("12\nabc\n")
    with pytest.raises(ValueError, match=r"bad.csv:2: expected one token length"):
        lb.read_lengths(bad)
    bad.write_text("# nothing\n")
    with pytest.raises(ValueError, match="no sequence lengths"):
        lb.read_lengths(bad)


def test_the_sampler_draws_every_sequence_once_per_pass_in_a_seeded_order():
    data = [3, 3, 3, 8, 8, 20]
    s = lb.LengthSampler(data, "longest", seed=1, max_length=10)
    for _ in range(3):
        seen = []
        for _ in range(3):
            seqs, width = s.next(2)
            assert width == max(seqs)
            seen += seqs
        assert sorted(seen) == [3, 3, 3, 8, 8, 10]  # 20 truncated at 10
    def order(seed):
        return lb.LengthSampler(data, seed=seed).next(6)[0]
    assert order(4) == order(4) and order(4) != order(5)
    assert lb.LengthSampler(data, "multiple:16", 0).next(1)[1] % 16 == 0
    assert lb.LengthSampler(data, "max_length", 0, max_length=12).next(1)[1] == 12
    with pytest.raises(ValueError, match="--padding"):
        lb.LengthSampler(data, "packed")
    with pytest.raises(ValueError, match="--padding"):
        lb.LengthSampler(data, "multiple:0")


def test_collate_pads_right_with_zero_and_ignores_the_pads(torch):
    batch = lb.collate(torch, [2, 5], 6, 50, torch.Generator().manual_seed(0))
    mask = torch.tensor([[1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 0]])
    assert torch.equal(batch["attention_mask"], mask)
    assert torch.equal(batch["input_ids"][mask == 0], torch.zeros(5, dtype=torch.long))
    assert torch.equal(batch["labels"][mask == 0], torch.full((5,), -100))
    assert torch.equal(batch["labels"][mask == 1], batch["input_ids"][mask == 1])
    feats = lb.pad_features(torch, [{"input_ids": [4, 5]}, {"input_ids": [6, 7, 8]}], padding="multiple:4")
    assert feats["input_ids"].tolist() == [[4, 5, 0, 0], [6, 7, 8, 0]]
    assert feats["labels"].tolist() == [[4, 5, -100, -100], [6, 7, 8, -100]]


def test_the_width_record_gives_the_rows_columns():
    r = lb.WidthRecord("longest")
    for width, real in ((8, 10), (4, 6), (8, 14)):
        r.add(width, real)
    assert r.columns() == {"collation": "longest", "padded_lengths": "4:1;8:2", "real_tokens": 10.0}
    assert r.largest() == 8


def test_the_probe_on_a_lengths_file_writes_rows_validate_predicts_from_their_widths(tmp_path, torch):
    llama = tmp_path / "llama.json"
    llama.write_text(json.dumps(LLAMA))
    plan = {"device": "cpu", "allocator": "default", "runs": [
        {"model": str(llama), "hf_config": LLAMA, "seq_len": 64, "micro_batch": 2, "accumulation": 2, "steps": 3,
         "warmup_steps": 1, "lora_rank": 4, "lora_alpha": 8, "precision": "fp32", "autocast": False}]}
    data = [5, 9, 9, 17, 30, 30, 41, 64]
    expected = lb.LengthSampler(data, "multiple:8", seed=2, max_length=48)
    for _ in range(2):  # the warm-up step's micro-batches
        expected.next(2)
    record = lb.WidthRecord("multiple:8")
    for _ in range(6):
        seqs, width = expected.next(2)
        record.add(width, sum(seqs))
    out, log = io.StringIO(), io.StringIO()
    rows, failures = probe.run_plan(plan, out=out, log=log,
                                    lengths=lambda: lb.LengthSampler(data, "multiple:8", seed=2, max_length=48))
    assert failures == 0, log.getvalue()
    (row,) = [json.loads(line) for line in out.getvalue().splitlines()]
    assert {k: row[k] for k in ("collation", "padded_lengths", "real_tokens")} == record.columns()
    assert row["seq_len"] == record.largest() and rows[0] == row
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/lorasim or $LORASIM)")
    path = tmp_path / "probe.jsonl"
    path.write_text(out.getvalue())
    proc = subprocess.run([exe, "validate", "--measurements", str(path), "--gpu", "h200", "--allow-device-mismatch", "--format", "json"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    (split,) = json.loads(proc.stdout)["groups"][0]["splits"]
    assert split["predicted_from"] == "padded_lengths"


def test_the_probe_refuses_padding_without_lengths_and_a_bad_file(tmp_path, capsys):
    plan = tmp_path / "plan.json"
    plan.write_text("{}")
    assert probe.main(["--plan", str(plan), "--padding", "max_length"]) == 1
    assert "need --lengths FILE" in capsys.readouterr().err
    assert probe.main(["--plan", str(plan), "--lengths", str(tmp_path / "none.csv")]) == 1
    assert "none.csv" in capsys.readouterr().err
    good = tmp_path / "l.txt"
    good.write_text("5\n")
    assert probe.main(["--plan", str(plan), "--lengths", str(good), "--padding", "packed"]) == 1
    assert "--padding" in capsys.readouterr().err
