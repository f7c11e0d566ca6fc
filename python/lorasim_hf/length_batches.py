"""Micro-batches of many lengths for the probe and for tests: the sequences of a lengths file
(`lorasim ... --lengths FILE`, docs/lengths.md) drawn as a data loader's random sampler draws a
data set -- a seeded order without replacement, a new order each pass -- and padded with the
tokenizer-free collation HF's pad-to-longest collators apply: pad id 0 on the right, an
attention_mask of 1 on the real tokens, labels -100 on the pads.

The record of what a run's timed micro-batches held gives the measurement columns `collation`,
`padded_lengths` (histogram of the padded widths, `512:3;1024:13`) and `real_tokens` (their mean
non-pad tokens), with which `lorasim validate` predicts exactly the widths that ran.

torch is needed only by `Draws`, `collate` and `pad_features`.
"""
import collections
import json
import random

PADDINGS = ("longest", "multiple:N", "max_length")  # what a runner pads to (packed, padding-free: not yet)


def read_lengths(path):
    """Every sequence's token length in a lengths file: one length per line (an optional `length`
    header), or a `length,count` CSV; `#` starts a comment, blank lines are skipped. Raises
    ValueError naming file:line for anything else (the C++ reader, model/lengths_read.cpp, is the
    reference; this reads the same files)."""
    out, histogram = [], None
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if histogram is None:
                histogram = line.replace(" ", "") == "length,count"
                if histogram or line == "length":
                    continue
            cells = [c.strip() for c in line.split(",")]
            try:
                if len(cells) != (2 if histogram else 1):
                    raise ValueError
                length, count = int(cells[0]), int(cells[1]) if histogram else 1
            except ValueError:
                raise ValueError(f"{path}:{n}: expected {'length,count' if histogram else 'one token length'}, "
                                 f"got {line!r}") from None
            if length < 1 or count < 0:
                raise ValueError(f"{path}:{n}: a token length must be positive and a count not negative, got {line!r}")
            out.extend([length] * count)
    if not out:
        raise ValueError(f"{path}: no sequence lengths (see docs/lengths.md for the format)")
    return out


def parse_padding(text):
    """`longest`, `multiple:N` or `max_length` -> (mode, N or None); ValueError otherwise."""
    if text in ("longest", "max_length"):
        return text, None
    if text.startswith("multiple:") and text[len("multiple:"):].isdigit() and int(text[len("multiple:"):]) > 0:
        return "multiple", int(text[len("multiple:"):])
    raise ValueError(f"--padding: expected one of {', '.join(PADDINGS)}, got {text!r}")


def padded_width(padding, longest, max_length):
    """The width a micro-batch whose longest sequence is `longest` is padded to."""
    mode, multiple = parse_padding(padding)
    if mode == "max_length":
        return max_length
    if mode == "multiple":
        return -(-longest // multiple) * multiple
    return longest


class LengthSampler:
    """Draws micro-batches of sequence lengths from `lengths` (truncated at `max_length`, default
    the longest) in a seeded random order without replacement, `next(b)` -> (lengths, width)."""

    def __init__(self, lengths, padding="longest", seed=0, max_length=None):
        parse_padding(padding)
        if max_length is not None and max_length < 1:
            raise ValueError(f"--max-length must be positive, got {max_length}")
        self.max_length = max_length or max(lengths)
        self.padding = padding
        self._lengths = [min(n, self.max_length) for n in lengths]
        self._rng = random.Random(seed)
        self._order, self._next = [], 0

    def next(self, b):
        out = []
        while len(out) < b:
            if self._next == len(self._order):
                self._order = self._lengths[:]
                self._rng.shuffle(self._order)
                self._next = 0
            out.append(self._order[self._next])
            self._next += 1
        return out, padded_width(self.padding, max(out), self.max_length)


class WidthRecord:
    """What a run's timed micro-batches held; `columns()` is their measurement columns."""

    def __init__(self, collation):
        self.collation = collation
        self.widths = collections.Counter()
        self.real_tokens = 0

    def add(self, width, real_tokens):
        self.widths[width] += 1
        self.real_tokens += real_tokens

    def largest(self):
        return max(self.widths)

    def columns(self):
        n = sum(self.widths.values())
        return {"collation": self.collation,
                "padded_lengths": ";".join(f"{w}:{c}" for w, c in sorted(self.widths.items())),
                "real_tokens": self.real_tokens / n}


class Draws:
    """The probe's micro-batches of a run, in the order its steps take them: random rows of
    `seq_len` (input_ids = labels), or drawn from `lengths` (a LengthSampler) and collated. Once
    `start_timing()` is called (with lengths) `record` is the WidthRecord of what is drawn after."""

    def __init__(self, torch, micro_batch, seq_len, vocab, lengths=None):
        self.torch, self.micro_batch, self.seq_len, self.vocab, self.lengths = torch, micro_batch, seq_len, vocab, lengths
        self.generator = torch.Generator().manual_seed(0)
        self.record = None

    def start_timing(self):
        if self.lengths is not None:
            self.record = WidthRecord(self.lengths.padding)

    def __call__(self):
        if self.lengths is None:
            ids = self.torch.randint(0, self.vocab, (self.micro_batch, self.seq_len), generator=self.generator)
            return {"input_ids": ids, "labels": ids}
        seqs, width = self.lengths.next(self.micro_batch)
        if self.record is not None:
            self.record.add(width, sum(seqs))
        return collate(self.torch, seqs, width, self.vocab, self.generator)


def collate(torch, lengths, width, vocab, generator):
    """`len(lengths)` rows of random tokens right-padded to `width`: input_ids (pad 0),
    attention_mask and labels (-100 on the pads), as int64 CPU tensors."""
    ids = torch.randint(0, vocab, (len(lengths), width), generator=generator)
    real = torch.arange(width).unsqueeze(0) < torch.tensor(lengths).unsqueeze(1)
    return {"input_ids": ids.masked_fill(~real, 0), "attention_mask": real.long(), "labels": ids.masked_fill(~real, -100)}


def pad_features(torch, features, padding="longest", max_length=None):
    """A Trainer data_collator: features with `input_ids` of their own lengths (lists or 1-d
    tensors), padded alike to the collation's width."""
    rows = [list(map(int, f["input_ids"])) for f in features]
    longest = max(len(r) for r in rows)
    width = padded_width(padding, longest, max_length or longest)
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r, dtype=torch.long)
        mask[i, :len(r)] = 1
    return {"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, -100)}


def max_width(sampler):
    """The widest a micro-batch of `sampler` can be."""
    return padded_width(sampler.padding, sampler.max_length, sampler.max_length)
