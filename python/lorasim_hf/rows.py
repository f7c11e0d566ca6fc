"""Measurement rows in lorasim's format (docs/measurements.md): CSV with a header or JSON Lines,
chosen by the file's extension. lorasim's C++ reader is the one parser; this module only writes.

A row is a dict with known keys; a value of None means "not measured" and is left out.
"""
import csv
import hashlib
import io
import json
import math
import os
import re
import tempfile

# lorasim's columns in the order its own writer emits them, then the stack's (issue 11).
COLUMNS = (
    "model", "num_layers", "seq_len", "micro_batch", "accumulation", "grad_ckpt", "lora_rank", "lora_alpha",
    "lora_targets", "precision", "oom", "step_time_s", "micro_batch_time_s", "host_time_s", "device_time_s",
    "optimizer_time_s", "peak_allocated_bytes", "peak_reserved_bytes",
    "stack", "attn_impl", "lora_dropout", "allocator", "autocast", "loop", "fused_lm_head",
    # What describes the run (issue 17): where it ran and what the model saw.
    "device", "device_memory_bytes", "processes", "collation", "padded_lengths", "real_tokens",
    "new_shapes_per_step", "model_config_sha256",
    # A quantized base and the optimizer (issue 18).
    "quant", "double_quant", "kbit_prepare", "optim", "adapter_dtype",
)
REQUIRED = ("model", "seq_len", "micro_batch")
_INTS = {"num_layers", "seq_len", "micro_batch", "accumulation", "lora_rank", "peak_allocated_bytes",
         "peak_reserved_bytes", "device_memory_bytes", "processes"}
_FLOATS = {"lora_alpha", "step_time_s", "micro_batch_time_s", "host_time_s", "device_time_s", "optimizer_time_s",
           "lora_dropout", "real_tokens", "new_shapes_per_step"}
_BOOLS = {"grad_ckpt", "oom", "autocast", "fused_lm_head", "double_quant", "kbit_prepare"}
_CHOICES = {"precision": ("bf16", "fp16", "fp32"), "stack": ("hf-peft", "lorasim", "lightning"),
            "attn_impl": ("sdpa", "eager", "flash_attention_2"), "allocator": ("default", "expandable"),
            "loop": ("trainer", "plain", "probe"), "quant": ("none", "nf4", "fp4", "int8"),
            "optim": ("adamw_torch", "adamw_torch_fused", "paged_adamw_8bit", "paged_adamw_32bit", "adamw_bnb_8bit")}
TARGET_NAMES = ("q", "k", "v", "o", "gate", "up", "down")
COLLATIONS = ("fixed", "longest", "max_length", "packed", "padding-free")  # and multiple:N
_SHA256 = re.compile(r"[0-9a-f]{64}")


def padded_lengths_cell(widths):
    """The padded_lengths cell ('512:3;1024:13') of a {width: count} dict, (width, count) pairs or such a cell."""
    if isinstance(widths, str):
        pairs = []
        for item in widths.split(";"):
            w, sep, c = item.partition(":")
            if not sep or not w.isdigit() or not c.isdigit():
                raise ValueError(f"padded_lengths: expected width:count pairs separated by ';', got {widths!r}")
            pairs.append((int(w), int(c)))
        if [w for w, _ in pairs] != sorted({w for w, _ in pairs}):
            raise ValueError(f"padded_lengths: widths must be ascending and each given once, got {widths!r}")
    else:
        pairs = sorted(dict(widths).items())
    if not pairs:
        raise ValueError("padded_lengths: empty (give the micro-batches timed per padded width)")
    for w, c in pairs:
        if isinstance(w, bool) or isinstance(c, bool) or not isinstance(w, int) or not isinstance(c, int) \
                or w < 1 or c < 1:
            raise ValueError(f"padded_lengths: widths and counts must be whole numbers >= 1, got {w!r}:{c!r}")
    return ";".join(f"{w}:{c}" for w, c in pairs)


