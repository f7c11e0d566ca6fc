"""What autograd saves for backward in an HF Transformers + PEFT LoRA model, counted per module.

Builds a causal LM from a config (random weights, layers may be truncated), wraps it in PEFT LoRA,
runs one forward under ``torch.autograd.graph.saved_tensors_hooks`` and attributes every saved
tensor to the innermost module running when it was packed (forward pre/post hooks keep a module
stack). Tensors are deduplicated by storage (views of one storage count once); parameters and
buffers are listed apart. After the forward the autograd graph is walked and every saved tensor
is unpacked once, which names the backward node (and its attribute) that needs it.

A second, clean forward + backward measures the allocator (CUDA only): allocated memory after the
forward with the model output held and after it is dropped, and the peaks of forward and backward.

    python -m lorasim_hf.saved_tensors --config bench/hf/configs/qwen3-1.7b.json --layers 2 \
        --seq-len 512 --micro-batch 1 --precision bf16 --autocast --device cuda --out qwen3.json

The formulas of docs/hf-stack-memory.md are implemented in ``formula_block`` and ``formula_loss``;
the tool writes them next to the measurement (``formula`` in the output).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sys
import time
from collections import defaultdict

DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
ALL_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def _import():
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
        import peft  # noqa: F401
    except ImportError as e:  # pragma: no cover
        sys.exit(f"lorasim_hf.saved_tensors needs torch, transformers and peft: {e}")


# ----------------------------------------------------------------------------------------------
# Model construction
# ----------------------------------------------------------------------------------------------

def load_config_dict(args) -> dict:
    if args.config:
        with open(args.config) as f:
            cfg = json.load(f)
    else:
        cfg = {"model_type": args.model_type, "tie_word_embeddings": bool(args.tie_word_embeddings)}
    if args.vocab_size is not None:
        for k in ("bos_token_id", "eos_token_id", "pad_token_id"):
            cfg.pop(k, None)
    # Shape flags override the config's fields (e.g. a smaller vocabulary for a CPU check).
    for k in ("hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
              "head_dim", "vocab_size"):
        v = getattr(args, k)
        if v is not None:
            cfg[k] = v
    cfg = {k: v for k, v in cfg.items() if not k.startswith("_")}
    if args.layers:
        cfg["num_hidden_layers"] = args.layers
    return cfg


def build_model(cfg: dict, *, precision: str, attn_impl: str, device: str, rank: int, alpha: int,
                dropout: float, targets, grad_ckpt: bool, seed: int = 0):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(seed)
    cfg = dict(cfg)
    model_type = cfg.pop("model_type")
    config = AutoConfig.for_model(model_type, **cfg)
    dtype = getattr(torch, DTYPES[precision])
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation=attn_impl)
    model.to(device)
    if grad_ckpt:
        # As Trainer(gradient_checkpointing=True) does: non-reentrant (HF's default), and with it
        # enable_input_require_grads (the embedding output requires grad).
        model.gradient_checkpointing_enable()
    lcfg = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=list(targets),
                      task_type="CAUSAL_LM")
    model = get_peft_model(model, lcfg)  # autocast_adapter_dtype=True: adapters in fp32
    model.train()
    return model, config


# ----------------------------------------------------------------------------------------------
# Saved-tensor accounting
# ----------------------------------------------------------------------------------------------

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
        self.param_shapes = defaultdict(set)
        for n, p in model.named_parameters():
            self.param_storages[self._key(p)] = n
            self.param_shapes[tuple(p.shape)].add(p.dtype)
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
        no grad_fn, the shape of a parameter (or its transpose), another dtype."""
        if t.grad_fn is not None or t.requires_grad or t.dim() != 2:
            return False
        shp = tuple(t.shape)
        return any(dt != t.dtype for dt in self.param_shapes.get(shp, ())) or any(
            dt != t.dtype for dt in self.param_shapes.get(shp[::-1], ()))

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


# ----------------------------------------------------------------------------------------------
# Formulas (docs/hf-stack-memory.md)
# ----------------------------------------------------------------------------------------------

