"""What autograd saves for backward, counted per module: every tensor packed under
``torch.autograd.graph.saved_tensors_hooks`` is attributed to the innermost module running when it
was packed (forward pre/post hooks keep a module stack) and deduplicated by storage (views of one
storage count once); parameters and autocast's weight copies are listed apart. Walking the
autograd graph afterwards unpacks every saved tensor once, which names the backward node needing it.
Used by `python -m lorasim_hf.saved_tensors` and tests/python/test_saved_tensors.py.
"""

from __future__ import annotations

import re
from collections import defaultdict


_LAYER_RE = re.compile(r"\.layers\.(\d+)(?:\.|$)")


def _component(name: str, cls: str = "") -> tuple[str, str]:
    """(layer, component) of a module's qualified name and class."""
    m = _LAYER_RE.search(name)
    if m:
        rest = name[m.end():]
        rest = rest.replace(".default", "")
        return m.group(1), rest or "block"
    for key, comp in (("embed_tokens", "embed"), ("model.norm", "final_norm"), ("lm_head", "lm_head"),
                      ("rotary_emb", "rotary")):
        if key in name:
            return "outer", comp
    if cls.endswith("ForCausalLM"):
        return "outer", "loss"  # inside XForCausalLM.forward itself: the loss function
    if cls.endswith("Model") and not cls.startswith(("Peft", "Lora")):
        # XModel.forward between blocks: with checkpointing, torch.utils.checkpoint's saved
        # inputs of each block (saved before its own hooks take over).
        return "outer", "block_inputs"
    return "outer", "other:" + cls


class SavedTensorCounter:
    """Packs every saved tensor with the module stack's top; unpacks record the consumer node."""

    def __init__(self, model):
        import torch
        self.torch = torch
        self.stack = ["<root>"]
        self.items = []          # one entry per pack call
        self.by_storage = {}     # storage key -> index of the first item
        self.current_node = None
        self.param_storages = {}
        self.param_shapes = defaultdict(list)
        for n, p in model.named_parameters():
            self.param_storages[self._key(p)] = n
            self.param_shapes[tuple(p.shape)].append(p)
        for n, b in model.named_buffers():
            self.param_storages[self._key(b)] = n
        self.handles = []
        self.cls = {name: type(mod).__name__ for name, mod in model.named_modules()}
        for name, mod in model.named_modules():
            self.handles.append(mod.register_forward_pre_hook(self._pre(name)))
            self.handles.append(mod.register_forward_hook(self._post(name), always_call=True))

    @staticmethod
    def _key(t):
        s = t.untyped_storage()
        return (t.device.type, s.data_ptr(), s.nbytes())

    def _pre(self, name):
        def hook(mod, args):
            self.stack.append(name)
        return hook

    def _post(self, name):
        def hook(mod, args, out):
            if self.stack and self.stack[-1] == name:
                self.stack.pop()
        return hook

    def remove(self):
        for h in self.handles:
            h.remove()

    def pack(self, t):
        idx = len(self.items)
        key = self._key(t)
        kind = "activation"
        if key in self.param_storages:
            kind = "parameter"
        elif self._is_weight_cast(t) or self._is_frozen_weight_cast(t):
            kind = "weight_cast"  # autocast's cached low-precision copy of a trainable weight
        self.items.append({
            "module": self.stack[-1], "shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", ""),
            "numel": t.numel(), "bytes": t.numel() * t.element_size(), "storage_bytes": key[2],
            "storage": key, "kind": kind, "consumers": [], "first": key not in self.by_storage,
            "grad_fn": type(t.grad_fn).__name__ if t.grad_fn is not None else None,
        })
        self.by_storage.setdefault(key, idx)
        return (idx, t)

    def _is_frozen_weight_cast(self, t):
        """autocast's per-call low-precision copy of a frozen weight (fp32 model under autocast):
        no grad_fn, another dtype, and the values of a parameter (or its transpose). The values
        are compared, not only the shape: an activation of n x h tokens can have a weight's shape."""
        if t.grad_fn is not None or t.requires_grad or t.dim() != 2:
            return False
        shp = tuple(t.shape)
        with self.torch.no_grad():
            for p in self.param_shapes.get(shp, ()):
                if p.dtype != t.dtype and self.torch.equal(t, p.detach().to(t.dtype)):
                    return True
            for p in self.param_shapes.get(shp[::-1], ()):
                if p.dtype != t.dtype and self.torch.equal(t, p.detach().t().to(t.dtype)):
                    return True
        return False

    @staticmethod
    def _is_weight_cast(t):
        """A cast (possibly viewed, e.g. transposed) of a leaf that requires grad."""
        fn = t.grad_fn
        for _ in range(4):
            if fn is None:
                return False
            nxt = [f for f, _ in fn.next_functions if f is not None]
            if type(fn).__name__.startswith("ToCopyBackward"):
                return any(type(f).__name__ == "AccumulateGrad" for f in nxt)
            if len(nxt) != 1:
                return False
            fn = nxt[0]
        return False

    def unpack(self, packed):
        idx, t = packed
        if self.current_node is not None:
            self.items[idx]["consumers"].append(self.current_node)
        return t

    def hooks(self):
        return self.torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack)

    def walk_graph(self, root):
        """Unpack every saved tensor once, naming the backward node and attribute needing it."""
        seen, todo = set(), [root.grad_fn]
        while todo:
            fn = todo.pop()
            if fn is None or fn in seen:
                continue
            seen.add(fn)
            name = type(fn).__name__
            for attr in dir(fn):
                if attr.startswith("_saved_"):
                    self.current_node = f"{name}.{attr[7:]}"
                    try:
                        getattr(fn, attr)
                    except Exception:
                        pass
            if hasattr(fn, "saved_tensors"):
                self.current_node = f"{name}.saved_tensors"
                try:
                    fn.saved_tensors
                except Exception:
                    pass
            self.current_node = None
            todo.extend(f for f, _ in fn.next_functions)

    def summary(self, tokens: int):
        """Storage-deduplicated bytes per (layer, component), and the item list."""
        # A storage packed in more than one layer (RoPE's cos/sin, the causal mask) is 'shared'.
        layers_of = defaultdict(set)
        for it in self.items:
            layers_of[it["storage"]].add(_component(it["module"], self.cls.get(it["module"], ""))[0])
        per = defaultdict(lambda: defaultdict(int))
        listing = []
        for it in self.items:
            if not it["first"]:
                continue
            layer, comp = _component(it["module"], self.cls.get(it["module"], ""))
            if it["kind"] != "activation":
                layer, comp = "other", it["kind"]
            elif len(layers_of[it["storage"]]) > 1:
                layer, comp = "shared", "shared"
            per[layer][comp] += it["storage_bytes"]
            listing.append({
                "layer": layer, "component": comp, "module": it["module"], "shape": it["shape"],
                "dtype": it["dtype"], "storage_bytes": it["storage_bytes"], "tensor_bytes": it["bytes"],
                "consumers": sorted(set(c for j in self._same(it) for c in self.items[j]["consumers"])),
                "grad_fn": it["grad_fn"],
            })
        out = {}
        for layer, comps in per.items():
            out[layer] = {"components": dict(sorted(comps.items())), "total_bytes": sum(comps.values()),
                          "per_token_bytes": sum(comps.values()) / tokens}
        return out, listing

    def _same(self, it):
        return [j for j, o in enumerate(self.items) if o["storage"] == it["storage"]]
