// Flag value parsing and workload assembly.
#include "cli/args.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

#include "model/architecture.h"
#include "model/decimal.h"
#include "model/error.h"
#include "model/hf_config.h"
#include "model/training_stack.h"
#include "cli/format.h"
#include "cli/quant_args.h"
#include "cli/trainer_preset.h"

namespace lorasim::cli {

void add_workload_options(OptionTable& t, WorkloadArgs& a) {
  t.text("model", a.model, "architecture preset (see `lorasim models`)")
      .quantity("model", "(see `lorasim models`, or pass --model-config path/to/config.json)")
      .custom("model-config", "",
              [&a](const std::string& path) {
                if (path.empty()) throw InputError("--model-config is empty: give a file name, or leave the flag out");
                a.model_config = path;
                // Read once: the architecture and the quantization_config both come from it.
                a.model_config_text = model::read_hf_config_text(path);
              },
              "Hugging Face config.json of a Llama/Qwen/Mistral, Gemma 2/3 or Phi-3 model (overrides --model)")
      .quantity("model_config")
      .integer("seq-len", a.seq_len, 1, "tokens per sequence")
      .quantity("seq_len")
      .integer("lora-rank", a.lora_rank, 1, "LoRA rank r")
      .quantity("lora_rank")
      .real("lora-alpha", a.lora_alpha, 1e-9, 1e9, "LoRA alpha (scale alpha/r)")
      .quantity("lora_alpha")
      .text("lora-targets", a.lora_targets, "adapted projections: comma list of q,k,v,o,gate,up,down, or all")
      .quantity("lora_targets")
      .text("precision", a.precision, "frozen weights and activations: auto, bf16, fp16, fp32 (auto: bf16, or fp16 where bf16 is unsupported)")
      .quantity("precision", "(use --precision fp16)")
      .switch_choice("grad-ckpt", a.grad_ckpt, a.grad_ckpt_default, {"auto", "true", "false"}, "true",
                     "gradient checkpointing of every decoder block: true (also the bare --grad-ckpt), false, or auto "
                     "(simulate and recommend: every split with it on and off, the fastest that fits recommended)");
  add_stack_options(t, a.stack);
  add_quant_options(t, a);
}

GradCkpt grad_ckpt_mode(const WorkloadArgs& a) {
  // --trainer sft on a quantized base leaves it unprepared (cli/trainer_preset.h): ask the preset.
  if (kbit_prepared(with_trainer_preset(a))) return prepared_grad_ckpt(a);  // prepare_model_for_kbit_training's
  std::string text = a.grad_ckpt_default;
  if (a.grad_ckpt)
    text = *a.grad_ckpt;
  else if (a.trainer && text != "auto" && trainer_preset(*a.trainer).grad_ckpt)
    text = "true";  // auto already weighs the preset's setting, and recommends it where it is faster
  if (text == "auto") return GradCkpt::both;
  if (text == "true") return GradCkpt::on;
  if (text == "false") return GradCkpt::off;
  throw InputError("--grad-ckpt must be auto, true or false, got " + quoted_excerpt(text));
}

WorkloadArgs with_grad_ckpt(WorkloadArgs a, bool on) {
  a.grad_ckpt = std::string(on ? "true" : "false");
  return a;
}

void add_stack_options(OptionTable& t, StackArgs& a) {
  t.text("stack", a.stack, "training stack: hf-peft (Transformers Trainer, TRL's SFTTrainer or a plain loop, with PEFT), lightning (a PyTorch Lightning Trainer over the same PEFT model) or lorasim (lorasim's LibTorch runner)")
      .quantity("stack")
      .optional_text("attn-impl", a.attn_impl, "hf-peft's attn_implementation: sdpa (default), eager, flash_attention_2")
      .quantity("attn_impl")
      .optional_text("lora-dropout", a.lora_dropout, "hf-peft's LoraConfig lora_dropout, in [0, 1); default 0")
      .optional_text("allocator", a.allocator, "CUDA allocator: default or expandable (expandable_segments:True in PYTORCH_CUDA_ALLOC_CONF); default: default for hf-peft, expandable for lorasim")
      .optional_text("autocast", a.autocast, "hf-peft's forward under torch.autocast: true (default; Trainer with bf16/fp16) or false (a plain loop on a half-precision model)")
      .optional_text("fused-lm-head", a.fused_lm_head, "hf-peft's loss through TRL's fused LM head: true (SFTTrainer's default in TRL 1.x) or false (default: Transformers' loss over the full logits)");
}

model::StackSpec build_stack(const StackArgs& a) {
  const model::StackKind kind = [&] {
    try {
      return model::parse_stack(a.stack);
    } catch (const InputError& e) {
      throw InputError(std::string("--stack: ") + e.what());
    }
  }();
  model::StackSpec s = model::training_stack(kind).default_spec();
  // Each option is checked against the stack as it is applied, so the error names its flag.
  auto apply = [&](const char* flag, const boost::optional<std::string>& text, const std::function<void()>& set) {
    if (!text) return;
    try {
      set();
      s.validate();
    } catch (const InputError& e) {
      // A stack that lacks the option names the stack that has it: the flag that gets it.
      const std::string what = std::string(e.what()) + (e.quantity() == "stack" ? " (--stack hf-peft)" : "");
      throw InputError(what.rfind(flag, 0) == 0 ? what : std::string(flag) + ": " + what);
    }
  };
  apply("--attn-impl", a.attn_impl, [&] { s.attn_impl = model::parse_attn_impl(*a.attn_impl); });
  apply("--lora-dropout", a.lora_dropout, [&] { s.lora_dropout = parse_real("--lora-dropout", *a.lora_dropout, 0, 1); });
  apply("--allocator", a.allocator, [&] { s.allocator = model::parse_allocator(*a.allocator); });
  apply("--autocast", a.autocast, [&] {
    if (*a.autocast != "true" && *a.autocast != "false")
      throw InputError("--autocast must be true or false, got " + quoted_excerpt(*a.autocast));
    s.autocast = *a.autocast == "true";
  });
  apply("--fused-lm-head", a.fused_lm_head, [&] {
    if (*a.fused_lm_head != "true" && *a.fused_lm_head != "false")
      throw InputError("--fused-lm-head must be true or false, got " + quoted_excerpt(*a.fused_lm_head));
    s.fused_lm_head = *a.fused_lm_head == "true";
  });
  return s;
}

void require_runner_stack(const model::StackSpec& stack, const std::string& command) {
  if (model::training_stack(stack.kind).calibration() == model::StackCalibration::runner) return;
  throw InputError("--stack " + std::string(model::stack_name(stack.kind)) + ": `lorasim " + command +
                   "` runs lorasim's own LibTorch runner (--stack lorasim); to check an hf-peft run, record it "
                   "with lorasim_hf.LorasimCallback in your Trainer and run `lorasim validate --measurements FILE`");
}

std::string model_config_text(const WorkloadArgs& a) {
  return a.model_config_text.empty() ? model::read_hf_config_text(a.model_config) : a.model_config_text;
}

namespace {
// PEFT matches target names against the model's modules: Phi-3's fused qkv_proj and
// gate_up_proj exist in Phi-3 only, and LoraConfig fails on a model without them.
void check_fused_target_names(const std::string& text, const model::Architecture& arch) {
  std::string list = "," + text + ",";
  list.erase(std::remove(list.begin(), list.end(), ' '), list.end());
  for (const auto& [name, fused] : {std::pair<const char*, bool>{"qkv", arch.fused_qkv}, {"gate_up", arch.fused_gate_up}}) {
    if (fused) continue;
    for (const std::string& form : {std::string(name), std::string(name) + "_proj"})
      if (list.find("," + form + ",") != std::string::npos)
        throw InputError("--lora-targets " + form + ": " + arch.name + " has no fused " + name + "_proj module (Phi-3 "
                         "has); name its projections, e.g. " + (std::string(name) == "qkv" ? "q,k,v" : "gate,up"),
                         "lora_targets");
  }
}
}  // namespace

model::Workload build_workload(const WorkloadArgs& given, bool bf16_supported) {
  const WorkloadArgs a = with_trainer_preset(given);
  const GradCkpt ckpt = grad_ckpt_mode(a);
  if (ckpt == GradCkpt::both)
    throw InputError("--grad-ckpt auto weighs both settings, which only `lorasim simulate` and `lorasim recommend` "
                     "do: give --grad-ckpt true or false");
  model::Workload w;
  w.arch = a.model_config.empty() ? model::preset(a.model) : model::parse_hf_config(model_config_text(a), a.model_config);
  w.train.seq_len = a.seq_len;
  w.lora.rank = a.lora_rank;
  w.lora.alpha = a.lora_alpha;
  w.lora.targets = model::parse_targets(a.lora_targets);
  check_fused_target_names(a.lora_targets, w.arch);
  if (a.precision == "auto")
    w.train.precision = bf16_supported ? model::Precision::bf16 : model::Precision::fp16;
  else
    w.train.precision = model::parse_precision(a.precision);
  w.train.grad_ckpt = ckpt == GradCkpt::on;
  w.stack = build_stack(a.stack);
  apply_quant(a, w);
  w.validate();
  return w;
}

int64_t parse_int(const std::string& flag, const std::string& text, int64_t min) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  // Decimal digits only (model/decimal.h): no hex, no spaces, no "1e3".
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec == std::errc::result_out_of_range)
    throw InputError(flag + " must be between " + std::to_string(min) + " and " +
                     std::to_string(std::numeric_limits<int64_t>::max()) + ", got " + quoted_excerpt(text));
  if (text.empty() || ec != std::errc() || ptr != end)
    throw InputError(flag + " must be a whole number, got " + quoted_excerpt(text));
  if (v < min) throw InputError(flag + " must be at least " + std::to_string(min) + ", got " + quoted_excerpt(text));
  return v;
}