def shape_of(config) -> dict:
    h = config.hidden_size
    nq = config.num_attention_heads
    nkv = getattr(config, "num_key_value_heads", None) or nq
    d = getattr(config, "head_dim", None) or h // nq
    return {"h": h, "nq": nq, "nkv": nkv, "d": d, "i": config.intermediate_size, "V": config.vocab_size,
            "model_type": config.model_type, "L": config.num_hidden_layers}


def formula_block(sh: dict, *, b: int, s: int, rank: int, targets, dropout: float, precision: str,
                  autocast: bool, attn_impl: str, device: str, first: bool = False) -> dict:
    """Bytes one decoder block saves for backward (whole micro-batch), by component.

    Every term is a distinct storage (the tool deduplicates by storage the same way).
    first: block 0 without checkpointing -- its input, the embedding output, needs no gradient,
    so its input RMSNorm saves nothing (with checkpointing HF makes the embedding output
    require grad and block 0 is like the others).
    """
    h, nq, nkv, d, i = sh["h"], sh["nq"], sh["nkv"], sh["d"], sh["i"]
    qd, kvd = nq * d, nkv * d
    n = b * s
    e = {"fp32": 4, "bf16": 2, "fp16": 2}[precision]
    # The activations' dtype: the model's, or autocast's (linear outputs) for an fp32 model.
    ec = 2 if autocast else e
    # Does lora_A save the block's own tensor (shared between adapters of one input) or a
    # private copy? PEFT keeps the adapters in fp32 (get_peft_model(autocast_adapter_dtype=True))
    # and casts x to fp32 before dropout and lora_A (LoraLayer._cast_input_dtype): a new fp32
    # tensor unless x is fp32 already. Under autocast lora_A (an F.linear) then casts that fp32
    # tensor to bf16 -- again a new tensor. So: own tensor only for fp32 model, no autocast.
    ea = 2 if autocast else 4
    shared_inputs = precision == "fp32" and not autocast and dropout == 0
    c = {}
    # RMSNorm (input, post-attention): x.to(fp32) saved by pow and the mul (a new fp32 copy unless
    # x is fp32: then x itself), and rsqrt's fp32 output [b, s, 1] saved by rsqrt and the mul.
    # weight * y saves only the (frozen) weight.
    norm = n * (4 * h + 4)
    c["input_layernorm"] = 0 if first else norm
    c["post_attention_layernorm"] = norm
    in_feat = {"q_proj": h, "k_proj": h, "v_proj": h, "o_proj": qd, "gate_proj": h, "up_proj": h,
               "down_proj": i}
    # Frozen base Linear: its backward needs only the weight (no input saved).
    seen_inputs = set()
    group = {"q_proj": "attn_in", "k_proj": "attn_in", "v_proj": "attn_in", "gate_proj": "mlp_in",
             "up_proj": "mlp_in", "o_proj": "o_in", "down_proj": "down_in"}
    for t in ALL_TARGETS:
        if t not in targets:
            continue
        x = n * in_feat[t]
        if dropout > 0:
            # nn.Dropout on the fp32 (cast) input. CUDA's fused kernel (native_dropout) saves a bool
            # mask; the CPU path multiplies by a noise tensor of the input's dtype (fp32) and saves it.
            # In block 0 (no checkpointing) q/k/v's input needs no gradient: no mask is saved.
            qkv0 = first and t in ("q_proj", "k_proj", "v_proj")
            c[f"{t}.lora_dropout"] = 0 if qkv0 else x * (1 if device == "cuda" else 4)
        if shared_inputs:
            g = group[t]
            # o_proj's input: with SDPA the attention output itself (saved by SDPA, counted there).
            if g in seen_inputs or (g == "o_in" and attn_impl == "sdpa"):
                c[f"{t}.lora_A"] = 0
            else:
                c[f"{t}.lora_A"] = x * 4
            seen_inputs.add(g)
        else:
            c[f"{t}.lora_A"] = x * ea
        c[f"{t}.lora_B"] = n * rank * ea  # lora_A's output, saved by lora_B; ea: fp32 or autocast's bf16
    # (Under autocast the bf16 copies of the fp32 adapter weights are saved too: r x (in + out) x 2
    # bytes per adapter, independent of b and s; the tool lists them apart as weight_cast.)
    # Qwen3 q/k RMSNorm over the head dim, on q_proj/k_proj's output: fp32 input copy + rstd.
    if sh["model_type"] == "qwen3":
        c["self_attn.q_norm"] = n * nq * (4 * d + 4)
        c["self_attn.k_norm"] = n * nkv * (4 * d + 4)
    # RoPE: q*cos + rotate_half(q)*sin saves cos and sin only ([1, 1, s, d], shared by all blocks).
    if attn_impl == "sdpa":
        # SDPA (flash/efficient/cuDNN on CUDA, the flash kernel on CPU) saves q, k, v as given
        # (k, v un-repeated: HF passes enable_gqa=True when there is no mask), the output
        # [b, nq, s, d] and the fp32 log-sum-exp [b, nq, s]. The output is laid out [b, s, nq, d],
        # so attn_output.transpose(1, 2).contiguous() is a no-op and o_proj gets the same storage.
        c["self_attn"] = n * (2 * qd + 2 * kvd) * ec + n * nq * 4
    else:
        # Eager: QK^T saves q (a bmm-shaped copy) and k^T; PV saves the probabilities and v. With
        # GQA repeat_kv's expanded copies [b, nq, s, d] are what is saved. softmax(dtype=fp32)
        # saves its fp32 output; .to(dtype) makes the copy PV saves (none for an fp32 model).
        rep = nq // nkv
        kv = qd if rep > 1 else kvd
        probs = b * nq * s * s
        c["self_attn"] = n * (qd + 2 * kv) * ec + probs * 4 + (0 if ec == 4 else probs * ec)
    # SwiGLU act(gate) * up: SiLU saves gate, the mul saves silu(gate) and up.
    c["mlp"] = 3 * n * i * ec
    return c


