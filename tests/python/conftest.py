"""Shared fixtures: tiny random models built from configs written here (no downloads), on the CPU."""
import os
import subprocess
import sys

import pytest

PYTHON_DIR = os.path.join(os.path.dirname(__file__), "..", "..", "python")
sys.path.insert(0, os.path.abspath(PYTHON_DIR))  # the package also works without an editable install
# One thread: the tests' models are tiny, and a shared CPU makes more threads slower, not faster.
os.environ.setdefault("OMP_NUM_THREADS", "1")

LLAMA = {"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "rope_theta": 10000.0}
QWEN3 = {"model_type": "qwen3", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 3,
         "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 128,
         "layer_types": ["full_attention"] * 3, "tie_word_embeddings": True}


def lorasim_binary():
    """A lorasim binary to parse rows with: $LORASIM, else the repo's build/cli/lorasim; None if neither."""
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    for path in (os.environ.get("LORASIM"), os.path.join(root, "build", "cli", "lorasim"),
                 os.path.join(root, "build", "lorasim")):
        if path and os.access(path, os.X_OK):
            return path
    return None


def lorasim_validate(rows_path):
    """Runs `lorasim validate` on a measurement file, so the C++ reader (the one parser) checks it."""
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/lorasim or $LORASIM)")
    # The rows say where they ran (the CPU here); compared with the H200 profile on purpose.
    proc = subprocess.run([exe, "validate", "--measurements", rows_path, "--gpu", "h200", "--allow-device-mismatch"],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.fixture(scope="session")
def torch():
    import torch
    torch.set_num_threads(1)
    return torch


@pytest.fixture(scope="module")
def lorasim():
    """The lorasim binary the tests run, or the test is skipped."""
    exe = lorasim_binary()
    if exe is None:
        pytest.skip("no lorasim binary (build/cli/lorasim or $LORASIM)")
    return exe


@pytest.fixture
def steady_clock(monkeypatch):
    """Every micro-batch and optimizer step of a tune trial takes 1 ms: a step of accumulation a takes
    (a + 1) ms, so the trials' timings and the search's sequence are exact, not the CPU's noise."""
    from lorasim_hf.tune_trials import TrialLoop
    ticks = iter(range(10**9))
    monkeypatch.setattr(TrialLoop, "_mark", lambda self: next(ticks) * 1e-3)


class Tokens:
    """Random token rows of one length: a plain torch Dataset, as many Trainer scripts pass."""

    def __init__(self, torch, n, seq_len, vocab):
        self.ids = torch.randint(0, vocab, (n, seq_len), generator=torch.Generator().manual_seed(1))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}
