// The subcommands. Each takes the arguments after its name and returns an exit code;
// errors are thrown and mapped to exit codes in main().
#pragma once
#include <string>
#include <vector>

namespace lorasim::cli {

using Args = std::vector<std::string>;

int cmd_simulate(const Args& args);
int cmd_recommend(const Args& args);
int cmd_profiles(const Args& args);
int cmd_models(const Args& args);
int cmd_fit(const Args& args);
int cmd_validate(const Args& args);  ///< --measurements works without LibTorch
#ifdef LORASIM_WITH_CALIBRATE
int cmd_calibrate(const Args& args);
int cmd_train(const Args& args);
#endif

}  // namespace lorasim::cli
