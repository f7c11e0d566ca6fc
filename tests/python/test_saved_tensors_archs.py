"""What autograd saves in tiny random Gemma 2, Gemma 3 and Phi-3 models with PEFT LoRA (CPU), against
what the lorasim binary counts (model/hf_analytics.cpp), as tests/python/test_saved_tensors.py does for
Llama and Qwen3: the growth of the saved bytes from 2 to 4 sequences must agree to the byte.

The shapes exercise what these architectures add: Gemma's four norms a block, its soft-capped logits
and scores (eager), local layers whose window is shorter than the sequence (a mask, and under sdpa
k and v repeated) or longer (no mask), Gemma 3's q/k norms, Phi-3's fused qkv_proj and gate_up_proj
(whose v slice keeps the whole qkv output alive). Without a KV cache, as Trainer and the probe run
(use_cache False): with one, k and v would be the cache's copies.
"""
import argparse

import pytest

from conftest import lorasim_binary

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from lorasim_hf import saved_tensors as st  # noqa: E402
from test_saved_tensors import BASE_PROFILE  # noqa: E402

B, S, R = 2, 24, 8
GEMMA = {"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
         "head_dim": 32, "vocab_size": 256, "num_hidden_layers": 4, "query_pre_attn_scalar": 32}
TINY = {
    # window 16 < S: the local layers (0 and 2) get a mask; soft-caps on.
    "gemma2": dict(GEMMA, model_type="gemma2", sliding_window=16),
    # window 64 > S: no mask; Gemma 2's soft-caps on.
    "gemma2-wide": dict(GEMMA, model_type="gemma2", sliding_window=64),
    "gemma3": dict(GEMMA, model_type="gemma3_text", sliding_window=16, sliding_window_pattern=2),
    "phi3": {"model_type": "phi3", "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4,
             "num_key_value_heads": 4, "vocab_size": 256, "num_hidden_layers": 2, "pad_token_id": 0,
             "bos_token_id": 1, "eos_token_id": 2},
    # GQA: sdpa passes enable_gqa, so v stays a view of qkv; eager repeats it.
    "phi3-gqa": {"model_type": "phi3", "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4,
                 "num_key_value_heads": 2, "vocab_size": 256, "num_hidden_layers": 2, "pad_token_id": 0,
                 "bos_token_id": 1, "eos_token_id": 2, "sliding_window": 16},
}
PHI3_TARGETS = ["qkv_proj", "o_proj", "gate_up_proj", "down_proj"]


def case(model, precision, autocast, attn_impl):
    targets = PHI3_TARGETS if model.startswith("phi3") else st.ALL_TARGETS
    return argparse.Namespace(micro_batch=B, seq_len=S, rank=R, alpha=2 * R, targets=list(targets),
                              lora_dropout=0.0, precision=precision, autocast=autocast, attn_impl=attn_impl,
                              device="cpu", sdpa_backend=None, use_cache="false")


# An fp32 model without autocast: o_proj's LoRA input is the attention output itself where the kernel
# writes it (b, s, H, d) -- CUDA's flash and efficient kernels always; the CPU kernel follows q's
# layout, which Phi-3's partial-RoPE cat makes (b, H, s, d), so on the CPU `.contiguous()` copies it
# and autograd saves 4 x q_dim bytes a token more than lorasim counts. Strict: fails if that changes.
CPU_LAYOUT = pytest.mark.xfail(strict=True, reason="CPU sdpa output layout after Phi-3's RoPE cat")


def cases():
    for model in TINY:
        for precision, autocast, attn_impl in [("fp32", False, "sdpa"), ("fp32", False, "eager"),
                                               ("bf16", True, "sdpa"), ("bf16", True, "eager"),
                                               ("bf16", False, "sdpa")]:
            marks = [CPU_LAYOUT] if model.startswith("phi3") and (precision, autocast, attn_impl) == (
                "fp32", False, "sdpa") else []
            yield pytest.param(model, precision, autocast, attn_impl, marks=marks)


@pytest.mark.parametrize("model, precision, autocast, attn_impl", list(cases()))
def test_lorasim_counts_what_autograd_saves(model, precision, autocast, attn_impl):
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/cli/lorasim or $LORASIM)")
    c = st.compare_with_lorasim(case(model, precision, autocast, attn_impl), dict(TINY[model]), BASE_PROFILE,
                                lorasim=exe)
    assert c["measured_growth_bytes"] > 0
    assert c["lorasim_growth_bytes"] == c["measured_growth_bytes"], c


@pytest.mark.parametrize("model", ["gemma2", "phi3"])
def test_checkpointed_forward_keeps_block_inputs_and_the_loss_tensors(model):
    # What hf_activation_memory's checkpointed saved_bytes counts per token: every block's input
    # (L h e), the final norm (4h + 4), log-softmax's fp32 output (4V), the labels (8) and, for
    # Gemma 2, the logit soft-cap's tanh output (V e); tests/model/hf_analytics_families_test.cpp
    # holds the C++ count to the same formula at gemma-2-2b's shapes.
    cfg = TINY[model]
    L, h, V, e = cfg["num_hidden_layers"], cfg["hidden_size"], cfg["vocab_size"], 2
    expected = L * h * e + (4 * h + 4) + 4 * V + 8 + (V * e if model == "gemma2" else 0)
    totals = {}
    for mb in (B, 2 * B):
        args = case(model, "bf16", True, "sdpa")
        args.micro_batch = mb
        summary = st.count_ckpt_forward(args, dict(cfg))
        totals[mb] = sum(v["total_bytes"] for k, v in summary.items() if k not in ("other", "items"))
    assert (totals[2 * B] - totals[B]) / (B * S) == expected
