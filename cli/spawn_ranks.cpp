// Spawning and waiting for data-parallel ranks (spawn_ranks.h). POSIX: posix_spawn, waitpid.
#include "cli/spawn_ranks.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include "model/error.h"

extern char** environ;

namespace lorasim::cli {

void add_rank_options(OptionTable& t, RankArgs& a, const char* processes_help) {
  t.integer("processes", a.processes, 1, processes_help)
      .quantity("processes")
      .integer("rank", a.rank, 0, "this process's rank in a world of --world-size (set by --processes, or by your own launcher)")
      .quantity("rank")
      .integer("world-size", a.world_size, 1, "ranks in the world (with --rank and --rendezvous)")
      .quantity("world_size")
      .path("rendezvous", a.rendezvous, "a c10d FileStore path every rank names, on a folder they share (with --rank)")
      .quantity("rendezvous");
}

void check_rank_args(const OptionTable& t, const RankArgs& a) {
  const bool rank_flags = t.given("rank") || t.given("world-size") || t.given("rendezvous");
  if (t.given("processes") && rank_flags)
    throw InputError("--processes spawns its own ranks: drop --rank, --world-size and --rendezvous");
  if (a.processes > 256) throw InputError("--processes: at most 256 ranks on one host");
  if (a.world_size > 1 && a.rendezvous.empty())
    throw InputError("--world-size " + std::to_string(a.world_size) + " needs --rendezvous FILE, the same path for every rank");
  if (a.rank >= a.world_size)
    throw InputError("--rank " + std::to_string(a.rank) + " is outside --world-size " + std::to_string(a.world_size));
}

namespace {

std::vector<std::string> without_processes(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--processes") {
      ++i;  // and its value
      continue;
    }
    if (args[i].rfind("--processes=", 0) == 0) continue;
    out.push_back(args[i]);
  }
  return out;
}

// A folder of our own for the FileStore, removed however the ranks end.
struct TempFolder {
  std::string path;
  TempFolder() {
    const char* tmp = std::getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/lorasim-ranks-XXXXXX";
    if (!::mkdtemp(templ.data()))
      throw InputError("cannot create a folder for the ranks' rendezvous under " + templ + ": " + std::strerror(errno));
    path = templ;
  }
  ~TempFolder() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

}  // namespace

int spawn_ranks(const std::string& command, const std::vector<std::string>& args, int64_t processes) {
  TempFolder folder;
  const std::string store = folder.path + "/store";
  const std::vector<std::string> rest = without_processes(args);
  // The ranks share the cores: LibTorch would otherwise start a thread per core in each.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string threads = std::to_string(std::max<int64_t>(1, static_cast<int64_t>(cores) / processes));
  std::vector<std::string> env_text;
  for (char** e = environ; *e; ++e) env_text.emplace_back(*e);
  if (!std::getenv("OMP_NUM_THREADS")) env_text.push_back("OMP_NUM_THREADS=" + threads);
  std::vector<char*> envp;
  for (auto& e : env_text) envp.push_back(e.data());
  envp.push_back(nullptr);

  std::map<pid_t, int64_t> running;  // pid -> rank
  auto stop_all = [&] {
    for (const auto& [pid, rank] : running) ::kill(pid, SIGTERM);
  };
  for (int64_t rank = 0; rank < processes; ++rank) {
    std::vector<std::string> argv_text = {"lorasim-train", command};
    argv_text.insert(argv_text.end(), rest.begin(), rest.end());
    argv_text.insert(argv_text.end(), {"--rank", std::to_string(rank), "--world-size", std::to_string(processes),
                                       "--rendezvous", store});
    std::vector<char*> argv;
    for (auto& a : argv_text) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    if (rank > 0) posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);  // one report: rank 0's
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      stop_all();
      for (const auto& [p, r] : running) ::waitpid(p, nullptr, 0);
      throw InputError("cannot start rank " + std::to_string(rank) + ": " + std::strerror(rc));
    }
    running[pid] = rank;
  }
  int result = 0;
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (!running.count(pid)) continue;
    running.erase(pid);
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
    if (code != 0 && result == 0) {
      result = code;
      stop_all();  // the others would wait for it in their next collective until the timeout
    }
  }
  return result;
}

}  // namespace lorasim::cli
