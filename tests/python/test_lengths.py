"""lorasim_hf.lengths on a small JSONL and a word-level tokenizer built here: exact histograms for chat,
plain text and prompt-completion examples, truncation, the other sources, and the command."""
import json
import os
import subprocess
import sys

import pytest

from conftest import PYTHON_DIR

WORDS = ["a", "b", "c", "d", "e", "user:", "assistant:", "system:"]
# One line per message: "<role>: <content> </s>"; the template writes no BOS.
TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }} </s> {% endfor %}"


@pytest.fixture(scope="module")
def tokenizer():
    pytest.importorskip("tokenizers")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    vocab = {w: i for i, w in enumerate(["<unk>", "<s>", "</s>"] + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    # Plain tokenization adds a BOS, as Llama's tokenizers do: the text path counts it, the chat
    # path (the template decides) does not.
    tok.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    t = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", bos_token="<s>",
                                             eos_token="</s>")
    t.chat_template = TEMPLATE
    return t


def chat(*turns):
    return {"messages": [{"role": r, "content": c} for r, c in turns]}


EXAMPLES = [
    chat(("user", "a b"), ("assistant", "c")),                       # user: a b </s> assistant: c </s> -> 7
    chat(("system", "a"), ("user", "b c d"), ("assistant", "e e")),  # 3 + 5 + 4 -> 12
    {"text": "a b c"},                                               # <s> a b c </s> -> 5
    {"text": "a b c </s>"},                                          # ends with eos: none added -> 5
    chat(("user", "a b"), ("assistant", "c")),                       # 7 again
    {"prompt": "a b", "completion": " c d"},                         # <s> a b c d </s> -> 6
    {"prompt": [{"role": "user", "content": "a"}],
     "completion": [{"role": "assistant", "content": "b"}]},         # user: a </s> assistant: b </s> -> 6
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_histogram_of_a_jsonl_as_sfttrainer_tokenizes_it(tmp_path, tokenizer):
    from lorasim_hf.lengths import write_lengths
    data = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    out = tmp_path / "lengths.csv"
    hist = write_lengths(str(data), tokenizer, str(out))
    assert hist == {5: 2, 6: 2, 7: 2, 12: 1}
    assert out.read_text() == "length,count\n5,2\n6,2\n7,2\n12,1\n"


def test_max_length_cuts_as_the_collator_does(tmp_path, tokenizer):
    from lorasim_hf.lengths import write_lengths
    data = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    out = tmp_path / "lengths.csv"
    assert write_lengths(data, tokenizer, out, max_length=6) == {5: 2, 6: 5}
    assert out.read_text() == "length,count\n5,2\n6,5\n"


def test_the_lengths_are_the_tokens_sfttrainer_would_train_on(tokenizer):
    # The same counts through the tokenizer's own calls, written out by hand for two examples.
    assert len(tokenizer.apply_chat_template(EXAMPLES[0]["messages"], tokenize=True,
                                             return_dict=True)["input_ids"]) == 7
    assert tokenizer("a b c</s>")["input_ids"] == [1, 3, 4, 5, 2]


def test_a_text_field_other_than_text(tmp_path, tokenizer):
    from lorasim_hf.lengths import sequence_lengths
    data = write_jsonl(tmp_path / "t.jsonl", [{"body": "a"}, {"body": "a b c d e"}])
    assert sequence_lengths(data, tokenizer, text_field="body") == {3: 1, 7: 1}
    with pytest.raises(ValueError, match="example 0 has none of 'messages', 'text'.*its keys: body"):
        sequence_lengths(data, tokenizer)


def test_a_dataset_parquet_arrow_and_saved_directory_give_the_same_histogram(tmp_path, tokenizer):
    datasets = pytest.importorskip("datasets")
    from lorasim_hf.lengths import sequence_lengths
    records = [chat(("user", "a b"), ("assistant", "c")), chat(("user", "a"), ("assistant", "b c d e"))]
    ds = datasets.Dataset.from_list(records)
    expected = {7: 1, 9: 1}
    assert sequence_lengths(ds, tokenizer) == expected
    ds.to_parquet(str(tmp_path / "t.parquet"))
    assert sequence_lengths(tmp_path / "t.parquet", tokenizer) == expected
    ds.save_to_disk(str(tmp_path / "saved"))
    assert sequence_lengths(tmp_path / "saved", tokenizer) == expected
    (arrow,) = [f for f in os.listdir(tmp_path / "saved") if f.endswith(".arrow")]
    assert sequence_lengths(tmp_path / "saved" / arrow, tokenizer) == expected


def test_bad_inputs_are_named(tmp_path, tokenizer):
    from lorasim_hf.lengths import sequence_lengths, write_lengths
    with pytest.raises(ValueError, match="give a .jsonl, .parquet or .arrow file"):
        sequence_lengths(write_jsonl(tmp_path / "t.csv", []), tokenizer)
    with pytest.raises(FileNotFoundError, match="no data file"):
        sequence_lengths(tmp_path / "missing.jsonl", tokenizer)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "a"}\n[1, 2]\n')
    with pytest.raises(ValueError, match="bad.jsonl:2: not a JSON object"):
        sequence_lengths(bad, tokenizer)
    with pytest.raises(ValueError, match="the data has no examples"):
        sequence_lengths(write_jsonl(tmp_path / "empty.jsonl", []), tokenizer)
    with pytest.raises(TypeError, match="max_length must be a whole number"):
        sequence_lengths(write_jsonl(tmp_path / "t.jsonl", [{"text": "a"}]), tokenizer, max_length=8.5)
    with pytest.raises(ValueError, match="is the data file"):
        write_lengths(tmp_path / "t.jsonl", tokenizer, tmp_path / "t.jsonl")
    assert (tmp_path / "t.jsonl").read_text() == '{"text": "a"}\n'


def test_the_command(tmp_path, tokenizer):
    tokenizer.save_pretrained(str(tmp_path / "tok"))
    data = write_jsonl(tmp_path / "train.jsonl", EXAMPLES)
    out = tmp_path / "lengths.csv"
    env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR))
    proc = subprocess.run([sys.executable, "-m", "lorasim_hf.lengths", str(data), "--tokenizer", str(tmp_path / "tok"),
                           "--out", str(out), "--max-length", "7"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert out.read_text() == "length,count\n5,2\n6,2\n7,3\n"
    assert "7 sequences, 3 distinct lengths, 5 to 7 tokens" in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "lorasim_hf.lengths", str(tmp_path / "nope.jsonl"), "--tokenizer",
                           str(tmp_path / "tok"), "--out", str(out)], capture_output=True, text=True, env=env)
    assert proc.returncode == 1 and proc.stderr.startswith("error: no data file")


def test_importable_without_torch_or_datasets(tmp_path):
    # A fresh interpreter where torch and datasets cannot be imported: the module still loads.
    code = ("import sys\nfor m in ('torch', 'datasets'):\n    sys.modules[m] = None\n"
            "import lorasim_hf.lengths, lorasim_hf\nprint('ok')\n")
    env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert proc.returncode == 0 and proc.stdout == "ok\n", proc.stderr


def test_a_missing_datasets_is_named(tmp_path, monkeypatch, tokenizer):
    from lorasim_hf import MissingDependency
    from lorasim_hf.lengths import sequence_lengths
    (tmp_path / "t.parquet").write_bytes(b"")
    monkeypatch.setitem(sys.modules, "datasets", None)
    with pytest.raises(MissingDependency, match=r"missing python package datasets \(pip install datasets==4.8.5\)"):
        sequence_lengths(tmp_path / "t.parquet", tokenizer)