def check_collation(c):
    if c in COLLATIONS:
        return c
    if isinstance(c, str) and c.startswith("multiple:") and c[9:].isdigit() and int(c[9:]) >= 1:
        return c
    raise ValueError(f"column collation: expected one of {', '.join(COLLATIONS)} or multiple:N, got {c!r}")


def targets_cell(targets):
    """lora_targets as lorasim reads it: 'all' or short names joined by ';' (CSV cells hold no bare commas)."""
    if isinstance(targets, str):
        targets = [t for t in targets.replace(",", ";").replace("+", ";").split(";") if t]
    targets = list(targets)
    if not targets:
        raise ValueError("lora_targets: empty (give projections or all)")
    if targets == ["all"]:
        return "all"
    for t in targets:
        if t not in TARGET_NAMES:
            raise ValueError(f"lora_targets: unknown projection '{t}' (known: {', '.join(TARGET_NAMES)} or all)")
    targets = sorted(set(targets), key=TARGET_NAMES.index)
    return "all" if targets == list(TARGET_NAMES) else ";".join(targets)


def check_row(row):
    """The row with None values dropped and every value checked; raises ValueError naming the key."""
    unknown = [k for k in row if k not in COLUMNS]
    if unknown:
        raise ValueError(f"unknown measurement column(s) {', '.join(map(repr, unknown))} "
                         f"(known: {', '.join(COLUMNS)})")
    out = {k: v for k, v in row.items() if v is not None}
    for k in REQUIRED:
        if k not in out:
            raise ValueError(f"measurement row without required column '{k}'")
    if not out.get("oom") and "step_time_s" not in out:
        raise ValueError("measurement row without step_time_s (required unless oom is true)")
    for k, v in out.items():
        if k in _BOOLS:
            if not isinstance(v, bool):
                raise ValueError(f"column {k}: expected true or false, got {v!r}")
        elif k in _INTS:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"column {k}: expected a whole number >= 0, got {v!r}")
        elif k in _FLOATS:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"column {k}: expected a finite number, got {v!r}")
        elif k == "lora_targets":
            out[k] = targets_cell(v)
        elif k == "padded_lengths":
            out[k] = padded_lengths_cell(v)
        elif k == "collation":
            out[k] = check_collation(v)
        elif k == "model_config_sha256":
            if not isinstance(v, str) or not _SHA256.fullmatch(v):
                raise ValueError(f"column {k}: expected 64 lowercase hex digits, got {v!r}")
        elif k in _CHOICES:
            if v not in _CHOICES[k]:
                raise ValueError(f"column {k}: expected one of {', '.join(_CHOICES[k])}, got {v!r}")
        elif not isinstance(v, str) or not v:
            raise ValueError(f"column {k}: expected a non-empty string, got {v!r}")
    if "processes" in out and out["processes"] < 1:
        raise ValueError(f"column processes: expected a whole number >= 1, got {out['processes']!r}")
    if "padded_lengths" in out:
        largest = int(out["padded_lengths"].rsplit(";", 1)[-1].split(":")[0])
        if largest != out["seq_len"]:
            raise ValueError(f"column padded_lengths: the largest width, {largest}, must be seq_len, {out['seq_len']}")
    return out


def json_line(row):
    """One JSON Lines row (no newline), keys in lorasim's column order."""
    row = check_row(row)
    return json.dumps({k: row[k] for k in COLUMNS if k in row})


def _csv_cell(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)  # shortest round-trip form
    return str(v)


def _csv_header(path):
    """The header of an existing CSV file (first line not blank and not a '#' comment), or None."""
    with open(path, newline="") as f:
        for line in f:
            if line.strip() and not line.lstrip().startswith("#"):
                return next(csv.reader([line]))
    return None


