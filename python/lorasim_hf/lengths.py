"""A lengths file from the user's data and tokenizer: how many tokens each training sequence has
once tokenized the way TRL's SFTTrainer tokenizes it (issue 16; `lorasim ... --lengths FILE`).

    from lorasim_hf.lengths import write_lengths
    write_lengths("train.jsonl", tokenizer, "lengths.csv", max_length=1024)

    python -m lorasim_hf.lengths train.jsonl --tokenizer Qwen/Qwen3-1.7B --out lengths.csv --max-length 1024

The file is a `length,count` histogram CSV (docs/python.md). No model is loaded and torch is not
needed: only the tokenizer (and `datasets` for Parquet, Arrow or a saved dataset directory).
"""
import argparse
import collections
import json
import os
import sys

from lorasim_hf._deps import MissingDependency, require
from lorasim_hf.recommend import whole_number

# How TRL's SFTTrainer turns an example into input_ids. Read in huggingface/trl
# trl/trainer/sft_trainer.py (the stored copy at commit 00313f21, `_prepare_dataset`,
# `tokenize_fn` and `_tokenize`):
# - conversational language modeling (a `messages` list of {role, content}):
#   `apply_chat_template(messages, tokenize=True, return_dict=True, tools=..., **chat_template_kwargs)`;
#   the template alone decides the special tokens, no eos is added;
# - plain text (`dataset_text_field`, default "text"): eos_token appended unless the text ends
#   with it (`add_eos`), then `processing_class(text=...)`, i.e. with the tokenizer's own
#   special tokens (a BOS its post-processor adds);
# - prompt-completion: conversational, the template over prompt + completion; plain, the eos goes
#   on the completion and prompt + completion is tokenized as one text;
# - truncation happens in its collator (`DataCollatorForLanguageModeling`, keep_start): each
#   sequence is cut to max_length there, so a length here is min(tokens, max_length).
_BATCH = 1000  # texts tokenized per call


def _is_conversation(value):
    return isinstance(value, (list, tuple)) and len(value) > 0 and all(
        isinstance(m, dict) and "role" in m and "content" in m for m in value)


