// One table of a command's options: each declared once with its flag, its help, its typed
// default (the target's value when declared, which --help prints) and the handler that turns
// the text into that type. Boost.Program_options parses underneath; the table is what every
// command sees. It also maps a library error's quantity ("seq_len") to the flag that set it.
#pragma once
#include <boost/optional.hpp>
#include <boost/program_options.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "model/error.h"

namespace lorasim::cli {

namespace po = boost::program_options;

class OptionTable {
 public:
  explicit OptionTable(const char* caption = "Options");

  /// A whole number >= `min`.
  OptionTable& integer(const char* flag, int64_t& target, int64_t min, const char* help);
  /// A real number in [lo, hi].
  OptionTable& real(const char* flag, double& target, double lo, double hi, const char* help);
  /// Text taken as given; a non-empty default is printed.
  OptionTable& text(const char* flag, std::string& target, const char* help);
  /// Text that is unset unless given, so that an empty value can be refused by its handler.
  OptionTable& optional_text(const char* flag, boost::optional<std::string>& target, const char* help);
  /// A file name: unset unless given, and never empty when given.
  OptionTable& path(const char* flag, std::string& target, const char* help);
  /// Repeatable file names, each non-empty.
  OptionTable& paths(const char* flag, std::vector<std::string>& target, const char* help);
  /// A size such as 24GiB (args.h parse_bytes); 0 means unset and prints no default.
  OptionTable& bytes(const char* flag, int64_t& target, const char* help);
  /// A switch: true when given.
  OptionTable& toggle(const char* flag, bool& target, const char* help);
  /// One of `choices` that may also be given bare, meaning `bare` (a switch that grew values:
  /// `--grad-ckpt` stays `--grad-ckpt true` for scripts written before `auto`). `--flag word`
  /// and `--flag=word` both work; `shown` is the default --help prints. Unset unless given.
  OptionTable& switch_choice(const char* flag, boost::optional<std::string>& target, std::string shown,
                             std::vector<std::string> choices, std::string bare, const char* help);
  /// One of `choices` (the first being the default unless `target` holds another).
  OptionTable& choice(const char* flag, std::string& target, std::vector<std::string> choices, const char* help);
  /// Any other type: `parse` turns the text into the target; `shown` is the default --help prints
  /// ("" for none).
  OptionTable& custom(const char* flag, std::string shown, std::function<void(const std::string&)> parse,
                      const char* help);

  /// Binds the option declared last to a library quantity (model/error.h): an error about it is
  /// reported under this flag, followed by `hint` where given.
  OptionTable& quantity(const char* key, std::string hint = "");

  /// Parses `args` (long options only, no bare words), then runs every given option's handler in
  /// declaration order; an error names the flag. Registers the quantities for describe_error().
  /// Returns false when --help was asked for (the caller prints help()).
  bool parse(const std::vector<std::string>& args);

  /// Whether `flag` (without "--") was on the command line.
  bool given(const std::string& flag) const;
  const po::options_description& description() const { return desc_; }
  const po::variables_map& values() const { return vm_; }

 private:
  struct Entry {
    std::string flag;                                        ///< without "--"
    std::function<void(const po::variable_value&)> handler;  ///< runs when the flag is given
    std::string quantity, hint;
  };
  OptionTable& add(const char* flag, po::value_semantic* semantic,
                   std::function<void(const po::variable_value&)> handler, const char* help);
  /// A string-valued option whose handler sees the text.
  OptionTable& add_text(const char* flag, const std::string& shown, std::function<void(const std::string&)> handler,
                        const char* help);

  po::options_description desc_;
  std::vector<Entry> entries_;
  struct BareValued {
    std::string flag;     ///< without "--"
    std::string allowed;  ///< "auto, true or false"
  };
  std::vector<BareValued> bare_valued_;  ///< switch_choice flags: `--flag word` is joined to `--flag=word`
  po::variables_map vm_;
};

/// `e`'s message as the command line reads it: "--seq-len: ..." where the library named a
/// quantity that the command's table binds to a flag, the message itself otherwise.
std::string describe_error(const Error& e);

}  // namespace lorasim::cli
