#include "cli/output_path.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include <filesystem>

#include "calibrate/measurement_io.h"
#include "model/atomic_file.h"
#include "model/error.h"

namespace lorasim::cli {

void check_writable(const std::string& flag, const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError(flag + " needs a file name");
  const fs::path p(path);
  std::error_code ec;
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  if (!fs::is_directory(dir, ec)) {
    // "afile/x.toml": name the file in the way rather than call the directory missing.
    for (fs::path d = dir; !d.empty() && d != d.parent_path(); d = d.parent_path())
      if (fs::exists(d, ec) && !fs::is_directory(d, ec))
        throw InputError(flag + " " + path + ": " + d.string() + " is a file, not a directory");
    throw InputError(flag + " " + path + ": directory " + dir.string() + " does not exist");
  }
  if (const std::string why = model::unwritable_reason(path); !why.empty())
    throw InputError(flag + " " + path + " " + why);
  if (model::written_in_place(path)) {
    if (::access(path.c_str(), W_OK) != 0) throw InputError(flag + " " + path + " is not writable");
    return;
  }
  if (::access(dir.c_str(), W_OK) != 0)
    throw InputError(flag + " " + path + ": directory " + dir.string() + " is not writable");
  if (fs::exists(p, ec) && ::access(p.c_str(), W_OK) != 0)
    throw InputError(flag + " " + path + " exists and is not writable");
}

void check_measurements_writable(const std::string& flag, const std::string& path) {
  check_writable(flag, path);
  try {
    calib::check_measurements_output(path);
  } catch (const InputError& e) {
    throw InputError(flag + ": " + e.what());
  }
}

namespace {

// Whether `a` and `b` name one file: by device and inode where both exist, which sees
// through symbolic and hard links, else by the canonical form of the paths.
bool same_file(const std::string& a, const std::string& b) {
  struct stat sa {}, sb {};
  if (::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  std::error_code ea, eb;
  const std::filesystem::path ca = std::filesystem::weakly_canonical(a, ea), cb = std::filesystem::weakly_canonical(b, eb);
  return !ea && !eb && ca == cb;
}

bool ends_with_ci(const std::string& s, const std::string& tail) {
  if (s.size() < tail.size()) return false;
  return std::equal(tail.begin(), tail.end(), s.end() - static_cast<std::ptrdiff_t>(tail.size()),
                    [](char x, char y) { return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y)); });
}

}  // namespace

void check_outputs(const std::vector<FileArg>& outputs, const std::vector<FileArg>& inputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const FileArg& o = outputs[i];
    if (o.path.empty() || model::written_in_place(o.path)) continue;
    for (const FileArg& in : inputs)
      if (!in.path.empty() && same_file(o.path, in.path))
        throw InputError(o.flag + " " + o.path + " and " + in.flag + " " + in.path +
                         " are the same file: writing it would replace what is read; give " + o.flag +
                         " another file");
    for (size_t j = 0; j < i; ++j)
      if (!outputs[j].path.empty() && same_file(o.path, outputs[j].path))
        throw InputError(outputs[j].flag + " " + outputs[j].path + " and " + o.flag + " " + o.path +
                         " are the same file: one would replace the other; give each its own file");
  }
  for (const FileArg& o : outputs) {
    if (o.path.empty()) continue;
    if (o.extension == ".csv") {  // measurements: the saved-file rules of calibrate/measurement_io.h
      check_measurements_writable(o.flag, o.path);
      continue;
    }
    check_writable(o.flag, o.path);
    if (!o.extension.empty() && !model::written_in_place(o.path) && !ends_with_ci(o.path, o.extension))
      throw InputError(o.flag + " " + o.path + ": " + o.flag + " writes " +
                       (o.extension == ".svg" ? "an SVG image" : "a TOML profile") +
                       ": name the file " + o.extension);
  }
}

void check_distinct_inputs(const std::vector<FileArg>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (same_file(inputs[i].path, inputs[j].path))
        throw InputError(inputs[j].flag + " " + inputs[j].path + " and " + inputs[i].flag + " " + inputs[i].path +
                         " are the same file: its runs would count twice; give it once");
}

}  // namespace lorasim::cli
