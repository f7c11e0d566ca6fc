"""The worst micro-batch of data of many lengths, which each trial of the tuner runs besides its
ordinary micro-batches, and the record of the widths a trial timed (its measurement row).

A trial's ordinary micro-batches are a few drawn from the data, so their peak is not the epoch's:
the epoch's peak is set by its worst micro-batch, the `b` longest sequences together (docs/lengths.md,
"The worst micro-batch"). So every trial of a split also runs those `b` examples, collated by the
trainer's collator (padded as training pads them), as one more micro-batch of a timed step -- where
the gradients and the optimizer's state are held, as in any step of the epoch -- and its peak
covers it. Its time is left out of the trial's step time, which stays that of ordinary
micro-batches; the measurement row, which lorasim's fit prices width by width, holds it in both.
"""
import collections
import collections.abc
import heapq
import warnings

# The examples whose lengths are read to find the longest: a datasets.Dataset's input_ids column
# is read as list lengths (arrow, no token is copied to Python); a torch Dataset's items are
# indexed one by one, which may tokenize on the fly. Past this many, the longest are sought among
# the first ones only (tune warns).
SCAN_LIMIT = 200_000


def input_ids(example):
    """The token ids of an example or a collated batch: its `input_ids` (a dict), else the example
    itself when it is a tensor, or the first item of a tuple or list (Lightning's `(x, y)` batches);
    None when there are none."""
    if isinstance(example, collections.abc.Mapping):
        return example.get("input_ids")
    if isinstance(example, (tuple, list)) and example:
        example = example[0]
    return example if hasattr(example, "shape") and len(example.shape) >= 1 else None


def _example_length(example):
    ids = input_ids(example)
    return 0 if ids is None else int(ids.shape[-1]) if hasattr(ids, "shape") else len(ids)


def _column_lengths(dataset, n):
    """The input_ids lengths of a datasets.Dataset's first n rows from arrow, or None for another dataset."""
    if not hasattr(dataset, "with_format") or "input_ids" not in (getattr(dataset, "column_names", None) or ()):
        return None
    import pyarrow.compute as pc
    head = dataset.select(range(n)) if n < len(dataset) else dataset
    column = head.with_format("arrow")["input_ids"]
    return pc.list_value_length(column).to_pylist()


def example_lengths(dataset, limit=SCAN_LIMIT):
    """The input_ids length of each of the first `limit` examples; warns when that is not all of them."""
    n = min(len(dataset), limit)
    if n < len(dataset):
        warnings.warn(f"tune: the worst micro-batch is sought among the first {n} of {len(dataset)} examples (the "
                      "scan of their lengths is capped there); a longer example after them is not in the trials' "
                      "peak", stacklevel=4)
    lengths = _column_lengths(dataset, n)
    return lengths if lengths is not None else [_example_length(dataset[i]) for i in range(n)]


def longest_examples(lengths, count):
    """The indices of the `count` longest examples, longest first, the earlier index first among
    equals; with fewer examples, the longest repeats (what a sampler that draws again would add)."""
    top = heapq.nsmallest(count, range(len(lengths)), key=lambda i: (-(lengths[i] or 0), i))
    return top + top[:1] * (count - len(top))


class TimedWidths:
    """The padded widths and real tokens of a trial's timed micro-batches (the worst included) and
    how many were new shapes to the process: the row's collation, padded_lengths, real_tokens,
    seq_len and new_shapes_per_step (docs/measurements.md, "Rows on data of many lengths")."""

    def __init__(self, collation, process_shapes):
        self.collation, self.process_shapes = collation, process_shapes
        self.widths, self.real_tokens, self.new_shapes = collections.Counter(), 0, 0

    def shape_of(self, batch):
        """(rows, width, real tokens) of a collated micro-batch, read on the host before it runs."""
        ids = input_ids(batch)
        rows, width = int(ids.shape[0]), int(ids.shape[-1])
        mask = batch.get("attention_mask") if isinstance(batch, collections.abc.Mapping) else None
        real = int(mask.sum()) if mask is not None and tuple(mask.shape) == (rows, width) else rows * width
        return rows, width, real

    def ran(self, shape, timed):
        """A micro-batch ran: its shape is no longer new to the process; a timed one is recorded."""
        rows, width, real = shape
        new = (rows, width) not in self.process_shapes
        self.process_shapes.add((rows, width))
        if timed:
            self.widths[width] += 1
            self.real_tokens += real
            self.new_shapes += new

    def columns(self, accumulation):
        n = sum(self.widths.values())
        return {"collation": self.collation, "padded_lengths": dict(self.widths), "seq_len": max(self.widths),
                "real_tokens": self.real_tokens / n, "new_shapes_per_step": accumulation * self.new_shapes / n}