def group_measured(components: dict) -> dict:
    """A measured block's components under the formula's keys."""
    out = defaultdict(int)
    for k, v in components.items():
        k2 = k
        for pre in ("self_attn.", "mlp."):
            if k.startswith(pre) and "_proj." in k:
                k2 = k[len(pre):]
        if k2 in ("mlp.act_fn", "mlp.act"):
            k2 = "mlp"
        if k2 in ("self_attn.rotary_emb",):
            k2 = "self_attn"
        out[k2] += v
    return dict(out)


def compare(measured: dict, formula: dict) -> dict:
    keys = sorted(set(measured) | {k for k, v in formula.items() if v})
    rows = {k: {"measured": measured.get(k, 0), "formula": formula.get(k, 0)} for k in keys}
    return {"rows": rows, "measured_total": sum(measured.values()), "formula_total": sum(formula.values()),
            "equal": all(r["measured"] == r["formula"] for r in rows.values())}


def formula_outer(sh: dict, *, b: int, s: int, precision: str, autocast: bool) -> dict:
    """Saved outside the blocks: final RMSNorm and the loss (log-softmax output, labels)."""
    n = b * s
    V = sh["V"]
    return {
        "final_norm": n * (4 * sh["h"] + 4),
        # ForCausalLMLoss: logits.float() (not saved), log_softmax saves its fp32 output (n x V),
        # nll_loss saves the target (int64) and that same output.
        # The int64 labels: pad(labels, (0, 1))[..., 1:].contiguous() is a copy unless b == 1, where
        # the slice is contiguous already and keeps the padded storage (s + 1 elements).
        "loss": n * V * 4 + (s + 1 if b == 1 else n) * 8 + 4,  # + total_weight, an fp32 scalar
    }


def formula_ckpt_outer(sh: dict, *, b: int, s: int, precision: str, autocast: bool) -> dict:
    """Checkpointing (non-reentrant): the forward keeps each block's input and the outer terms."""
    n = b * s
    e = {"fp32": 4, "bf16": 2, "fp16": 2}[precision]
    out = {"block_inputs": sh["L"] * n * sh["h"] * e}
    out.update(formula_outer(sh, b=b, s=s, precision=precision, autocast=autocast))
    return out


