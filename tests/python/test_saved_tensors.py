"""lorasim_hf.saved_tensors on a tiny random Llama and Qwen3 (CPU): the saved-tensor bytes it
measures per block equal docs/hf-stack-memory.md's formulas exactly."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("peft")

from lorasim_hf import saved_tensors as st  # noqa: E402

TINY = {
    "llama": ["--model-type", "llama", "--hidden-size", "64", "--intermediate-size", "128",
              "--num-attention-heads", "4", "--num-key-value-heads", "2", "--vocab-size", "256"],
    "qwen3": ["--model-type", "qwen3", "--hidden-size", "64", "--intermediate-size", "96",
              "--num-attention-heads", "4", "--num-key-value-heads", "2", "--head-dim", "32",
              "--vocab-size", "256"],
}
B, S, R = 2, 24, 8


def run(tmp_path, model, *extra):
    out = tmp_path / "out.json"
    st.main(TINY[model] + ["--layers", "2", "--seq-len", str(S), "--micro-batch", str(B), "--rank", str(R),
                           "--out", str(out), *extra])
    return json.loads(out.read_text())


def block_bytes(r, layer):
    return r["saved"][layer]["total_bytes"]


@pytest.mark.parametrize("model", ["llama", "qwen3"])
@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_fp32_blocks_match_formula(tmp_path, model, attn):
    r = run(tmp_path, model, "--precision", "fp32", "--attn-impl", attn)
    for layer in ("0", "1"):
        c = r["check"]["layer" + layer]
        assert c["equal"], c["rows"]
    assert r["check"]["outer"]["equal"], r["check"]["outer"]["rows"]
    sh = r["shape"]
    h, nq, nkv, d, i = sh["h"], sh["nq"], sh["nkv"], sh["d"], sh["i"]
    n = B * S
    # Written out once more by hand (fp32, no autocast, no dropout): two norms (fp32 input +
    # rstd), lora_A inputs shared per input tensor (norm output for q/k/v and gate/up, the MLP
    # product for down; o's input is SDPA's saved output), 7 lora_A outputs, attention, SwiGLU.
    per_token = 2 * (4 * h + 4) + 4 * (h + h + i) + 7 * R * 4 + 3 * i * 4
    if attn == "sdpa":
        per_token += 4 * (2 * nq * d + 2 * nkv * d) + 4 * nq
    else:
        per_token += 4 * nq * d  # o_proj's input: the eager output's contiguous copy
        per_token += 4 * 3 * nq * d + 4 * nq * S  # q, repeated k and v (GQA), fp32 probabilities
    if model == "qwen3":
        per_token += (nq + nkv) * (4 * d + 4)
    assert block_bytes(r, "1") == n * per_token
    # Block 0's input (the embedding output) needs no gradient: its input norm saves nothing.
    assert block_bytes(r, "0") == n * (per_token - (4 * h + 4))


@pytest.mark.parametrize("model", ["llama", "qwen3"])
def test_bf16_autocast_on_and_off(tmp_path, model):
    off = run(tmp_path, model, "--precision", "bf16")
    on = run(tmp_path, model, "--precision", "bf16", "--autocast")
    for r in (off, on):
        for k in ("layer0", "layer1", "outer"):
            assert r["check"][k]["equal"], (k, r["check"][k]["rows"])
    # Autocast off: each adapter saves an fp32 copy of its input and an fp32 lora_A output;
    # on: bf16. The difference is 2 bytes per adapted input feature and per rank element.
    sh = off["shape"]
    in_features = 5 * sh["h"] + sh["nq"] * sh["d"] + sh["i"]
    diff = block_bytes(off, "1") - block_bytes(on, "1")
    assert diff == B * S * 2 * (in_features + 7 * R)


@pytest.mark.parametrize("model", ["llama", "qwen3"])
def test_dropout_adds_a_copy_and_a_mask(tmp_path, model):
    base = run(tmp_path, model, "--precision", "fp32", "--attn-impl", "sdpa")
    drop = run(tmp_path, model, "--precision", "fp32", "--attn-impl", "sdpa", "--lora-dropout", "0.1")
    for k in ("layer0", "layer1", "outer"):
        assert drop["check"][k]["equal"], (k, drop["check"][k]["rows"])
    sh = base["shape"]
    h, qd, i = sh["h"], sh["nq"] * sh["d"], sh["i"]
    n = B * S
    # Each adapter: a dropped fp32 copy of its input saved for lora_A, and the mask (on the CPU
    # the fp32 noise tensor; on CUDA a bool). Minus the inputs lora_A shared without dropout.
    per_adapter_inputs = 5 * h + qd + i
    shared_before = h + h + i  # norm output (q/k/v), norm output (gate/up), MLP product (down)
    extra = n * (4 * per_adapter_inputs + 4 * per_adapter_inputs - 4 * shared_before)
    assert block_bytes(drop, "1") - block_bytes(base, "1") == extra


def test_checkpointing_keeps_block_inputs(tmp_path):
    r = run(tmp_path, "llama", "--precision", "bf16", "--grad-ckpt")
    c = r["check"]["ckpt_outer"]
    assert c["equal"], c["rows"]
    assert c["rows"]["block_inputs"]["measured"] == 2 * B * S * r["shape"]["h"] * 2
