// `lorasim profiles` and `lorasim models`: what is built in.
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/describe.h"
#include "cli/format.h"
#include "hwprofiles/builtin.h"
#include "model/analytics.h"
#include "model/architecture.h"

namespace lorasim::cli {
namespace {

bool parse_format_only(const Args& args, const char* usage, Format& format) {
  std::string f = "table";
  OptionTable t;
  t.choice("format", f, {"table", "csv", "json"}, "table, csv or json");
  if (!t.parse(args)) {
    std::cout << usage << "\n" << t.description() << "\n";
    return false;
  }
  format = parse_format(f);
  return true;
}

}  // namespace

int cmd_profiles(const Args& args) {
  Format format;
  if (!parse_format_only(args, "usage: lorasim profiles [--format table|csv|json]\n\n"
                               "Lists the GPU profiles embedded in this binary. A prior profile holds\n"
                               "datasheet figures and rule-of-thumb coefficients; a calibrated one was\n"
                               "fitted from real training steps on that GPU.\n\n"
                               "examples:\n"
                               "  lorasim profiles\n"
                               "  lorasim profiles --format json",
                         format))
    return kOk;
  nlohmann::json all = nlohmann::json::array();
  Table t({"name", "gpu", "memory", "bf16 TFLOP/s", "HBM GB/s", "bf16", "status", "expected error"});
  if (format == Format::csv) std::cout << "name,display_name,memory_bytes,peak_bf16_tflops,peak_fp16_tflops,hbm_bandwidth_gbps,bf16_supported,calibrated\n";
  for (const auto& name : hw::builtin_profile_names()) {
    const hw::Profile p = hw::builtin_profile(name);
    const model::HardwareModel& h = p.hw;
    nlohmann::json j = profile_json(p);
    j["peak_bf16_tflops"] = h.peak_bf16_tflops;
    j["peak_fp16_tflops"] = h.peak_fp16_tflops;
    j["hbm_bandwidth_gbps"] = h.hbm_bandwidth_gbps;
    j["bf16_supported"] = h.bf16_supported;
    j["compute_capability"] = model::compute_capability(h);
    all.push_back(j);
    if (format == Format::csv)
      std::cout << name << ",\"" << h.display_name << "\"," << h.memory_bytes << ',' << h.peak_bf16_tflops << ','
                << h.peak_fp16_tflops << ',' << h.hbm_bandwidth_gbps << ',' << (h.bf16_supported ? "true" : "false")
                << ',' << (h.calibrated ? "true" : "false") << '\n';
    t.add({name, h.display_name, human_bytes(static_cast<double>(h.memory_bytes)),
           h.bf16_supported ? fixed(h.peak_bf16_tflops, 0) : "-", fixed(h.hbm_bandwidth_gbps, 0),
           h.bf16_supported ? "yes" : "no (fp16)", h.calibrated ? "calibrated" : "prior",
           "time ~" + fixed(h.value("expected_time_error") * 100, 0) + "%, memory ~" +
               fixed(h.value("expected_memory_error") * 100, 0) + "%" +
               (h.value("expected_memory_error_bytes") > 0 ? " + " + human_bytes(h.value("expected_memory_error_bytes"))
                                                           : "")});
  }
  if (format == Format::json) std::cout << all.dump(2) << "\n";
  if (format == Format::table) {
    t.print(std::cout);
    std::cout << "\nUse one with --gpu NAME, or a calibrated file with --profile FILE.\n";
  }
  return kOk;
}

int cmd_models(const Args& args) {
  Format format;
  if (!parse_format_only(args, "usage: lorasim models [--format table|csv|json]\n\n"
                               "Lists the built-in architecture presets (use with --model NAME). Other\n"
                               "Llama/Qwen/Mistral, Gemma 2/3 and Phi-3 models: --model-config path/to/config.json\n"
                               "(docs/models.md says what each model_type counts).\n\n"
                               "examples:\n"
                               "  lorasim models\n"
                               "  lorasim models --format csv",
                         format))
    return kOk;
  nlohmann::json all = nlohmann::json::array();
  Table t({"name", "params", "layers", "hidden", "ffn", "heads", "kv heads", "head dim", "vocab", "tied", "lora r=16"});
  if (format == Format::csv) std::cout << "name,base_params,num_layers,hidden_size,intermediate_size,num_heads,num_kv_heads,head_dim,vocab_size,tie_embeddings,default_lora_params\n";
  for (const auto& a : model::presets()) {
    const model::ParamCounts pc = model::count_params(a, model::LoraSpec{});
    all.push_back({{"name", a.name}, {"base_params", pc.base}, {"num_layers", a.num_layers},
                   {"hidden_size", a.hidden_size}, {"intermediate_size", a.intermediate_size},
                   {"num_heads", a.num_heads}, {"num_kv_heads", a.num_kv_heads}, {"head_dim", a.head_dim},
                   {"vocab_size", a.vocab_size}, {"tie_embeddings", a.tie_embeddings}, {"qk_norm", a.qk_norm},
                   {"default_lora_params", pc.trainable}});
    if (format == Format::csv)
      std::cout << a.name << ',' << pc.base << ',' << a.num_layers << ',' << a.hidden_size << ','
                << a.intermediate_size << ',' << a.num_heads << ',' << a.num_kv_heads << ',' << a.head_dim << ','
                << a.vocab_size << ',' << (a.tie_embeddings ? "true" : "false") << ',' << pc.trainable << '\n';
    t.add({a.name, human_count(static_cast<double>(pc.base)), std::to_string(a.num_layers),
           std::to_string(a.hidden_size), std::to_string(a.intermediate_size), std::to_string(a.num_heads),
           std::to_string(a.num_kv_heads), std::to_string(a.head_dim), std::to_string(a.vocab_size),
           a.tie_embeddings ? "yes" : "no", human_count(static_cast<double>(pc.trainable))});
  }
  if (format == Format::json) std::cout << all.dump(2) << "\n";
  if (format == Format::table) t.print(std::cout);
  return kOk;
}

}  // namespace lorasim::cli