def formula_loss_transients(sh: dict, *, b: int, s: int, precision: str) -> dict:
    """Loss buffers alive at the forward's end and the backward's start (bytes)."""
    n, V = b * s, sh["V"]
    e = {"fp32": 4, "bf16": 2, "fp16": 2}[precision]
    return {
        "logits": n * V * e,                       # lm_head output, held by the model output
        "logits_fp32": 0 if e == 4 else n * V * 4,  # logits.float(), freed when the loss returns
        "log_softmax": n * V * 4,                   # saved
        "grad_log_softmax": n * V * 4,              # nll_loss backward
        "grad_logits_fp32": n * V * 4,              # log_softmax backward
        "grad_logits": 0 if e == 4 else n * V * e,  # .float()'s backward: the cast back
    }


# ----------------------------------------------------------------------------------------------
# Runs
# ----------------------------------------------------------------------------------------------

def _autocast_ctx(args):
    import torch
    if not args.autocast:
        return contextlib.nullcontext()
    dt = torch.float16 if args.precision == "fp16" else torch.bfloat16
    return torch.autocast(args.device, dtype=dt)


def _inputs(args, config):
    import torch
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, config.vocab_size, (args.micro_batch, args.seq_len), generator=g)
    return ids.to(args.device)


def _sdpa_ctx(args):
    if args.sdpa_backend is None or args.attn_impl != "sdpa":
        return contextlib.nullcontext()
    from torch.nn.attention import sdpa_kernel, SDPBackend
    b = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION,
         "math": SDPBackend.MATH, "cudnn": SDPBackend.CUDNN_ATTENTION}[args.sdpa_backend]
    return sdpa_kernel(b)


def count_saved(args, cfg):
    """Forward under saved_tensors_hooks (checkpointing off, so every block is seen)."""
    import torch
    model, config = build_model(cfg, precision=args.precision, attn_impl=args.attn_impl, device=args.device,
                                rank=args.rank, alpha=args.alpha, dropout=args.lora_dropout,
                                targets=args.targets, grad_ckpt=False)
    ids = _inputs(args, config)
    counter = SavedTensorCounter(model)
    with counter.hooks(), _autocast_ctx(args), _sdpa_ctx(args):
        out = model(input_ids=ids, labels=ids, use_cache=_use_cache(args))
    loss = out.loss
    del out
    counter.remove()
    counter.walk_graph(loss)
    tokens = args.micro_batch * args.seq_len
    summary, listing = counter.summary(tokens)
    del loss, model  # (no backward needed: the count is of what the forward saved)
    _free(args)
    return config, summary, listing


def count_ckpt_forward(args, cfg):
    """With checkpointing: what the forward keeps. torch.utils.checkpoint's own hooks take over
    inside the blocks (nothing of theirs is seen); each block's inputs are saved just before, in
    XModel.forward (component block_inputs)."""
    import torch
    model, config = build_model(cfg, precision=args.precision, attn_impl=args.attn_impl, device=args.device,
                                rank=args.rank, alpha=args.alpha, dropout=args.lora_dropout,
                                targets=args.targets, grad_ckpt=True)
    ids = _inputs(args, config)
    counter = SavedTensorCounter(model)
    with counter.hooks(), _autocast_ctx(args), _sdpa_ctx(args):
        out = model(input_ids=ids, labels=ids, use_cache=False)
    loss = out.loss
    del out
    counter.remove()
    tokens = args.micro_batch * args.seq_len
    summary, listing = counter.summary(tokens)
    summary["items"] = [x for x in listing if x["layer"] != "other"]
    del loss, model
    _free(args)
    return summary


def _free(args):
    import gc
    import torch
    gc.collect()
    if args.device == "cuda":
        torch.cuda.empty_cache()


def _use_cache(args):
    return {"config": None, "true": True, "false": False}[args.use_cache]


