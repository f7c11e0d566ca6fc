import csv
import json
import os
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR
from lorasim_hf.rows import COLUMNS, RowWriter, check_row, json_line, targets_cell, write_rows

ROW = {"model": "qwen3-1.7b", "seq_len": 512, "micro_batch": 4, "accumulation": 4, "step_time_s": 1.02,
       "peak_reserved_bytes": 15032385536, "grad_ckpt": False, "lora_targets": ["q", "k", "v", "o"],
       "stack": "hf-peft", "attn_impl": "sdpa", "lora_dropout": 0.05, "allocator": "default", "autocast": True,
       "loop": "trainer", "peak_allocated_bytes": None}


def test_jsonl_rows_append_in_column_order(tmp_path):
    path = tmp_path / "runs.jsonl"
    write_rows(path, [ROW])
    write_rows(path, [dict(ROW, micro_batch=16, accumulation=1)])
    lines = path.read_text().splitlines()
    assert len(lines) == 2
    first = json.loads(lines[0])
    assert list(first) == [k for k in COLUMNS if k in first]
    assert first["lora_targets"] == "q;k;v;o"
    assert first["autocast"] is True and first["grad_ckpt"] is False
    assert "peak_allocated_bytes" not in first  # None means not measured
    assert json.loads(lines[1])["micro_batch"] == 16


def test_csv_gets_the_full_header_once_and_lorasim_cells(tmp_path):
    path = tmp_path / "runs.csv"
    write_rows(path, [ROW, dict(ROW, oom=True, step_time_s=None)])
    rows = list(csv.DictReader(path.open()))
    assert list(rows[0]) == list(COLUMNS)
    assert rows[0]["autocast"] == "true" and rows[0]["grad_ckpt"] == "false"
    assert rows[0]["lora_dropout"] == "0.05" and rows[0]["peak_allocated_bytes"] == ""
    assert rows[1]["oom"] == "true" and rows[1]["step_time_s"] == ""


def test_csv_append_keeps_an_existing_header_and_refuses_columns_it_lacks(tmp_path):
    path = tmp_path / "old.csv"
    path.write_text("# timed by hand\nmodel,seq_len,micro_batch,step_time_s\nqwen3-1.7b,512,1,3.61")  # no newline
    RowWriter(path).write({"model": "qwen3-1.7b", "seq_len": 512, "micro_batch": 2, "step_time_s": 1.9})
    assert path.read_text().splitlines()[-2:] == ["qwen3-1.7b,512,1,3.61", "qwen3-1.7b,512,2,1.9"]
    with pytest.raises(ValueError, match="no column stack"):
        RowWriter(path).write({"model": "m", "seq_len": 1, "micro_batch": 1, "step_time_s": 1.0, "stack": "hf-peft"})


def test_unknown_keys_and_bad_values_raise():
    with pytest.raises(ValueError, match="unknown measurement column.*'step_time'"):
        check_row({"model": "m", "seq_len": 1, "micro_batch": 1, "step_time": 1.0})
    with pytest.raises(ValueError, match="step_time_s"):
        check_row({"model": "m", "seq_len": 1, "micro_batch": 1})
    with pytest.raises(ValueError, match="allocator"):
        json_line(dict(ROW, allocator="cudaMallocAsync"))
    with pytest.raises(ValueError, match="seq_len"):
        json_line(dict(ROW, seq_len=512.5))
    with pytest.raises(ValueError, match="unknown projection 'qkv'"):
        targets_cell("q,qkv")
    with pytest.raises(ValueError, match=r"\.csv or \.jsonl"):
        RowWriter("runs.txt")


def test_targets_all_and_order():
    assert targets_cell("all") == "all"
    assert targets_cell(["down", "up", "gate", "o", "v", "k", "q"]) == "all"
    assert targets_cell("v+q") == "q;v"


