// quant, double_quant, kbit_prepare, optim, adapter_dtype: a row's cells to a TrainingSpec and back.
#include "calibrate/measurement_quant.h"

#include "model/error.h"

namespace lorasim::calib {
namespace {

bool cell_bool(const char* column, const std::string& v) {
  if (v == "true" || v == "1" || v == "True" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "False" || v == "no") return false;
  throw InputError(std::string("column ") + column + ": expected true or false, got " + quoted_excerpt(v));
}

}  // namespace

void read_quant_columns(const std::function<std::string(const char*)>& get, model::TrainingSpec& t) {
  const std::string quant = get("quant");
  if (!quant.empty() && quant != "none") {
    if (quant != "nf4" && quant != "fp4" && quant != "int8")
      throw InputError("column quant: expected none, nf4, fp4 or int8, got " + quoted_excerpt(quant));
    t.weight_format = model::parse_weight_format(quant);
  }
  if (!get("double_quant").empty()) t.double_quant = cell_bool("double_quant", get("double_quant"));
  if (!get("kbit_prepare").empty()) t.kbit_prepare = cell_bool("kbit_prepare", get("kbit_prepare"));
  const std::string adapters = get("adapter_dtype");
  if (!adapters.empty()) {
    if (adapters != "fp32" && adapters != "bf16" && adapters != "fp16")
      throw InputError("column adapter_dtype: expected fp32, bf16 or fp16, got " + quoted_excerpt(adapters));
    t.adapters_in_compute_precision = adapters != "fp32";
  }
  if (!get("optim").empty()) {
    try {
      t.optimizer = model::parse_optimizer(get("optim"));
    } catch (const InputError& e) {
      throw InputError(std::string("column optim: ") + e.what());
    }
  }
}

std::vector<std::string> quant_cells(const model::TrainingSpec& t) {
  return {t.quantized() ? model::weight_format_name(t.weight_storage()) : "none", t.double_quant ? "true" : "false",
          t.kbit_prepared() ? "true" : "false", model::optimizer_name(t.optimizer),
          t.adapters_in_compute_precision ? model::precision_name(t.precision) : "fp32"};
}

}  // namespace lorasim::calib
