// --lengths and its companions: parsing, the flags' consistency, and the workload they give.
#include "cli/lengths_args.h"

#include "model/error.h"
#include "model/lengths.h"

namespace lorasim::cli {

void add_lengths_options(OptionTable& t, LengthsArgs& a) {
  t.path("lengths", a.file,
         "the data's token lengths: one per line, or a `length,count` CSV (python: lorasim_hf.lengths "
         "writes one); the splits' step time is then the mean over random micro-batches, their memory "
         "that of the worst micro-batch (--seq-len is refused with it)")
      .quantity("lengths")
      .custom("padding", a.padding,
              [&a](const std::string& text) {
                try {
                  model::parse_padding(text);
                } catch (const InputError& e) {
                  throw InputError(std::string("--padding: ") + e.what());
                }
                a.padding = text;
              },
              "with --lengths: longest, multiple:N, max_length, packed or padding-free (pad each micro-batch to its "
              "longest as HF's collators do, to that rounded up to a multiple of N, to --max-length; pack "
              "rows of --max-length; no padding)")
      .quantity("padding")
      .integer("max-length", a.max_length_tokens, 1,
               "with --lengths: truncate sequences at this many tokens (default: the file's longest)")
      .toggle("group-by-length", a.group_by_length,
              "with --lengths: HF's group_by_length (micro-batches of similar lengths)");
}

bool lengths_given(const OptionTable& t) {
  const bool given = t.given("lengths");
  if (given && t.given("seq-len"))
    throw InputError("--seq-len is for data of one length; with --lengths the file gives the lengths and "
                     "--max-length truncates them: drop --seq-len");
  if (!given)
    for (const char* flag : {"padding", "max-length", "group-by-length"})
      if (t.given(flag))
        throw InputError(std::string("--") + flag + " needs --lengths FILE (the data's token lengths); " +
                         "for data of one length give --seq-len alone");
  return given;
}

void apply_lengths(const LengthsArgs& a, model::Workload& w) {
  model::LengthDistribution d = model::read_lengths_file(a.file);
  d = d.truncated(a.max_length_tokens > 0 ? a.max_length_tokens : d.longest_tokens());
  w.train.padding = model::parse_padding(a.padding);
  w.train.seq_len = d.max_length_tokens();
  // Else a typo such as multiple:99999999999 pads every micro-batch past anything the data holds,
  // and the count overflows, blamed on the sequence length.
  if (w.train.padding.mode == model::PaddingMode::multiple && w.train.padding.multiple_tokens > w.train.seq_len)
    throw InputError("--padding " + a.padding + ": the multiple is above the longest sequence (" +
                     std::to_string(w.train.seq_len) + " tokens" + (a.max_length_tokens > 0 ? ", --max-length" : "") +
                     "), so every micro-batch would be padded to " + std::to_string(w.train.padding.multiple_tokens) +
                     " tokens: give a multiple of at most " + std::to_string(w.train.seq_len) + " (8 or 64 are usual)");
  w.train.lengths = d;
  w.validate();
}

sim::LengthsOptions lengths_options(const LengthsArgs& a) {
  sim::LengthsOptions o;
  o.group_by_length = a.group_by_length;
  return o;
}

}  // namespace lorasim::cli
