"""One rank of a two-process CPU Trainer run (Gloo) through LorasimCallback; test_callback_ddp.py
launches it with torchrun. Argument: the rows file (rank 0 writes it)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # conftest's LLAMA and the package path

import torch  # noqa: E402

from conftest import LLAMA  # noqa: E402
from test_callback import RandomTokens  # noqa: E402


def main(path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM, Trainer, TrainingArguments

    from lorasim_hf import LorasimCallback
    torch.set_num_threads(1)
    kw = {k: v for k, v in LLAMA.items() if k != "model_type"}
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model("llama", **kw), dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                             lora_dropout=0.0, task_type="CAUSAL_LM"))
    # As `lorasim recommend --gpus 2` says: no unused-parameter search (Trainer turns it on for PEFT models).
    out = os.path.join(os.path.dirname(path), "out")
    targs = TrainingArguments(output_dir=out, max_steps=4, per_device_train_batch_size=2,
                              gradient_accumulation_steps=2, report_to=[], use_cpu=True, logging_strategy="no",
                              save_strategy="no", disable_tqdm=True, dataloader_num_workers=0, ddp_backend="gloo",
                              ddp_find_unused_parameters=False)
    cb = LorasimCallback(path, warmup_steps=2)
    Trainer(model=model, args=targs, train_dataset=RandomTokens(torch, 64, 16, LLAMA["vocab_size"]),
            callbacks=[cb]).train()
    # Every rank saw the same world size; only rank 0 wrote.
    print(f"rank {os.environ.get('RANK')} world {targs.world_size} wrote {cb.row is not None}", flush=True)
    # Gloo's threads abort the interpreter's exit ("terminate called without an active exception")
    # when the process group is still alive then.
    if torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    try:
        main(sys.argv[1])
    except BaseException:  # the launcher keeps only the last lines; the test shows each rank's own failure
        import traceback
        with open(f"{sys.argv[1]}.rank{os.environ.get('RANK', '?')}.err", "w") as f:
            traceback.print_exc(file=f)
        raise
