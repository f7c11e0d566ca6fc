"""bench/hf/count_ops.py: counting the operators a training micro-batch dispatches."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "hf"))
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
peft = pytest.importorskip("peft")
import count_ops  # noqa: E402


def test_a_layer_dispatches_its_operators_and_eager_attention_more():
    transformers.logging.set_verbosity_error()
    one, calls1 = count_ops.count(torch, transformers, peft, "qwen3-1.7b", "sdpa", None, 1, False)
    three, calls3 = count_ops.count(torch, transformers, peft, "qwen3-1.7b", "sdpa", None, 3, False)
    eager, _ = count_ops.count(torch, transformers, peft, "qwen3-1.7b", "eager", None, 3, False)
    per_layer = (three - one) / 2
    assert per_layer > 100  # seven adapted projections, norms, RoPE, attention, forward and backward
    assert (calls3 - calls1) / 2 >= 7 * 5  # each adapted projection: the LoRA layer, base, dropout, A, B
    assert eager - three >= 3 * 20  # eager attention's matmuls, softmax, casts... in every layer