def _without_none(value):
    """`value` without the None entries Arrow and Parquet put in for keys a row lacks (TRL's
    remove_none_values does the same), at every depth."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_none(v) for v in value]
    return value


def _records_of_jsonl(path):
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as e:
                raise ValueError(f"{path}:{line_no}: not a JSON object ({e})") from None
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{line_no}: not a JSON object")
            yield record


def _records(source):
    """Yields each example of `source` as a dict."""
    if hasattr(source, "column_names") and not isinstance(source, (str, bytes, os.PathLike)):
        return iter(source)  # a datasets.Dataset (or anything iterable of dicts with column names)
    path = os.fspath(source)
    if os.path.isdir(path):
        return iter(require("datasets").load_from_disk(path))
    if not os.path.exists(path):
        raise FileNotFoundError(f"no data file '{path}'")
    lower = path.lower()
    if lower.endswith((".jsonl", ".ndjson")):
        return _records_of_jsonl(path)
    if lower.endswith(".parquet"):
        return iter(require("datasets").Dataset.from_parquet(path))
    if lower.endswith(".arrow"):
        return iter(require("datasets").Dataset.from_file(path))
    raise ValueError(f"data file '{path}': give a .jsonl, .parquet or .arrow file, a saved dataset directory "
                     "(Dataset.save_to_disk), or a datasets.Dataset")


def _ids(result):
    """input_ids of a tokenizer's or apply_chat_template's answer (a BatchEncoding, a dict or a list)."""
    if hasattr(result, "keys") and "input_ids" in result.keys():
        result = result["input_ids"]
    return list(result)


class _Tokenizing:
    """Turns examples into token counts as SFTTrainer would."""

    def __init__(self, tokenizer, text_field):
        self.tokenizer, self.text_field = tokenizer, text_field
        self.texts, self.counts = [], []

    def _eos(self):
        eos = getattr(self.tokenizer, "eos_token", None)
        if not eos:
            raise ValueError("the tokenizer has no eos_token, which SFTTrainer appends to plain-text examples")
        return eos

    def add(self, index, example):
        example = _without_none(dict(example))
        tools = example.get("tools")
        tools = json.loads(tools) if isinstance(tools, str) else tools
        kwargs = dict(example.get("chat_template_kwargs") or {})
        if tools is not None:
            kwargs["tools"] = tools
        if "prompt" in example and "completion" in example:
            prompt, completion = example["prompt"], example["completion"]
            if _is_conversation(prompt):
                self._chat(list(prompt) + list(completion), kwargs)
            else:
                eos = self._eos()
                self._text(index, str(prompt) + (completion if completion.endswith(eos) else completion + eos))
        elif "messages" in example:
            if not _is_conversation(example["messages"]):
                raise ValueError(f"example {index}: 'messages' is not a list of {{role, content}} messages")
            self._chat(example["messages"], kwargs)
        elif self.text_field in example:
            text = example[self.text_field]
            if not isinstance(text, str):
                raise ValueError(f"example {index}: '{self.text_field}' is not a string")
            eos = self._eos()
            self._text(index, text if text.endswith(eos) else text + eos)
        else:
            raise ValueError(f"example {index} has none of 'messages', '{self.text_field}', or 'prompt' and "
                             f"'completion' (its keys: {', '.join(map(str, example)) or 'none'})")

    def _chat(self, messages, kwargs):
        self.flush()
        result = self.tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True, **kwargs)
        self.counts.append(len(_ids(result)))

    def _text(self, index, text):
        self.texts.append(text)
        if len(self.texts) >= _BATCH:
            self.flush()

    def flush(self):
        if self.texts:
            result = self.tokenizer(text=self.texts)
            self.counts.extend(len(ids) for ids in _ids(result))
            self.texts = []


def sequence_lengths(source, tokenizer, *, max_length=None, text_field="text"):
    """A Counter {tokens: examples} of `source`, each length cut to `max_length` when given."""
    if max_length is not None:
        max_length = whole_number("max_length", max_length)
    tok = _Tokenizing(tokenizer, text_field)
    n = 0
    for n, example in enumerate(_records(source), 1):
        tok.add(n - 1, example)
    tok.flush()
    if n == 0:
        raise ValueError("the data has no examples")
    lengths = collections.Counter(min(c, max_length) if max_length else c for c in tok.counts)
    if 0 in lengths:
        raise ValueError(f"{lengths[0]} example(s) tokenize to no token at all")
    return lengths


def write_lengths(source, tokenizer, out, *, max_length=None, text_field="text"):
    """Writes `out`, the `length,count` histogram of `source` tokenized by `tokenizer` (as SFTTrainer
    tokenizes it), and returns the histogram as a dict {length: count} in increasing length.

    source: a datasets.Dataset, or the path of a .jsonl, .parquet or .arrow file or of a saved
    dataset directory. max_length: SFTConfig's max_length (sequences are cut to it), None for none.
    """
    out = os.fspath(out)
    if isinstance(source, (str, os.PathLike)) and os.path.abspath(os.fspath(source)) == os.path.abspath(out):
        raise ValueError(f"the lengths file '{out}' is the data file; give another --out")
    histogram = dict(sorted(sequence_lengths(source, tokenizer, max_length=max_length,
                                             text_field=text_field).items()))
    tmp = out + ".tmp"
    with open(tmp, "w", newline="") as f:  # written whole, then renamed: no half file on a failure
        f.write("length,count\n")
        f.writelines(f"{length},{count}\n" for length, count in histogram.items())
    os.replace(tmp, out)
    return histogram


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m lorasim_hf.lengths",
                                description="Writes the length,count histogram of a data set's token lengths, "
                                            "tokenized as TRL's SFTTrainer does, for lorasim --lengths.")
    p.add_argument("data", help="a .jsonl, .parquet or .arrow file, or a saved dataset directory")
    p.add_argument("--tokenizer", required=True, help="a tokenizer directory or Hub name (AutoTokenizer)")
    p.add_argument("--out", required=True, help="the lengths file to write (CSV)")
    p.add_argument("--max-length", type=int, default=None, help="SFTConfig's max_length: cut longer sequences")
    p.add_argument("--text-field", default="text", help="SFTConfig's dataset_text_field (default: text)")
    args = p.parse_args(argv)
    try:
        transformers = require("transformers")
        tokenizer = transformers.AutoTokenizer.from_pretrained(args.tokenizer)
        hist = write_lengths(args.data, tokenizer, args.out, max_length=args.max_length, text_field=args.text_field)
    except MissingDependency as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except (OSError, ValueError, TypeError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    total = sum(hist.values())
    print(f"{args.out}: {total} sequences, {len(hist)} distinct lengths, {min(hist)} to {max(hist)} tokens",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
