#include "cli/no_fit_advice.h"

namespace lorasim::cli {
namespace {

struct RemedyName {
  const char* key;     ///< the JSON's name
  const char* phrase;  ///< the table's words
};

RemedyName name_of(Remedy r) {
  switch (r) {
    case Remedy::grad_ckpt: return {"grad_ckpt", "--grad-ckpt true"};
    case Remedy::seq_len: return {"seq_len", "a shorter --seq-len"};
    case Remedy::max_length: return {"max_length", "a shorter --max-length"};
    case Remedy::quant: return {"quant", "--quant nf4 (the note below)"};
    case Remedy::memory: break;
  }
  return {"memory", "a GPU with more memory"};
}

}  // namespace

std::vector<Remedy> no_fit_remedies(const sim::Request& req, bool both_grad_ckpt, bool with_lengths,
                                    bool four_bit_fits) {
  std::vector<Remedy> out;
  if (!both_grad_ckpt && !req.workload.train.grad_ckpt) out.push_back(Remedy::grad_ckpt);
  out.push_back(with_lengths ? Remedy::max_length : Remedy::seq_len);
  if (four_bit_fits) out.push_back(Remedy::quant);
  out.push_back(Remedy::memory);
  return out;
}

std::vector<std::string> remedy_keys(const std::vector<Remedy>& remedies) {
  std::vector<std::string> keys;
  for (Remedy r : remedies) keys.push_back(name_of(r).key);
  return keys;
}

std::string remedy_text(const std::vector<Remedy>& remedies) {
  std::string text = "try ";
  for (size_t i = 0; i < remedies.size(); ++i)
    text += std::string(i == 0 ? "" : i + 1 == remedies.size() ? " or " : ", ") + name_of(remedies[i]).phrase;
  return text;
}

}  // namespace lorasim::cli
