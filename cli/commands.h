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
/// `calibrate --stack hf-peft`: the Python probe, no LibTorch (cli/cmd_calibrate_hf.cpp).
int cmd_calibrate_hf(const Args& args);
/// Whether a calibrate command line asks for the hf-peft stack (--stack hf-peft).
bool calibrates_hf_stack(const Args& args);
/// The value of a calibrate command line's --stack; "" where it has none.
std::string calibrate_stack_flag(const Args& args);
/// `calibrate --interconnect`: the all-reduce timing and fit (cli/cmd_calibrate_interconnect.cpp);
/// fitting --measurements needs no LibTorch, timing hands over to lorasim-train.
int cmd_calibrate_interconnect(const Args& args);
bool calibrates_interconnect(const Args& args);
#ifdef LORASIM_WITH_CALIBRATE
int cmd_calibrate(const Args& args);
int cmd_train(const Args& args);
#endif

}  // namespace lorasim::cli
