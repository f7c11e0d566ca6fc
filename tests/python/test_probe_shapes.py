"""The probe on the calibration plan's own lengths and TRL's fused LM head, on a tiny CPU model: each
row's new_shapes_per_step, the replay that meets none, the shapes kept per model width, and the
fused-head runs (skipped, each standing for its row, without trl)."""
import io
import json

import pytest

from conftest import LLAMA, lorasim_validate
from lorasim_hf import length_batches, probe, probe_runs

LENGTHS = [[5, 3], [9, 2], [17, 4], [30, 1]]
COMMON = dict(model="llama", hf_config=LLAMA, num_layers=1, precision="fp32", autocast=False, lora_rank=4,
              lora_alpha=8)


def varied(**kw):
    run = dict(COMMON, seq_len=32, micro_batch=2, steps=8, warmup_steps=1, lengths=LENGTHS, padding="multiple:8",
               lengths_seed=3)
    run.update(kw)
    return run


def expected_new_shapes(steps, warmup, b, a, seen=None):
    """New (rows, width) shapes among the timed micro-batches of a fresh sampler, counted apart."""
    seqs = [length for length, count in LENGTHS for _ in range(count)]
    sampler = length_batches.LengthSampler(seqs, "multiple:8", 3, 32)
    seen = set() if seen is None else seen
    new = 0
    for step in range(warmup + steps):
        for _ in range(a):
            _, width = sampler.next(b)
            if step >= warmup and (b, width) not in seen:
                new += 1
            seen.add((b, width))
    return new, seen


def test_new_shapes_per_step_and_the_replay_that_meets_none(tmp_path, torch):
    config = tmp_path / "llama.json"  # a config path names the model, so lorasim can read the rows
    config.write_text(json.dumps(LLAMA))
    plan = {"device": "cpu", "allocator": "default", "runs": [
        varied(model=str(config)), varied(model=str(config), accumulation=2, steps=3)]}
    out = io.StringIO()
    rows, failures = probe.run_plan(plan, out=out, log=io.StringIO())
    assert failures == 0 and len(rows) == 2
    first, replay = rows
    new, _ = expected_new_shapes(8, 1, 2, 1)
    assert new > 0  # the seed's order meets new widths after the warm-up...
    widths = [int(w.split(":")[0]) for w in first["padded_lengths"].split(";")]
    assert sum(int(w.split(":")[1]) for w in first["padded_lengths"].split(";")) > len(widths)  # ...and repeats
    assert first["new_shapes_per_step"] == pytest.approx(new / 8)
    assert first["collation"] == "multiple:8" and first["seq_len"] == max(widths)
    # The replay draws the same order's first micro-batches, every shape of which the first run met.
    assert replay["new_shapes_per_step"] == 0.0 and replay["accumulation"] == 2
    assert all(r["fused_lm_head"] is False for r in rows)
    path = tmp_path / "rows.jsonl"
    path.write_text(out.getvalue())
    lorasim_validate(str(path))  # the C++ reader accepts the rows, new_shapes_per_step included


def test_shapes_are_kept_per_model_width_not_per_depth(torch):
    wider = dict(LLAMA, hidden_size=64, intermediate_size=128)
    plan = {"device": "cpu", "allocator": "default", "runs": [
        varied(), dict(varied(), num_layers=2), dict(varied(), hf_config=wider, model="wide")]}
    rows, failures = probe.run_plan(plan, out=io.StringIO(), log=io.StringIO())
    assert failures == 0
    new, _ = expected_new_shapes(8, 1, 2, 1)
    # Two layers of the same width: its kernels were chosen by the one-layer run (every shape seen).
    assert rows[1]["new_shapes_per_step"] == 0.0
    # Another width: its GEMMs are other shapes, new again.
    assert rows[2]["new_shapes_per_step"] == pytest.approx(new / 8)


def test_one_width_rows_record_no_new_shape(torch):
    plan = {"device": "cpu", "allocator": "default", "runs": [dict(COMMON, seq_len=16, micro_batch=2, steps=2)]}
    rows, _ = probe.run_plan(plan, out=io.StringIO(), log=io.StringIO())
    assert rows[0]["new_shapes_per_step"] == 0.0 and rows[0]["collation"] == "fixed"


def test_fused_head_runs_through_trl_as_sfttrainer(torch):
    pytest.importorskip("trl")
    plan = {"device": "cpu", "allocator": "default", "runs": [
        dict(COMMON, seq_len=16, micro_batch=2, steps=2, fused_lm_head=True),
        dict(COMMON, seq_len=16, micro_batch=2, steps=2)]}
    rows, failures = probe.run_plan(plan, out=io.StringIO(), log=io.StringIO())
    assert failures == 0
    assert [r["fused_lm_head"] for r in rows] == [True, False]


def test_fused_head_runs_are_skipped_without_trl(monkeypatch, torch):
    monkeypatch.setattr(probe_runs, "has_trl", lambda: False)
    plan = {"device": "cpu", "allocator": "default", "runs": [
        dict(COMMON, seq_len=16, micro_batch=2, steps=1, fused_lm_head=True),
        dict(COMMON, seq_len=16, micro_batch=2, steps=1)]}
    out, log = io.StringIO(), io.StringIO()
    rows, failures = probe.run_plan(plan, out=out, log=log)
    assert failures == 0 and len(rows) == 1 and rows[0]["fused_lm_head"] is False
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert lines[0]["skipped"].endswith("fused-head") and "pip install trl" in lines[0]["why"]
    assert "skipped" in log.getvalue()


@pytest.mark.parametrize("bad, message", [
    ({"lengths": [[0, 1]]}, "lengths must be a list"),
    ({"lengths": [[5, 0]]}, "with some count"),
    ({"lengths": [[5, 1]], "padding": "packed"}, "--padding"),
    ({"fused_lm_head": "false"}, "fused_lm_head must be true or false"),
])
def test_bad_lengths_and_fused_flags_are_refused(bad, message):
    run = dict(COMMON, seq_len=8, micro_batch=1, **bad)
    with pytest.raises(probe.PlanError, match=message):
        probe.load_plan({"runs": [run]})
