// Spawns the probe through the shell (popen) and parses its stdout line by line; its stderr
// (progress) goes straight to the user's terminal.
#include "calibrate/hf_probe.h"

#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "calibrate/measurement_io.h"
#include "model/error.h"

namespace lorasim::calib {
namespace {

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

bool is_dir(const std::string& p) {
  struct stat st {};
  return !p.empty() && ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The exit status the probe uses for "a package is missing": its message says which.
constexpr int kProbeMissingPackage = 2;

// A line {"skipped": label, "why": ...}: a run the probe could not attempt in this Python (TRL's
// fused head without trl); it stands for its row. Returns the label, or "" for a row.
std::string skipped_run(const std::string& line) {
  if (line.find("\"skipped\"") == std::string::npos) return "";
  const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("skipped") || !j["skipped"].is_string()) return "";
  return j["skipped"].get<std::string>() + (j.contains("why") && j["why"].is_string() ? ": " + j["why"].get<std::string>() : "");
}

std::string python_env() {
  if (const std::string pp = probe_python_path(); !pp.empty()) {
    const char* old = std::getenv("PYTHONPATH");
    return "PYTHONPATH=" + shell_quote(pp + (old && *old ? std::string(":") + old : std::string())) + " ";
  }
  return "";
}

// The probe's flags for a quantized base ("" for a float one): the probe reloads every model of
// its plan through bitsandbytes (python/lorasim_hf/probe_quant.py).
std::string quant_flags(const model::TrainingSpec* quant) {
  if (!quant) return "";
  return std::string(" --quant ") + model::weight_format_name(quant->weight_storage()) + " --double-quant " +
         (quant->double_quant ? "true" : "false");
}

// Before any run: a quantized plan needs bitsandbytes in the probe's Python, and an hour of float
// runs should not come before the error.
void check_bitsandbytes(const ProbeOptions& opt, const model::TrainingSpec& quant) {
  const std::string cmd = shell_quote(opt.python) + " -c 'import bitsandbytes' >/dev/null 2>&1";
  const int status = std::system(cmd.c_str());
  if (status == -1 || !WIFEXITED(status)) throw CalibrationError("cannot start '" + opt.python + "' to look for bitsandbytes", "python");
  const int code = WEXITSTATUS(status);
  if (code == 127) throw CalibrationError("python interpreter '" + opt.python + "' not found: give the path of a Python with torch, transformers and peft", "python");
  if (code != 0)
    throw CalibrationError(std::string("--quant ") + model::weight_format_name(quant.weight_storage()) +
                               " needs the python package bitsandbytes in '" + opt.python +
                               "': pip install bitsandbytes there (or calibrate without --quant)",
                           "python");
}

std::vector<Measurement> run_one_process(const std::string& plan_path, size_t planned, const ProbeOptions& opt,
                                         const model::TrainingSpec* quant, size_t done_before, size_t total,
                                         const ProbeRowCallback& on_row, std::vector<std::string>& skipped) {
  const std::string cmd = python_env() + "PYTHONUNBUFFERED=1 " + shell_quote(opt.python) +
                          " -m lorasim_hf.probe --plan " + shell_quote(plan_path) + quant_flags(quant);
  FILE* out = ::popen(cmd.c_str(), "r");
  if (!out) throw CalibrationError("cannot start the probe (" + opt.python + "): check the Python interpreter", "python");
  std::vector<Measurement> rows;
  std::string line;
  std::string error;
  for (int c; (c = std::fgetc(out)) != EOF;) {
    if (c != '\n') {
      line += static_cast<char>(c);
      continue;
    }
    if (!line.empty() && line[0] == '{' && error.empty()) {
      if (std::string why = skipped_run(line); !why.empty()) {
        skipped.push_back(why);
        line.clear();
        continue;
      }
      try {
        std::vector<Measurement> got = parse_measurements(line, "jsonl", "probe row " + std::to_string(rows.size() + 1));
        for (Measurement& m : got) {
          rows.push_back(m);
          if (on_row) on_row(rows.back(), done_before + rows.size(), total);
        }
      } catch (const Error& e) {
        error = e.what();  // keep reading so the child is not killed by a broken pipe
      }
    }
    line.clear();
  }
  const int status = ::pclose(out);
  if (!error.empty()) throw CalibrationError("the probe wrote a row lorasim cannot read: " + error);
  if (status == -1 || !WIFEXITED(status))
    throw CalibrationError("the probe was interrupted before it finished (" + std::to_string(rows.size()) + " of " +
                           std::to_string(planned) + " runs done); nothing was written");
  const int code = WEXITSTATUS(status);
  if (code == 127) throw CalibrationError("python interpreter '" + opt.python + "' not found: give the path of a Python with torch, transformers and peft", "python");
  if (code == kProbeMissingPackage)
    throw CalibrationError("the probe cannot run in '" + opt.python +
                           "' (its message above names the missing package): install it there, or use another Python", "python");
  if (code != 0)
    throw CalibrationError("the probe failed (exit " + std::to_string(code) + ", its message is above) after " +
                           std::to_string(rows.size()) + " of " + std::to_string(planned) + " runs");
  if (rows.size() + skipped.size() != planned)
    throw CalibrationError("the probe returned " + std::to_string(rows.size()) + " rows for " +
                           std::to_string(planned) + " planned runs");
  return rows;
}

}  // namespace

std::string probe_python_path() {
  if (const char* env = std::getenv("LORASIM_PYTHONPATH"); env && *env) return env;
#ifdef LORASIM_SOURCE_PYTHON_DIR
  if (is_dir(LORASIM_SOURCE_PYTHON_DIR)) return LORASIM_SOURCE_PYTHON_DIR;
#endif
  return "";
}

std::vector<Measurement> run_probe(const std::vector<HfPlannedRun>& plan, const ProbeOptions& opt,
                                   const ProbeRowCallback& on_row, std::vector<std::string>* skipped_runs) {
  if (!is_dir(opt.work_dir)) throw CalibrationError("probe work directory '" + opt.work_dir + "' does not exist");
  std::vector<Measurement> all;
  std::vector<std::string> skipped;
  const auto q = std::find_if(plan.begin(), plan.end(), [](const HfPlannedRun& r) { return r.planned.workload.train.quantized(); });
  const model::TrainingSpec* quant = q == plan.end() ? nullptr : &q->planned.workload.train;
  if (quant) check_bitsandbytes(opt, *quant);
  for (model::AllocatorMode mode : {model::AllocatorMode::expandable, model::AllocatorMode::default_segments}) {
    for (bool quantized : {false, true}) {
      size_t planned = 0;
      for (const HfPlannedRun& r : plan)
        planned += r.planned.workload.stack.allocator == mode && r.planned.workload.train.quantized() == quantized;
      if (planned == 0) continue;
      const std::string path =
          opt.work_dir + "/plan-" + model::allocator_name(mode) + (quantized ? "-quant" : "") + ".json";
      {
        std::ofstream f(path);
        f << hf_plan_json(plan, opt.device, mode, opt.warmup_steps, opt.measure_steps, quantized);
        if (!f) throw CalibrationError("cannot write the probe's plan to '" + path + "'");
      }
      std::vector<std::string> mode_skipped;
      std::vector<Measurement> rows = run_one_process(path, planned, opt, quantized ? quant : nullptr,
                                                      all.size() + skipped.size(), plan.size(), on_row, mode_skipped);
      all.insert(all.end(), rows.begin(), rows.end());
      skipped.insert(skipped.end(), mode_skipped.begin(), mode_skipped.end());
    }
  }
  if (skipped_runs) *skipped_runs = skipped;
  return all;
}

}  // namespace lorasim::calib
