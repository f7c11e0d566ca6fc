"""What the tuner's trials may change, saved before them and put back after, so that
`trainer.train()` after `tune` is bit-identical to the same training without it.

- every random number generator the training draws from (python, numpy, torch CPU, torch CUDA);
- the trainable weights: the trials train them in place, and a copy kept in host memory (not on
  the device, whose memory the trials measure) is copied back, bit for bit;
- the gradients, the modules' train/eval flags, the model's instance-level `forward`;
- gradient checkpointing as it was (the trials turn it on and off when weighing it): each module's
  flag and checkpoint function, and its forward hooks (turning it on may add one);
- the trainer's plain-data attributes (TRL's `_metrics`, `_total_train_tokens`, ...), its
  `state` and `control`, and the fp16 loss scaler of its accelerator.
"""
import copy
import random

from lorasim_hf._deps import require

_torch = require("torch")
_PLAIN = (bool, int, float, str, bytes, type(None))
_MISSING = object()


def _is_plain(value, depth=0):
    """Whether `value` is built of numbers, strings and containers only (safe and cheap to deep-copy)."""
    if isinstance(value, _PLAIN):
        return True
    if depth > 8:
        return False
    if isinstance(value, dict):
        return all(_is_plain(k, depth + 1) and _is_plain(v, depth + 1) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(_is_plain(v, depth + 1) for v in value)
    return False


def rng_state():
    state = {"python": random.getstate(), "torch": _torch.get_rng_state()}
    try:
        import numpy
        state["numpy"] = numpy.random.get_state()
    except ImportError:
        pass
    if _torch.cuda.is_available() and _torch.cuda.is_initialized():
        state["cuda"] = _torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state):
    random.setstate(state["python"])
    _torch.set_rng_state(state["torch"])
    if "numpy" in state:
        import numpy
        numpy.random.set_state(state["numpy"])
    if "cuda" in state:
        _torch.cuda.set_rng_state_all(state["cuda"])


class _Attributes:
    """The plain-data attributes of one object: restored by value, and attributes added since removed."""

    def __init__(self, obj):
        self.obj = obj
        self.names = set(vars(obj))
        self.values = {k: copy.deepcopy(v) for k, v in vars(obj).items() if _is_plain(v)}

    def restore(self):
        for k in [k for k in vars(self.obj) if k not in self.names]:
            delattr(self.obj, k)
        for k, v in self.values.items():
            setattr(self.obj, k, v)


class _Checkpointing:
    """Each module's checkpointing attributes (what `gradient_checkpointing_enable` sets) and forward
    hooks (`enable_input_require_grads` adds one), put back as they were."""

    ATTRIBUTES = ("gradient_checkpointing", "_gradient_checkpointing_func", "_require_grads_hook",
                  "_require_grads_hooks")
    HOOKS = ("_forward_hooks", "_forward_hooks_with_kwargs", "_forward_hooks_always_called", "_forward_pre_hooks",
             "_forward_pre_hooks_with_kwargs")

    def __init__(self, model):
        self.saved = [(m, {k: vars(m).get(k, _MISSING) for k in self.ATTRIBUTES},
                       {h: dict(getattr(m, h)) for h in self.HOOKS if hasattr(m, h)}) for m in model.modules()]

    def restore(self):
        for m, attributes, hooks in self.saved:
            for k, v in attributes.items():
                if v is _MISSING:
                    vars(m).pop(k, None)
                else:
                    vars(m)[k] = v
            for h, saved in hooks.items():
                current = getattr(m, h)
                current.clear()
                current.update(saved)


def _scaler_state(scaler):
    # GradScaler keeps its scale and growth tracker as tensors it updates in place.
    return {k: v.clone() if _torch.is_tensor(v) else copy.deepcopy(v) for k, v in vars(scaler).items()}


class TrainingState:
    """Saves at construction, `swap_in_weights()` before the trials, `restore()` after (idempotent)."""

    def __init__(self, trainer, model, scaler=_MISSING):
        """scaler: the fp16 loss scaler (default: the accelerator's, where transformers' Trainer keeps it)."""
        self.trainer, self.model = trainer, model
        self.rng = rng_state()
        self.attributes = [_Attributes(trainer)] + [_Attributes(o) for o in (getattr(trainer, "state", None),
                                                                             getattr(trainer, "control", None))
                                                    if o is not None]
        if scaler is _MISSING:
            scaler = getattr(getattr(trainer, "accelerator", None), "scaler", None)
        self.scaler = (scaler, _scaler_state(scaler)) if scaler is not None else None
        self.flags = [(m, m.training) for m in model.modules()]
        self.checkpointing = _Checkpointing(model)
        self.forward = model.__dict__.get("forward", _MISSING)
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.grads = [p.grad for p in self.params]
        self.weights = None
        self.restored = False

    def swap_in_weights(self):
        """The trials train the weights in place; a copy in host memory puts them back exactly. A
        copy on the device would take memory the trials measure: at a boundary (a split that
        leaves tens of MiB free) it alone would run the split out of memory."""
        with _torch.no_grad():
            self.weights = [p.detach().to("cpu", copy=True) for p in self.params]

    def restore(self):
        if self.restored:
            return
        self.restored = True
        for p, grad in zip(self.params, self.grads):
            p.grad = grad
        if self.weights is not None:
            with _torch.no_grad():
                for p, w in zip(self.params, self.weights):
                    p.copy_(w)
        if self.forward is _MISSING:
            self.model.__dict__.pop("forward", None)
        else:
            self.model.forward = self.forward
        for m, training in self.flags:
            m.training = training
        self.checkpointing.restore()
        if self.scaler is not None:
            scaler, saved = self.scaler
            vars(scaler).clear()
            vars(scaler).update(saved)
        for a in self.attributes:
            a.restore()
        set_rng_state(self.rng)
