// What to change when no split fits, decided once: recommend's table and JSON say it, and
// lorasim_hf.training_arguments renders the JSON's keys in its own keywords. Only what would
// change the answer: checkpointing where it was off, a shorter sequence (every split already
// includes micro-batch 1, so a smaller effective batch never helps), a 4-bit base where one fits.
#pragma once
#include <string>
#include <vector>

#include "simulator/simulate.h"

namespace lorasim::cli {

enum class Remedy { grad_ckpt, seq_len, max_length, quant, memory };

/// The remedies for a request in which nothing fits. `both_grad_ckpt`: checkpointing was weighed
/// on and off; `with_lengths`: the data's lengths were given (their cap is --max-length);
/// `four_bit_fits`: a 4-bit base would fit (cli/quant_hint.h found a split).
std::vector<Remedy> no_fit_remedies(const sim::Request& req, bool both_grad_ckpt, bool with_lengths,
                                    bool four_bit_fits);

/// "grad_ckpt", "seq_len", "max_length", "quant", "memory": the JSON's names (`no_fit_advice`).
std::vector<std::string> remedy_keys(const std::vector<Remedy>& remedies);

/// "try --grad-ckpt true, a shorter --seq-len or a GPU with more memory".
std::string remedy_text(const std::vector<Remedy>& remedies);

}  // namespace lorasim::cli