class RowWriter:
    """Appends rows to a .csv or .jsonl file (flushed and synced per row, so a crash loses nothing).

    A new CSV file gets lorasim's full header; an existing one keeps its own header, and a row
    with a column that header lacks is refused rather than written misaligned.
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        if self.path.endswith(".csv"):
            self.format = "csv"
        elif self.path.endswith(".jsonl") or self.path.endswith(".ndjson"):
            self.format = "jsonl"
        else:
            raise ValueError(f"measurement file '{self.path}': the name must end in .csv or .jsonl "
                             "(lorasim reads the format from it)")
        exists = os.path.exists(self.path) and os.path.getsize(self.path) > 0
        self.header = _csv_header(self.path) if exists and self.format == "csv" else None
        if self.header:
            unknown = [k for k in self.header if k not in COLUMNS]
            if unknown:
                raise ValueError(f"{self.path}: existing header has unknown column(s) {', '.join(unknown)}")
        self._ends_with_newline = not exists or _ends_with_newline(self.path)

    def check(self, columns=()):
        """Refuses now what a later write would: a path that cannot be appended to, or an existing
        CSV header without one of `columns` (the columns the caller may write)."""
        if self.header:
            missing = [k for k in columns if k not in self.header]
            if missing:
                raise ValueError(f"{self.path}: its header has no column {', '.join(missing)}, which the rows "
                                 "need; write to a new file (or a .jsonl file)")
        try:
            if os.path.exists(self.path):
                with open(self.path, "a"):
                    pass
            else:
                # The file appears with its first row. Probe its folder with a file of another name:
                # every rank of a data-parallel run checks the same path, and creating and removing
                # the path itself could remove a row another process has just written.
                folder = os.path.dirname(os.path.abspath(self.path))
                with tempfile.NamedTemporaryFile(dir=folder, prefix=os.path.basename(self.path) + ".",
                                                 suffix=".probe"):
                    pass
        except OSError as e:
            raise OSError(e.errno, f"cannot write the measurement file '{self.path}': {e.strerror}; "
                                   "choose another path") from None

    def comment(self, text):
        """A '# ...' line; lorasim skips it in both formats."""
        self._append("".join(f"# {line}\n" for line in str(text).splitlines() or [""]))

    def write(self, row):
        if self.format == "jsonl":
            self._append(json_line(row) + "\n")
            return
        row = check_row(row)
        text = io.StringIO()
        w = csv.writer(text, lineterminator="\n")
        if self.header is None:
            self.header = list(COLUMNS)
            w.writerow(self.header)
        missing = [k for k in row if k not in self.header]
        if missing:
            raise ValueError(f"{self.path}: its header has no column {', '.join(missing)}; "
                             "write to a new file (or a .jsonl file)")
        w.writerow([_csv_cell(row[k]) if k in row else "" for k in self.header])
        self._append(text.getvalue())

    def _append(self, text):
        if not self._ends_with_newline:  # a file cut off mid-line must not glue two rows together
            text = "\n" + text
        with open(self.path, "a", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        self._ends_with_newline = True


def _ends_with_newline(path):
    with open(path, "rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1) == b"\n"


def configs_dir(rows_path):
    """Where the model configs of a rows file are stored: `<rows-stem>.configs/` beside it."""
    rows_path = os.fspath(rows_path)
    stem = os.path.splitext(os.path.basename(rows_path))[0]
    return os.path.join(os.path.dirname(os.path.abspath(rows_path)), stem + ".configs")


def store_config(data, rows_path):
    """Stores a config file's bytes beside the rows by content hash; returns (model, sha256):
    the path a row names it by, relative to the rows file ('runs.configs/<hash prefix>.json',
    which lorasim resolves against the rows file's directory), and the bytes' SHA-256. Equal
    configs share a file; different ones never overwrite each other."""
    digest = hashlib.sha256(data).hexdigest()
    directory = configs_dir(rows_path)
    name = digest[:16] + ".json"
    path = os.path.join(directory, name)
    os.makedirs(directory, exist_ok=True)
    if os.path.exists(path) and _read_bytes(path) != data:  # another config with the same prefix: the whole hash
        name = digest + ".json"
        path = os.path.join(directory, name)
    if not os.path.exists(path) or _read_bytes(path) != data:
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    return os.path.basename(directory) + "/" + name, digest


def _read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def write_rows(path, rows):
    """Appends each row of `rows` to `path` (.csv or .jsonl)."""
    w = RowWriter(path)
    for row in rows:
        w.write(row)
