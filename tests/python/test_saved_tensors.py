"""What autograd really saves in a tiny random Llama and Qwen3 with PEFT LoRA (CPU), against what the
lorasim binary counts for it (model/hf_analytics.cpp, the one copy of the formulas).

Measured: the bytes packed under saved_tensors_hooks at micro-batch 2 and 4 (lorasim_hf.autograd_saved).
lorasim: peak allocated of the splits 2x2 and 4x1 of `lorasim simulate --format json` under h200.toml
with the hf-peft stack's memory terms set so that peak allocated is static memory + saved tensors
(saved_scale 1, logits_scale 0, workspace 0). The growth from 2 to 4 sequences is then, on both
sides, what two sequences save; it must agree to the byte (the static memory, RoPE's tables and the
loss's scalar do not grow and drop out).
"""
import argparse
import os

import pytest

from conftest import lorasim_binary

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from lorasim_hf import saved_tensors as st  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BASE_PROFILE = os.path.join(ROOT, "hwprofiles", "h200.toml")
TINY = {
    "llama": {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
              "num_key_value_heads": 2, "vocab_size": 256, "num_hidden_layers": 2, "rope_theta": 10000.0},
    "qwen3": {"model_type": "qwen3", "hidden_size": 64, "intermediate_size": 96, "num_attention_heads": 4,
              "num_key_value_heads": 2, "head_dim": 32, "vocab_size": 256, "num_hidden_layers": 2,
              "rope_theta": 10000.0, "tie_word_embeddings": True},
}
B, S, R = 2, 24, 8


def case(precision, autocast, attn_impl, targets=st.ALL_TARGETS, rank=R):
    return argparse.Namespace(micro_batch=B, seq_len=S, rank=rank, alpha=2 * rank, targets=list(targets),
                              lora_dropout=0.0, precision=precision, autocast=autocast, attn_impl=attn_impl,
                              device="cpu", sdpa_backend=None, use_cache="config")


def compare(model, args):
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/cli/lorasim or $LORASIM)")
    return st.compare_with_lorasim(args, dict(TINY[model]), BASE_PROFILE, lorasim=exe)


# Dropout is left out on the CPU: there nn.Dropout saves an fp32 noise tensor, where CUDA's fused
# kernel (what lorasim counts) saves a 1-byte mask; bench/hf/saved_tensors_gpu.sh covers it.
@pytest.mark.parametrize("model", ["llama", "qwen3"])
@pytest.mark.parametrize("precision, autocast, attn_impl", [
    ("fp32", False, "sdpa"), ("fp32", False, "eager"), ("bf16", False, "sdpa"), ("bf16", True, "sdpa"),
    ("bf16", False, "eager"), ("bf16", True, "eager"),
    # Found by this test: under autocast an fp32 model's linear outputs (and so attention, SwiGLU
    # and the adapters' inputs) are bf16, but model/hf_analytics.cpp counts them at the weights'
    # 4 bytes; lorasim over-counts (by 35% here). Strict: passes once the C++ count is fixed.
    pytest.param("fp32", True, "sdpa", marks=pytest.mark.xfail(strict=True, reason="fp32 model under autocast")),
    pytest.param("fp32", True, "eager", marks=pytest.mark.xfail(strict=True, reason="fp32 model under autocast"))])
def test_lorasim_counts_what_autograd_saves(model, precision, autocast, attn_impl):
    c = compare(model, case(precision, autocast, attn_impl))
    assert c["measured_growth_bytes"] > 0
    assert c["lorasim_growth_bytes"] == c["measured_growth_bytes"], c


# Found by this test: when q, k and v are not adapted, nothing in block 0 before the first adapted
# projection needs a gradient (its input, the embedding output, needs none), so autograd saves
# none of it; model/hf_analytics.cpp leaves only block 0's input norm out, and over-counts (by
# 400 B/token with o,gate,up here: SDPA's q, k, v, out and lse; by 1428 with down only).
BLOCK0_GAP = pytest.mark.xfail(strict=True, reason="block 0 before its first adapted projection")


@pytest.mark.parametrize("targets", [["q_proj", "v_proj"], ["k_proj", "o_proj", "down_proj"],
                                     pytest.param(["down_proj"], marks=BLOCK0_GAP),
                                     pytest.param(["o_proj", "gate_proj", "up_proj"], marks=BLOCK0_GAP)])
def test_lorasim_counts_what_autograd_saves_for_some_targets(targets):
    c = compare("llama", case("bf16", True, "sdpa", targets=targets, rank=4))
    assert c["lorasim_growth_bytes"] == c["measured_growth_bytes"], c


def test_fp32_shared_adapter_inputs(tmp_path):
    # An fp32 model without autocast: lora_A saves the block's own tensor, shared by q/k/v and by
    # gate/up -- the case where PEFT makes no copy.
    c = compare("llama", case("fp32", False, "eager", targets=["q_proj", "k_proj", "up_proj"]))
    assert c["lorasim_growth_bytes"] == c["measured_growth_bytes"], c


def test_the_unit_profile_sets_the_stack_terms():
    text = st.unit_saved_profile(open(BASE_PROFILE).read())
    stack = text.split("[stack.hf-peft]")[1].split("\n[")[0]
    for key, value in st.UNIT_TERMS.items():
        assert f"\n{key} = {value}\n" in stack
    with pytest.raises(ValueError, match="no logits_scale, saved_scale, workspace_bytes in \\[stack.hf-peft\\]"):
        st.unit_saved_profile("[memory]\nsaved_scale = 1.1\n")