double parse_real(const std::string& flag, const std::string& text, double lo, double hi) {
  // One message for every value outside [lo, hi], a number or not: nan, NaN, 4.9e-324, 0x10.
  const std::optional<double> v = model::parse_decimal(text);
  if (!v || !(*v >= lo && *v <= hi))
    throw InputError(flag + " must be a number between " + shortest(lo) + " and " + shortest(hi) + ", got " +
                     quoted_excerpt(text));
  return *v;
}

int64_t parse_bytes(const std::string& flag, const std::string& text) {
  double v = 0;
  const size_t used = model::leading_decimal(text, v);
  std::string unit = text.substr(used);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tib") scale = 1024.0 * 1024 * 1024 * 1024;  // reads back what output prints
  else if (unit == "kb") scale = 1e3;
  else if (unit == "mb") scale = 1e6;
  else if (unit == "gb") scale = 1e9;
  else if (unit == "tb") scale = 1e12;
  if (used == 0 || scale == 0 || !(v > 0) || !std::isfinite(v))
    throw InputError(flag + " must be a positive size such as 24GiB, 24G, 500MiB, 2TiB or 16000000000, got " +
                     quoted_excerpt(text));
  // Below one byte the conversion truncates to 0, which every caller takes for "unset".
  if (v * scale < 1) throw InputError(flag + " must be at least 1 byte, got " + quoted_excerpt(text));
  // Beyond int64 the conversion is undefined; no device comes near 8 EiB anyway.
  if (v * scale >= 9.2e18) throw InputError(flag + " must be below 8 EiB, got " + quoted_excerpt(text));
  return static_cast<int64_t>(v * scale);
}

Format parse_format(const std::string& text) {
  if (text == "table") return Format::table;
  if (text == "csv") return Format::csv;
  if (text == "json") return Format::json;
  throw InputError("--format must be table, csv or json, got " + quoted_excerpt(text));
}

}  // namespace lorasim::cli