def measure_memory(args, cfg):
    """Clean forward + backward on CUDA: allocated memory at each point (bytes above the model)."""
    import torch
    if args.device != "cuda":
        return None
    model, config = build_model(cfg, precision=args.precision, attn_impl=args.attn_impl, device=args.device,
                                rank=args.rank, alpha=args.alpha, dropout=args.lora_dropout,
                                targets=args.targets, grad_ckpt=args.grad_ckpt)
    ids = _inputs(args, config)
    res = []
    for it in range(args.repeats):
        model.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        with _autocast_ctx(args), _sdpa_ctx(args):
            out = model(input_ids=ids, labels=ids, use_cache=(False if args.grad_ckpt else _use_cache(args)))
        torch.cuda.synchronize()
        fwd_peak = torch.cuda.max_memory_allocated()
        after_fwd_held = torch.cuda.memory_allocated()
        loss = out.loss
        del out
        after_fwd = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        with _sdpa_ctx(args):
            loss.backward()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        bwd_peak = torch.cuda.max_memory_allocated()
        after_bwd = torch.cuda.memory_allocated()
        del loss
        res.append({
            "base_allocated": base,
            "forward_peak": fwd_peak - base,
            "after_forward_output_held": after_fwd_held - base,
            "after_forward": after_fwd - base,
            "backward_peak": bwd_peak - base,
            "after_backward": after_bwd - base,
            "reserved": torch.cuda.memory_reserved(),
            "seconds": t1 - t0,
        })
    del model
    torch.cuda.empty_cache()
    return res


