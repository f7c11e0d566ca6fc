"""A Python user's path through the pip-installed lorasim, on the CPU (issue 29; run by
pip_install_test.sh after it installs the wheel): a CPU profile made by `lorasim calibrate`, a tiny
Trainer and a tiny SFTTrainer timed by LorasimCallback, those rows validated and fitted against the
profile, and tune() setting a split on a fresh Trainer and a fresh SFTTrainer.

Run with a Python that has torch, transformers, peft, trl and datasets, with $LORASIM the installed
binary and lorasim_hf importable from the installed wheel (the caller puts it first on PYTHONPATH
and names it with --package-dir). Models and data are random and built here: nothing is downloaded.
Usage: pip_user_path.py --work DIR --package-dir DIR
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # tiny models: more threads on a shared CPU are slower

LLAMA = {"model_type": "llama", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 128, "rope_theta": 10000.0}
QWEN3 = {"model_type": "qwen3", "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 3,
         "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 128,
         "layer_types": ["full_attention"] * 3, "tie_word_embeddings": True}
EFFECTIVE_BATCH = 4


def fail(message):
    sys.exit(f"pip_user_path: FAIL: {message}")


def say(message):
    print(f"pip_user_path: {message}", flush=True)


def lorasim(*args):
    """The pip-installed binary; its stdout, or a failure naming the command and its stderr's tail."""
    proc = subprocess.run([os.environ["LORASIM"], *args], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        fail(f"`lorasim {' '.join(args)}` exited {proc.returncode}: {proc.stderr.strip()[-2000:]}")
    return proc.stdout


def peft_model(torch, config):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM
    kw = {k: v for k, v in config.items() if k != "model_type"}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(config["model_type"], **kw), dtype=torch.float32)
    return get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                            lora_dropout=0.05, task_type="CAUSAL_LM"))


class Tokens:
    """Random token rows of one length: a plain map-style torch Dataset, as many Trainer scripts pass."""

    def __init__(self, torch, n, seq_len, vocab):
        self.ids = torch.randint(0, vocab, (n, seq_len), generator=torch.Generator().manual_seed(1))

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


def common_args(work, name, max_steps, micro_batch):
    return dict(output_dir=os.path.join(work, name), max_steps=max_steps, per_device_train_batch_size=micro_batch,
                gradient_accumulation_steps=EFFECTIVE_BATCH // micro_batch, report_to=[], use_cpu=True, logging_strategy="no",
                save_strategy="no", disable_tqdm=True, dataloader_num_workers=0)


def trainer(torch, work, name, micro_batch=1, max_steps=4, callbacks=()):
    from transformers import Trainer, TrainingArguments
    args = TrainingArguments(**common_args(work, name, max_steps, micro_batch))
    return Trainer(model=peft_model(torch, LLAMA), args=args,
                   train_dataset=Tokens(torch, 32, 16, LLAMA["vocab_size"]), callbacks=list(callbacks))


def sft_trainer(torch, work, name, micro_batch=1, max_steps=4, callbacks=()):
    """TRL's SFTTrainer on texts of many lengths, with a word-level tokenizer built here."""
    import datasets
    import transformers
    import trl
    from tokenizers import Tokenizer, models, pre_tokenizers
    words = [f"w{i}" for i in range(QWEN3["vocab_size"] - 3)]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(["<unk>", "<pad>", "</s>"] + words)},
                                     unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="<unk>", pad_token="<pad>",
                                                     eos_token="</s>")
    gen = random.Random(3)
    texts = [" ".join(f"w{gen.randrange(100)}" for _ in range(gen.randint(4, 30))) for _ in range(48)]
    config = trl.SFTConfig(max_length=24, bf16=False, **common_args(work, name, max_steps, micro_batch))
    return trl.SFTTrainer(model=peft_model(torch, QWEN3), args=config, processing_class=tokenizer,
                          train_dataset=datasets.Dataset.from_dict({"text": texts}), callbacks=list(callbacks))


