// The rows' device -> a profile, and the refusals (see row_device.h).
#include "cli/row_device.h"

#include <cctype>

#include "calibrate/measurement_label.h"
#include "hwprofiles/builtin.h"
#include "hwprofiles/match.h"
#include "model/error.h"

namespace lorasim::cli {
namespace {

// The memory a GPU's name states ("NVIDIA A100-SXM4-80GB": 80 GB), or 0: it tells the A100s apart
// when a row does not record device_memory_bytes.
int64_t memory_in_name(const std::string& name) {
  for (size_t at = name.find("GB"); at != std::string::npos; at = name.find("GB", at + 2)) {
    size_t begin = at;
    while (begin > 0 && std::isdigit(static_cast<unsigned char>(name[begin - 1]))) --begin;
    if (begin < at && at - begin < 5) return std::stoll(name.substr(begin, at - begin)) * 1000000000LL;
  }
  return 0;
}

hw::DeviceIdentity identity(const calib::Measurement& m) {
  const bool cpu = m.device == "cpu";
  const int64_t memory =
      calib::measured(m.device_memory_bytes) ? static_cast<int64_t>(m.device_memory_bytes) : memory_in_name(m.device);
  return {m.device, !cpu, memory};
}

// The device every row that names one names; "" when none does.
const calib::Measurement* device_row(const std::vector<calib::Measurement>& rows) {
  const calib::Measurement* first = nullptr;
  for (const calib::Measurement& m : rows) {
    if (m.device.empty()) continue;
    if (!first) first = &m;
    else if (m.device != first->device)
      throw InputError("the measurements ran on two devices, " + first->device + " (" + calib::run_label(*first) +
                       ") and " + m.device + " (" + calib::run_label(m) + "): " +
                       "give the runs of one device at a time");
  }
  return first;
}

std::string given_flag(const HardwareArgs& a) { return a.profile.empty() ? "--gpu " + a.gpu : "--profile " + a.profile; }

}  // namespace

void refuse_several_processes(const std::vector<calib::Measurement>& rows, const std::string& command) {
  for (const calib::Measurement& m : rows)
    if (m.processes > 1)
      throw InputError("the run " + calib::run_label(m) + " ran on " + std::to_string(m.processes) +
                       " processes (data parallel): `lorasim " + command +
                       "` fits one GPU's terms from runs of one process, and a data-parallel step also holds the "
                       "all-reduce; give runs of one process (`lorasim validate --measurements` scores data-parallel "
                       "rows)");
}

void require_rows_of_profile(const std::vector<calib::Measurement>& rows, const hw::Profile& profile,
                             const std::string& command) {
  for (const calib::Measurement& m : rows)
    if (!m.device.empty() && !hw::same_device_model(profile, identity(m)))
      throw InputError("the run " + calib::run_label(m) + " ran on " + m.device + ", but the profile (" +
                       profile.source_text_name + ") describes the " + profile.hw.display_name + ": `lorasim " + command +
                       "` puts runs in place of that device's predictions, so give the runs of the " +
                       profile.hw.display_name + ", or the profile of " + m.device + " (or pass --allow-device-mismatch)");
}

hw::Profile profile_for_rows(const std::vector<calib::Measurement>& rows, const HardwareArgs& args,
                             const RowDeviceOptions& options) {
  const calib::Measurement* dev = device_row(rows);
  const bool given = args.gpu_given || !args.profile.empty();
  if (given || !dev) {
    hw::Profile p = select_profile(args);
    if (dev && !options.allow_mismatch && !hw::same_device_model(p, identity(*dev)))
      throw InputError("the measurements ran on " + dev->device + " but " + given_flag(args) + " describes the " +
                       p.hw.display_name + ": give the profile of " + dev->device +
                       " (leave --gpu/--profile out to take it from the rows), or pass --allow-device-mismatch");
    return p;
  }
  const hw::DeviceIdentity id = identity(*dev);
  if (const std::string name = hw::matching_builtin_name(id); !name.empty()) return hw::builtin_profile(name);
  if (!id.is_gpu && options.cpu_base) {
    if (id.memory_bytes <= 0)
      throw InputError("the measurements ran on the cpu but record no device_memory_bytes, which lorasim's CPU base "
                       "needs as its memory: add the column (the machine's RAM) or pass --profile FILE of this CPU");
    return hw::base_profile_for(id);
  }
  throw InputError(
      "the measurements ran on " + dev->device + ", which no embedded profile describes (see `lorasim profiles`): " +
      (id.is_gpu ? "pass --profile FILE of that GPU (from `lorasim calibrate`), or --gpu NAME of the closest one "
                   "with --allow-device-mismatch"
                 : "pass --profile FILE of this CPU (from `lorasim calibrate --device cpu` or `lorasim fit`)"));
}

}  // namespace lorasim::cli
