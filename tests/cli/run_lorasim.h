// Shared by the end-to-end tests: run the built `lorasim` binary (LORASIM_BIN) as a user
// would, capturing stdout, stderr and the exit code, in scratch directories.
#pragma once
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace lorasim::testing {

namespace fs = std::filesystem;

struct RunResult {
  int exit_code = -1;  ///< -1 when killed by a signal
  std::string out;
  std::string err;
};

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) lines.push_back(line);
  return lines;
}

/// A fresh directory under the test temp dir, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = (fs::path(::testing::TempDir()) / "lorasim-test-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) ADD_FAILURE() << "mkdtemp failed for " << tmpl;
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

/// Runs the binary `bin` with `args`; stdout through the pipe, stderr through a file.
inline RunResult run_binary(const fs::path& bin, const std::vector<std::string>& args) {
  TempDir dir;
  const fs::path err_file = dir / "stderr.txt";
  std::string cmd = shell_quote(bin.string());
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " 2>" + shell_quote(err_file.string());
  RunResult r;
  FILE* pipe = ::popen(cmd.c_str(), "r");
  if (pipe == nullptr) {
    ADD_FAILURE() << "popen failed: " << cmd;
    return r;
  }
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) r.out.append(buf, n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(err_file);
  return r;
}

/// Runs the built binary with `args`.
inline RunResult run_lorasim(const std::vector<std::string>& args) { return run_binary(LORASIM_BIN, args); }

/// The command and what it printed, for failure messages.
inline std::string describe(const std::vector<std::string>& args, const RunResult& r) {
  std::string s = "lorasim";
  for (const auto& a : args) s += " " + a;
  return s + "\n  exit " + std::to_string(r.exit_code) + "\n  stdout: " + r.out.substr(0, 3000) +
         "\n  stderr: " + r.err.substr(0, 3000);
}

}  // namespace lorasim::testing
