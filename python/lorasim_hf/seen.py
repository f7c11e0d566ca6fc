"""What a training run's model saw, per micro-batch, and where it ran: the columns of a measurement
row that describe the run (docs/measurements.md: `micro_batch`, `seq_len`, `collation`,
`padded_lengths`, `real_tokens`, `device`, `device_memory_bytes`, `processes`).

`SeenBatches` is a forward pre-hook: it reads the inputs of each training forward and never changes
them. Shapes are read on the host; the real-token counts stay on the device until the run ends,
so recording adds no synchronization to a CUDA step.
"""
import collections
import os

# The (rows, width) shapes this process has run a training forward of. Kernel libraries choose a
# kernel per shape and cache it for the process, so the first micro-batch of a shape is slower
# (docs/lengths.md, "New shapes"); the set lives as long as the process, across trainers.
_PROCESS_SHAPES = set()


def forget_shapes():
    """Treat the process as fresh (every shape new again): for tests that count new shapes."""
    _PROCESS_SHAPES.clear()


class SeenBatches:
    """Records rows x padded width and the real tokens of every training forward while `active`.

    Real tokens are the attention mask's sum; without a mask (padding-free or packed inputs, or
    fixed-length data) every position is a token. Position ids that fall back to 0 inside a row
    mean several sequences share it (TRL's `padding_free` and `packing`).
    """

    def __init__(self, torch, shapes=None):
        self.torch = torch
        self._process_shapes = _PROCESS_SHAPES if shapes is None else shapes  # the probe keeps one set per model width
        self.active = False
        self.shapes = []  # (rows, width) per micro-batch
        self._real = None  # device scalar: the attention masks' sums
        self._real_unmasked = 0  # the tokens of micro-batches without a mask
        self._restarts = None  # device scalar: position ids that restart inside a row
        self._packed_kwargs = False  # flash-attention's cu_seq_lens came in
        self._cells = 0  # rows x width summed
        self.new_shapes = 0  # recorded micro-batches whose shape the process had not run before

    def __call__(self, module, args, kwargs):
        if not module.training:
            return
        torch = self.torch
        ids = kwargs.get("input_ids")
        if ids is None and args and torch.is_tensor(args[0]):
            ids = args[0]
        if ids is None:
            ids = kwargs.get("inputs_embeds")
        if not torch.is_tensor(ids) or ids.dim() < 2:
            return
        rows, width = int(ids.shape[0]), int(ids.shape[1])
        new = (rows, width) not in self._process_shapes
        self._process_shapes.add((rows, width))  # warm-up forwards too: their shapes are not new later
        if not self.active:
            return
        self.new_shapes += new
        self.shapes.append((rows, width))
        self._cells += rows * width
        mask = kwargs.get("attention_mask")
        if torch.is_tensor(mask) and mask.dim() == 2 and tuple(mask.shape) == (rows, width):
            self._add("_real", mask.sum())
        else:
            self._real_unmasked += rows * width
        pos = kwargs.get("position_ids")
        if torch.is_tensor(pos) and pos.dim() == 2 and pos.shape[-1] > 1:
            self._add("_restarts", (pos[:, 1:] == 0).sum())
        elif kwargs.get("cu_seq_lens_q") is not None:  # flash-attention's packed sequences, no position ids
            self._packed_kwargs = True

    def _add(self, name, value):
        value = value.detach().to(self.torch.int64)
        total = getattr(self, name)
        setattr(self, name, value if total is None else total + value)

    def total_real_tokens(self):
        return self._real_unmasked + (int(self._real.item()) if self._real is not None else 0)

    def real_tokens(self):
        """Mean real tokens per recorded micro-batch (a float), or None when none was recorded."""
        return self.total_real_tokens() / len(self.shapes) if self.shapes else None

    def restarted(self):
        return self._packed_kwargs or (self._restarts is not None and int(self._restarts.item()) > 0)

    def columns(self, args=None, collator=None):
        """micro_batch, seq_len, padded_lengths, real_tokens and collation of what was recorded."""
        if not self.shapes:
            return {}
        widths = collections.Counter(w for _, w in self.shapes)
        real = self.real_tokens()
        return {"micro_batch": max(r for r, _ in self.shapes), "seq_len": max(widths),
                "padded_lengths": dict(widths), "real_tokens": real,
                "collation": collation(args, collator, padded=self.total_real_tokens() < self._cells,
                                       widths=len(widths), restarted=self.restarted())}


def _unwrapped(collator):
    """The user's collator inside Trainer's RemoveColumnsCollator (which holds it as `data_collator`)."""
    while collator is not None and hasattr(collator, "data_collator") and not hasattr(collator, "pad_to_multiple_of"):
        collator = collator.data_collator
    return collator


def collation(args, collator, padded, widths, restarted):
    """The collation a row names: packed / padding-free when sequences share rows (TRL's flags say
    which), fixed when no micro-batch had padding and all had one width, else the collator's
    padding: multiple:N, max_length or longest."""
    packing = bool(getattr(args, "packing", False))
    if packing:
        return "packed"
    if restarted or getattr(args, "padding_free", False) or getattr(_unwrapped(collator), "padding_free", False):
        return "padding-free"
    if not padded and widths == 1:
        return "fixed"
    c = _unwrapped(collator)
    multiple = getattr(c, "pad_to_multiple_of", None)
    if isinstance(multiple, int) and multiple > 1:
        return f"multiple:{multiple}"
    if str(getattr(c, "padding", "")).split(".")[-1].lower() == "max_length":
        return "max_length"
    return "longest"


def device_columns(torch, device, world_size=None):
    """device (torch's CUDA name, else the device type: "cpu"), device_memory_bytes (the GPU's,
    or the machine's RAM for the CPU) and processes (WORLD_SIZE, default 1)."""
    processes = int(world_size if world_size is not None else os.environ.get("WORLD_SIZE", "1") or 1)
    device = torch.device(device)
    if device.type == "cuda" and torch.cuda.is_available():
        return {"device": torch.cuda.get_device_name(device),
                "device_memory_bytes": int(torch.cuda.get_device_properties(device).total_memory),
                "processes": processes}
    row = {"device": device.type, "processes": processes}
    try:
        row["device_memory_bytes"] = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # not every platform says
        pass
    return row