def check_tuned(name, t, result):
    """tune() set a split of the effective batch on the trainer's arguments, and reported it."""
    split = (t.args.per_device_train_batch_size, t.args.gradient_accumulation_steps)
    if split != (result.micro_batch, result.accumulation):
        fail(f"tune on the {name} returned {result.micro_batch}x{result.accumulation} but set {split[0]}x{split[1]}")
    if result.micro_batch * result.accumulation != EFFECTIVE_BATCH:
        fail(f"tune on the {name} set {result.micro_batch}x{result.accumulation}, not the effective batch "
             f"{EFFECTIVE_BATCH}")
    if not 1 <= result.trial_steps <= 6:
        fail(f"tune on the {name} spent {result.trial_steps} trial steps, not 1 to 6 (max_trial_steps=6)")
    say(f"tune set {result.micro_batch}x{result.accumulation} on the {name} ({result.trial_steps} trial steps)")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True, help="an empty directory for the profile, rows and outputs")
    ap.add_argument("--package-dir", required=True, help="where lorasim_hf must be imported from (the wheel's)")
    opt = ap.parse_args()
    work, started = os.path.abspath(opt.work), time.monotonic()
    exe = os.environ.get("LORASIM")
    if not exe or not os.access(exe, os.X_OK):
        fail(f"$LORASIM ({exe!r}) is not an executable: set it to the pip-installed lorasim")
    for module in ("torch", "transformers", "peft", "trl", "datasets"):
        try:
            __import__(module)
        except ImportError as e:
            fail(f"this Python ({sys.executable}) cannot import {module} ({e}): run it with the project venv's")
    import lorasim_hf
    from lorasim_hf import LorasimCallback, recommend
    from lorasim_hf.tune import tune  # the function (importing the submodule rebinds the package name)
    package = os.path.realpath(os.path.dirname(lorasim_hf.__file__))
    if package != os.path.realpath(os.path.join(opt.package_dir, "lorasim_hf")):
        fail(f"lorasim_hf was imported from {package}, not from {opt.package_dir} (put it first on PYTHONPATH)")
    if recommend.find_lorasim() != exe:
        fail(f"find_lorasim() gave {recommend.find_lorasim()}, not $LORASIM {exe}")
    import datasets
    import torch
    torch.set_num_threads(1)
    datasets.disable_progress_bars()

    # 1. The CPU's own profile, calibrated through the probe in this Python.
    profile = os.path.join(work, "cpu.toml")
    lorasim("calibrate", "--stack", "hf-peft", "--device", "cpu", "--python", sys.executable, "--out", profile)
    if "[stack.hf-peft]" not in open(profile).read():
        fail(f"{profile} has no [stack.hf-peft] table")
    say(f"calibrated {profile} in {time.monotonic() - started:.0f} s")

    # 2. A Trainer and an SFTTrainer, each at two splits (fit needs 3 rows), timed by the callback
    #    into one rows file: a row per train().
    rows = os.path.join(work, "rows.jsonl")
    runs = [(make, micro_batch) for make in (trainer, sft_trainer) for micro_batch in (1, 2)]
    for make, micro_batch in runs:
        make(torch, work, f"{make.__name__}-{micro_batch}", micro_batch, callbacks=[LorasimCallback(rows)]).train()
    written = [json.loads(line) for line in open(rows)]
    got = sorted((r["micro_batch"], r["fused_lm_head"], r["device"]) for r in written)
    # SFTTrainer's rows say TRL's fused LM head; both are the CPU's.
    if got != sorted((b, make is sft_trainer, "cpu") for make, b in runs):
        fail(f"{rows} should hold one CPU row per trainer run {[(m.__name__, b) for m, b in runs]}; "
             f"its (micro_batch, fused_lm_head, device) are {got}")
    say(f"LorasimCallback wrote {len(written)} rows (micro_batch, fused_lm_head, device): {got}")

    # 3. Those rows against the calibrated profile, then refitted onto it.
    report = lorasim("validate", "--measurements", rows, "--profile", profile)
    say("validate: " + (report.strip().splitlines() or ["(no output)"])[-1])
    fitted = os.path.join(work, "fitted.toml")
    lorasim("fit", "--measurements", rows, "--profile", profile, "--out", fitted)
    if not os.path.isfile(fitted):
        fail(f"lorasim fit exited 0 but wrote no {fitted}")
    say(f"fit wrote {fitted}")

    # 4. tune() on a fresh Trainer and a fresh SFTTrainer, from the calibrated profile.
    cache = os.path.join(work, "tune-cache")
    for name, make in (("Trainer", trainer), ("SFTTrainer", sft_trainer)):
        t = make(torch, work, f"tuned-{name}")
        check_tuned(name, t, tune(t, profile=profile, max_trial_steps=6, cache_dir=cache, verbose=False))
    say(f"OK in {time.monotonic() - started:.0f} s (lorasim_hf from {package}, lorasim {exe})")


if __name__ == "__main__":
    main()
