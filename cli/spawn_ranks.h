// `--processes N`: a command of lorasim-train run as N data-parallel ranks on this host. The
// ranks are this binary again with --rank, --world-size and --rendezvous (a c10d FileStore in a
// fresh temporary folder); this process only waits for them.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "cli/option_table.h"

namespace lorasim::cli {

/// --processes, --rank, --world-size, --rendezvous (cli/spawn_ranks.h).
struct RankArgs {
  int64_t processes = 1;   ///< ranks to spawn; 1: none, this process trains alone or is one rank
  int64_t rank = 0;        ///< set by the spawner, or by a user's own launcher
  int64_t world_size = 1;
  std::string rendezvous;  ///< the FileStore every rank names
};
void add_rank_options(OptionTable& t, RankArgs& a, const char* processes_help);
/// Throws InputError for --processes given with any of the rank flags, or a world of several ranks
/// without --rendezvous.
void check_rank_args(const OptionTable& t, const RankArgs& a);

/// Runs `command args` (without --processes) as ranks 0 .. processes - 1 of this binary and
/// waits for all. Rank 0 keeps stdout and stderr; the others keep stderr only. Each rank gets
/// OMP_NUM_THREADS = the cores / processes (at least 1) unless it is set. The first rank to fail
/// stops the others, and its exit code is returned; 0 when every rank succeeded.
int spawn_ranks(const std::string& command, const std::vector<std::string>& args, int64_t processes);

}  // namespace lorasim::cli
