"""lorasim_hf.lightning on a tiny random Llama with a LoRA adapter inside a LightningModule, on the CPU,
with the built lorasim binary: the tuner keeps the effective batch, training after it is
bit-identical to training its split untuned, an out-of-memory above a micro-batch gives the largest
split that fits, and the recorder's rows go through `lorasim validate`."""
import subprocess

import pytest

from conftest import Tokens, LLAMA, lorasim_binary

L = pytest.importorskip("lightning.pytorch")






def lora_module(torch, batch_size, oom_above=None, hparams=False, pkg=L):
    """A LightningModule around a PEFT LoRA Llama (dropout, so the RNG matters) over a shuffled
    dataset (so the data order does); its training_step logs, and raises CUDA's out-of-memory error
    for a micro-batch of more than `oom_above` rows. hparams: the batch size in `hparams` (None: nowhere)."""
    from lightning.pytorch.utilities.parsing import lightning_getattr
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM
    torch.manual_seed(0)
    kw = {k: v for k, v in LLAMA.items() if k != "model_type"}
    base = AutoModelForCausalLM.from_config(AutoConfig.for_model("llama", **kw), dtype=torch.float32)
    peft = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], lora_dropout=0.1,
                                           task_type="CAUSAL_LM"))
    dataset = Tokens(torch, 48, 16, LLAMA["vocab_size"])

    class Module(pkg.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = peft
            if hparams:
                self.save_hyperparameters({"batch_size": batch_size})
            elif hparams is not None:
                self.batch_size = batch_size

        def training_step(self, batch, batch_idx):
            if oom_above is not None and batch["input_ids"].shape[0] > oom_above:
                raise torch.cuda.OutOfMemoryError("CUDA out of memory (from the test)")
            loss = self.model(**batch).loss
            self.log("train_loss", loss)
            return loss

        def configure_optimizers(self):
            return torch.optim.AdamW([p for p in self.parameters() if p.requires_grad], lr=1e-2)

        def train_dataloader(self):
            return torch.utils.data.DataLoader(dataset, batch_size=lightning_getattr(self, "batch_size"), shuffle=True)

    return Module()


def fit(torch, module, accumulation, callbacks=(), precision="32-true", max_steps=3, clip=1.0, pkg=L):
    pkg.seed_everything(7, verbose=False)
    trainer = pkg.Trainer(accelerator="cpu", devices=1, max_steps=max_steps, accumulate_grad_batches=accumulation,
                        precision=precision, gradient_clip_val=clip, callbacks=list(callbacks), logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        num_sanity_val_steps=0)
    trainer.fit(module)
    return trainer


def adapters(module):
    return {n: p.detach().clone() for n, p in module.named_parameters() if p.requires_grad}


def tuner(tmp_path, lorasim, **kw):
    from lorasim_hf.lightning import LorasimTuner
    kw.setdefault("gpu", "h200")
    return LorasimTuner(lorasim=lorasim, cache_dir=str(tmp_path / "cache"), **kw)


@pytest.mark.parametrize("precision", ["32-true", "bf16-mixed", "bf16-true"])
def test_training_after_the_tune_is_bit_identical_to_training_its_split(tmp_path, torch, lorasim, precision):
    tuned = lora_module(torch, batch_size=2)
    callback = tuner(tmp_path, lorasim, max_trial_steps=4, verbose=False)
    trainer = fit(torch, tuned, 4, [callback], precision=precision)
    b, a = callback.result.micro_batch, callback.result.accumulation
    assert b * a == 8 and callback.result.trial_steps <= 4  # the effective batch kept, the budget held
    assert (tuned.batch_size, trainer.accumulate_grad_batches) == (b, a)
    assert trainer.global_step == 3
    plain = lora_module(torch, batch_size=b)
    fit(torch, plain, a, precision=precision)
    got, want = adapters(tuned), adapters(plain)
    assert got.keys() == want.keys() and all(torch.equal(got[k], want[k]) for k in want)
    # ... and the training moved them: the comparison is not of untouched weights.
    fresh = adapters(lora_module(torch, batch_size=b))
    assert any(not torch.equal(fresh[k], want[k]) for k in want)


def test_the_tuner_runs_under_pytorch_lightning_too(tmp_path, torch, lorasim):
    pl = pytest.importorskip("pytorch_lightning")
    tuned = lora_module(torch, batch_size=2, pkg=pl)
    callback = tuner(tmp_path, lorasim, max_trial_steps=3, verbose=False)
    trainer = fit(torch, tuned, 2, [callback], pkg=pl)
    b, a = callback.result.micro_batch, callback.result.accumulation
    assert b * a == 4 and (tuned.batch_size, trainer.accumulate_grad_batches) == (b, a)
    plain = lora_module(torch, batch_size=b, pkg=pl)
    fit(torch, plain, a, pkg=pl)
    got, want = adapters(tuned), adapters(plain)
    assert all(torch.equal(got[k], want[k]) for k in want)


def test_an_out_of_memory_above_a_micro_batch_gives_the_largest_split_that_fits(tmp_path, torch, lorasim,
                                                                                   steady_clock, capsys):
    module = lora_module(torch, batch_size=1, oom_above=4)
    callback = tuner(tmp_path, lorasim, max_trial_steps=10)
    trainer = fit(torch, module, 16, [callback], max_steps=1)
    out = capsys.readouterr().out
    assert "8x2, 1 step: out of memory" in out
    assert (callback.result.micro_batch, callback.result.accumulation) == (4, 4)
    assert (module.batch_size, trainer.accumulate_grad_batches) == (4, 4)
    assert "lorasim tune: 4x4 (batch_size x accumulate_grad_batches)" in out


def test_the_batch_size_is_found_where_batch_size_finder_finds_it(tmp_path, torch, lorasim):
    from lorasim_hf import LorasimError
    with pytest.raises(LorasimError, match="no batch_size on the LightningModule, its datamodule or their hparams"):
        fit(torch, lora_module(torch, 2, hparams=None), 2, [tuner(tmp_path, lorasim, verbose=False)])
    # In hparams (save_hyperparameters' home) it is read and set there.
    module = lora_module(torch, 2, hparams=True)
    callback = tuner(tmp_path, lorasim, max_trial_steps=3, verbose=False)
    trainer = fit(torch, module, 2, [callback], max_steps=1)
    assert module.hparams["batch_size"] == callback.result.micro_batch
    assert module.hparams["batch_size"] * trainer.accumulate_grad_batches == 4


def test_a_module_without_a_transformers_model_needs_model(tmp_path, torch, lorasim):
    """Without a transformers model inside, model= names the architecture lorasim predicts."""
    from lorasim_hf import LorasimError
    module = lora_module(torch, batch_size=2)
    module.model = torch.nn.Sequential(torch.nn.Embedding(LLAMA["vocab_size"], 8),
                                       torch.nn.Linear(8, LLAMA["vocab_size"]))
    module.training_step = lambda batch, batch_idx: torch.nn.functional.cross_entropy(
        module.model(batch["input_ids"]).flatten(0, 1), batch["labels"].flatten())
    with pytest.raises(LorasimError, match="wraps no transformers model, so its architecture is unknown; pass model="):
        fit(torch, module, 2, [tuner(tmp_path, lorasim)])
    callback = tuner(tmp_path, lorasim, model="qwen3-1.7b", max_trial_steps=3, verbose=False)
    fit(torch, module, 2, [callback], max_steps=1)
    assert callback.result.micro_batch * callback.result.accumulation == 4


# Needs lorasim's C++ lightning stack (issue 30): a lorasim built before it refuses `stack=lightning`.
def test_the_recorders_rows_fit_a_cpu_profile_and_go_through_validate(tmp_path, torch, lorasim):
    from lorasim_hf.lightning import LorasimRecorder
    rows = tmp_path / "runs.jsonl"
    recorded = []
    for b, a in ((1, 4), (2, 2), (4, 1)):
        recorder = LorasimRecorder(str(rows), warmup_steps=1)
        fit(torch, lora_module(torch, batch_size=b), a, [recorder], max_steps=4)
        recorded.append(recorder.row)
    row = recorded[1]
    assert (row["micro_batch"], row["accumulation"], row["seq_len"]) == (2, 2, 16)
    assert row["device"] == "cpu" and row["processes"] == 1 and row["collation"] == "fixed"
    assert row["padded_lengths"] == "16:6"  # 3 timed steps of 2 micro-batches, after 1 warm-up step
    assert row["precision"] == "fp32" and row["autocast"] is False and row["stack"] == "lightning"
    assert row["lora_rank"] == 4 and row["lora_targets"] == "q;v" and row["step_time_s"] > 0
    assert len(rows.read_text().splitlines()) == 3
    # lorasim's CPU base refined on the rows (fit), then the rows against it (validate).
    profile = tmp_path / "cpu.toml"
    made = subprocess.run([lorasim, "fit", "--measurements", str(rows), "--out", str(profile)], capture_output=True,
                          text=True)
    assert made.returncode == 0, made.stderr
    proc = subprocess.run([lorasim, "validate", "--measurements", str(rows), "--profile", str(profile)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "3" in proc.stdout