def main(argv=None):
    _import()
    p = argparse.ArgumentParser(prog="python -m lorasim_hf.saved_tensors", description=__doc__.split("\n")[0])
    p.add_argument("--config", help="HF config.json (needs model_type)")
    p.add_argument("--model-type", default="llama")
    for k in ("hidden-size", "intermediate-size", "num-attention-heads", "num-key-value-heads", "head-dim",
              "vocab-size"):
        p.add_argument("--" + k, type=int)
    p.add_argument("--tie-word-embeddings", action="store_true")
    p.add_argument("--layers", type=int, default=2, help="truncate to this many layers (0: keep)")
    p.add_argument("--seq-len", type=int, required=True)
    p.add_argument("--micro-batch", type=int, default=1)
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--alpha", type=int, default=32)
    p.add_argument("--targets", default=",".join(ALL_TARGETS))
    p.add_argument("--lora-dropout", type=float, default=0.0)
    p.add_argument("--grad-ckpt", action="store_true")
    p.add_argument("--autocast", action="store_true")
    p.add_argument("--precision", choices=list(DTYPES), default="bf16")
    p.add_argument("--attn-impl", choices=["sdpa", "eager"], default="sdpa")
    p.add_argument("--sdpa-backend", choices=["flash", "efficient", "math", "cudnn"], default=None)
    p.add_argument("--use-cache", choices=["config", "true", "false"], default="config",
                   help="model(..., use_cache=); 'config' passes nothing, as a plain loop does")
    p.add_argument("--device", default="cpu")
    p.add_argument("--repeats", type=int, default=2, help="CUDA memory passes (the first warms up)")
    p.add_argument("--no-items", action="store_true", help="leave the per-tensor list out")
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    args.targets = [t for t in args.targets.split(",") if t]
    cfg = load_config_dict(args)

    import torch
    config, summary, listing = count_saved(args, cfg)
    sh = shape_of(config)
    fk = dict(b=args.micro_batch, s=args.seq_len, rank=args.rank, targets=args.targets, dropout=args.lora_dropout,
              precision=args.precision, autocast=args.autocast, attn_impl=args.attn_impl, device=args.device)
    formula = {
        "block": formula_block(sh, **fk),
        "block_first": formula_block(sh, first=True, **fk),
        "outer": formula_outer(sh, b=args.micro_batch, s=args.seq_len, precision=args.precision,
                               autocast=args.autocast),
        "loss_transients": formula_loss_transients(sh, b=args.micro_batch, s=args.seq_len,
                                                   precision=args.precision),
    }
    formula["ckpt_outer"] = formula_ckpt_outer(sh, b=args.micro_batch, s=args.seq_len, precision=args.precision,
                                               autocast=args.autocast)
    for k in ("block", "block_first"):
        formula[k + "_total"] = sum(formula[k].values())
    check = {}
    for layer, v in summary.items():
        if layer.isdigit():
            f = formula["block_first"] if layer == "0" else formula["block"]
            check["layer" + layer] = compare(group_measured(v["components"]), f)
    if "outer" in summary:
        check["outer"] = compare(summary["outer"]["components"], formula["outer"])
    result = {
        "argv": sys.argv[1:] if argv is None else argv,
        "versions": {"torch": torch.__version__, "transformers": __import__("transformers").__version__,
                     "peft": __import__("peft").__version__},
        "device_name": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "shape": sh, "micro_batch": args.micro_batch, "seq_len": args.seq_len, "rank": args.rank,
        "targets": args.targets, "lora_dropout": args.lora_dropout, "autocast": args.autocast,
        "precision": args.precision, "attn_impl": args.attn_impl, "sdpa_backend": args.sdpa_backend,
        "grad_ckpt": args.grad_ckpt, "tokens": args.micro_batch * args.seq_len,
        "saved": summary, "formula": formula, "check": check,
    }
    if not args.no_items:
        result["items"] = listing
    def held(summ):
        # What the allocator should show after the forward (model output dropped): every saved
        # activation plus autocast's saved weight copies (parameters themselves excluded).
        return sum(v["total_bytes"] for k, v in summ.items() if k not in ("other", "items")) + \
            summ.get("other", {}).get("components", {}).get("weight_cast", 0)

    result["hook_saved_total"] = held(summary)
    if args.grad_ckpt:
        result["ckpt_forward"] = count_ckpt_forward(args, cfg)
        result["hook_saved_total_ckpt"] = held(result["ckpt_forward"])
        check["ckpt_outer"] = compare(result["ckpt_forward"]["outer"]["components"], formula["ckpt_outer"])
    result["memory"] = measure_memory(args, cfg)
    # What the allocator should show, from the hook count: after the forward (output dropped) the
    # saved tensors; at the loss's backward two more fp32 n x V buffers (nll_loss's gradient and
    # log_softmax's input gradient) while log_softmax's saved output is still alive.
    nV = result["tokens"] * sh["V"]
    saved = result["hook_saved_total_ckpt"] if args.grad_ckpt else result["hook_saved_total"]
    e = {"fp32": 4, "bf16": 2, "fp16": 2}[args.precision]
    # The model output holds the logits and, with use_cache (the config's default, not with
    # checkpointing), a DynamicCache whose torch.cat copies of k and v are what SDPA saves (no
    # extra) but with eager GQA are extra (repeat_kv's copies are saved instead).
    cache = 0
    if args.attn_impl == "eager" and sh["nkv"] < sh["nq"] and not args.grad_ckpt and args.use_cache != "false":
        cache = 2 * sh["L"] * result["tokens"] * sh["nkv"] * sh["d"] * e
    result["predicted"] = {"after_forward": saved, "backward_loss_peak": saved + 8 * nV,
                           "output_held_extra": nV * e + cache}
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1, default=str)
    # Short report on stdout.
    print(f"{sh['model_type']} b={args.micro_batch} s={args.seq_len} {args.precision} autocast={args.autocast} "
          f"{args.attn_impl} dropout={args.lora_dropout} ckpt={args.grad_ckpt}")
    for layer in sorted(summary, key=str):
        print(f"  {layer:>7}: {summary[layer]['total_bytes']:>14,d} B  {summary[layer]['per_token_bytes']:>10.1f} B/token")
    for k, v in check.items():
        bad = {r: x for r, x in v["rows"].items() if x["measured"] != x["formula"]}
        print(f"  check {k}: measured {v['measured_total']:,} formula {v['formula_total']:,}"
              + ("" if v["equal"] else f"  DIFF {bad}"))
    if result["memory"]:
        print("  memory", json.dumps(result["memory"][-1]))


if __name__ == "__main__":
    main()