def test_package_imports_without_torch_and_names_the_missing_package():
    # A finder that hides torch, as on a machine where it is not installed.
    code = (
        "import sys, importlib.abc\n"
        "class Hide(importlib.abc.MetaPathFinder):\n"
        "    def find_spec(self, name, path, target=None):\n"
        "        if name.split('.')[0] in ('torch', 'transformers', 'peft'):\n"
        "            raise ModuleNotFoundError(f\"No module named '{name}'\", name=name)\n"
        "sys.meta_path.insert(0, Hide())\n"
        "import lorasim_hf\n"
        "from lorasim_hf import training_arguments, write_rows\n"
        "try:\n"
        "    lorasim_hf.LorasimCallback\n"
        "except lorasim_hf.MissingDependency as e:\n"
        "    print(e)\n")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "missing python package torch (pip install torch==2.11.0)"


def test_run_columns_are_checked_and_written_as_lorasim_reads_them(tmp_path):
    from lorasim_hf.rows import padded_lengths_cell
    row = dict(ROW, seq_len=1024, device="Tesla T4", device_memory_bytes=15828320256, processes=1,
               collation="multiple:64", padded_lengths={1024: 13, 512: 3}, real_tokens=2050.5)
    out = json.loads(json_line(row))
    assert out["padded_lengths"] == "512:3;1024:13" and out["collation"] == "multiple:64"
    assert padded_lengths_cell([(512, 3), (1024, 13)]) == padded_lengths_cell("512:3;1024:13") == "512:3;1024:13"
    with pytest.raises(ValueError, match="ascending"):
        padded_lengths_cell("1024:13;512:3")
    with pytest.raises(ValueError, match="whole numbers >= 1"):
        padded_lengths_cell({512: 0})
    with pytest.raises(ValueError, match="the largest width, 512, must be seq_len, 1024"):
        check_row(dict(row, padded_lengths={512: 3}))
    with pytest.raises(ValueError, match="collation"):
        check_row(dict(row, collation="sorted"))
    with pytest.raises(ValueError, match="processes"):
        check_row(dict(row, processes=0))
    with pytest.raises(ValueError, match="model_config_sha256"):
        check_row(dict(row, model_config_sha256="abc"))


def test_store_config_is_by_content_and_relative_to_the_rows(tmp_path):
    import hashlib
    from lorasim_hf.rows import store_config
    rows = tmp_path / "runs.csv"
    name, digest = store_config(b'{"a": 1}\n', rows)
    assert digest == hashlib.sha256(b'{"a": 1}\n').hexdigest()
    assert name == f"runs.configs/{digest[:16]}.json"
    assert (tmp_path / name).read_bytes() == b'{"a": 1}\n'
    other, _ = store_config(b'{"a": 2}\n', rows)
    assert other != name and (tmp_path / name).read_bytes() == b'{"a": 1}\n'


def test_checking_a_new_path_never_creates_or_removes_that_path(tmp_path, monkeypatch):
    # Every rank of a torchrun job checks the same path; a check that created and removed it could
    # remove a row another rank had just written, or fail on the file vanishing under it.
    path = tmp_path / "rows.jsonl"
    writer = RowWriter(path)
    removed = []
    real_remove = os.remove
    monkeypatch.setattr(os, "remove", lambda p, *a, **k: (removed.append(os.fspath(p)), real_remove(p, *a, **k)))
    writer.check()
    assert not path.exists() and os.fspath(path) not in removed
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # the folder's probe left nothing either
    other = RowWriter(path)
    other.write({"model": "m", "seq_len": 1, "micro_batch": 1, "step_time_s": 1.0})
    writer.check()  # an existing file is opened for appending only
    assert len(path.read_text().splitlines()) == 1


def test_checking_a_path_in_a_missing_folder_says_which_path(tmp_path):
    with pytest.raises(OSError, match="cannot write the measurement file .*nowhere.*choose another path"):
        RowWriter(tmp_path / "nowhere" / "rows.jsonl").check()
