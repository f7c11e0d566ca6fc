// The option table: declarations, parsing, handlers and the quantity-to-flag map.
#include "cli/option_table.h"

#include <algorithm>
#include <boost/make_shared.hpp>
#include <cstdio>
#include <utility>

#include "cli/args.h"
#include "hwprofiles/builtin.h"
#include "model/architecture.h"
#include "cli/format.h"

namespace lorasim::cli {
namespace {

/// The flags the last parsed table binds to library quantities: a process runs one command.
struct Binding {
  std::string quantity, flag, hint;
};
std::vector<Binding>& bindings() {
  static std::vector<Binding> all;
  return all;
}

// "did you mean --model qwen3-8b?" when the stray word names a model preset or an embedded GPU
// and the command has that flag.
std::string flag_hint(const std::string& word, const po::options_description& desc) {
  std::string flag;
  for (const auto& a : model::presets())
    if (a.name == word) flag = "model";
  for (const auto& name : hw::builtin_profile_names())
    if (name == word) flag = "gpu";
  if (flag.empty() || !desc.find_nothrow(flag, false)) return "every value follows its --flag";
  return "did you mean --" + flag + " " + word + "?";
}

// "unrecognised option '--efective-batch', did you mean '--effective-batch'?", as an unknown
// command is answered (nearest_name, model/error.h).
std::string unknown_option_message(const std::string& option, const po::options_description& desc) {
  std::vector<std::string> flags;
  for (const auto& o : desc.options()) flags.push_back(o->long_name());
  const std::string name = option.rfind("--", 0) == 0 ? option.substr(2) : option;
  std::string msg = "unrecognised option " + quoted_excerpt(option);
  if (const std::string near = nearest_name(name, flags); !near.empty()) msg += ", did you mean '--" + near + "'?";
  return msg;
}

}  // namespace

OptionTable::OptionTable(const char* caption) : desc_(caption) { desc_.add_options()("help", "show this help"); }

OptionTable& OptionTable::add(const char* flag, po::value_semantic* semantic,
                              std::function<void(const po::variable_value&)> handler, const char* help) {
  desc_.add(boost::make_shared<po::option_description>(flag, semantic, help));
  entries_.push_back({flag, std::move(handler), "", ""});
  return *this;
}

OptionTable& OptionTable::add_text(const char* flag, const std::string& shown,
                                   std::function<void(const std::string&)> handler, const char* help) {
  auto* semantic = po::value<std::string>();
  if (!shown.empty()) semantic->default_value(shown);
  return add(flag, semantic, [h = std::move(handler)](const po::variable_value& v) { h(v.as<std::string>()); }, help);
}

OptionTable& OptionTable::integer(const char* flag, int64_t& target, int64_t min, const char* help) {
  const std::string name = std::string("--") + flag;
  return add_text(flag, std::to_string(target), [&target, name, min](const std::string& t) {
    target = parse_int(name, t, min);
  }, help);
}

OptionTable& OptionTable::real(const char* flag, double& target, double lo, double hi, const char* help) {
  const std::string name = std::string("--") + flag;
  return add_text(flag, shortest(target), [&target, name, lo, hi](const std::string& t) {
    target = parse_real(name, t, lo, hi);
  }, help);
}

OptionTable& OptionTable::text(const char* flag, std::string& target, const char* help) {
  return add_text(flag, target, [&target](const std::string& t) { target = t; }, help);
}

OptionTable& OptionTable::optional_text(const char* flag, boost::optional<std::string>& target, const char* help) {
  return add_text(flag, "", [&target](const std::string& t) { target = t; }, help);
}

OptionTable& OptionTable::path(const char* flag, std::string& target, const char* help) {
  const std::string name = std::string("--") + flag;
  // Else an empty name reads as "not given" and the command quietly does without it.
  return add_text(flag, "", [&target, name](const std::string& t) {
    if (t.empty()) throw InputError(name + " is empty: give a file name, or leave the flag out");
    target = t;
  }, help);
}

OptionTable& OptionTable::paths(const char* flag, std::vector<std::string>& target, const char* help) {
  const std::string name = std::string("--") + flag;
  return add(flag, po::value<std::vector<std::string>>()->composing(), [&target, name](const po::variable_value& v) {
    target = v.as<std::vector<std::string>>();
    for (const std::string& t : target)
      if (t.empty()) throw InputError(name + " is empty: give a file name");
  }, help);
}

OptionTable& OptionTable::bytes(const char* flag, int64_t& target, const char* help) {
  const std::string name = std::string("--") + flag;
  return add_text(flag, target > 0 ? std::to_string(target) : "", [&target, name](const std::string& t) {
    target = parse_bytes(name, t);
  }, help);
}

OptionTable& OptionTable::toggle(const char* flag, bool& target, const char* help) {
  return add(flag, po::bool_switch(&target), nullptr, help);
}

namespace {
// "a, b or c"
std::string choice_list(const std::vector<std::string>& choices) {
  std::string list;
  for (size_t i = 0; i < choices.size(); ++i)
    list += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") + choices[i];
  return list;
}
}  // namespace

OptionTable& OptionTable::switch_choice(const char* flag, boost::optional<std::string>& target, std::string shown,
                                        std::vector<std::string> choices, std::string bare, const char* help) {
  const std::string name = std::string("--") + flag;
  auto* semantic = po::value<std::string>()->implicit_value(bare);
  if (!shown.empty()) semantic->default_value(shown);
  bare_valued_.push_back({flag, choice_list(choices)});
  return add(flag, semantic, [&target, name, choices](const po::variable_value& v) {
    const std::string t = v.as<std::string>();
    if (std::find(choices.begin(), choices.end(), t) == choices.end())
      throw InputError(name + " must be " + choice_list(choices) + ", got " + quoted_excerpt(t));
    target = t;
  }, help);
}

OptionTable& OptionTable::choice(const char* flag, std::string& target, std::vector<std::string> choices,
                                 const char* help) {
  const std::string name = std::string("--") + flag;
  return add_text(flag, target, [&target, name, choices](const std::string& t) {
    for (const std::string& c : choices)
      if (t == c) {
        target = t;
        return;
      }
    throw InputError(name + " must be " + choice_list(choices) + ", got " + quoted_excerpt(t));
  }, help);
}

OptionTable& OptionTable::custom(const char* flag, std::string shown, std::function<void(const std::string&)> parse,
                                 const char* help) {
  return add_text(flag, shown, std::move(parse), help);
}

OptionTable& OptionTable::quantity(const char* key, std::string hint) {
  entries_.back().quantity = key;
  entries_.back().hint = std::move(hint);
  return *this;
}

bool OptionTable::parse(const std::vector<std::string>& given_args) {
  // Boost takes an optional value only as `--flag=value`; a bare word after such a flag would
  // be a stray argument, and no command takes bare words, so it is the flag's value.
  std::vector<std::string> args;
  for (size_t i = 0; i < given_args.size(); ++i) {
    const std::string& a = given_args[i];
    const auto bare = std::find_if(bare_valued_.begin(), bare_valued_.end(), [&](const BareValued& b) {
      return a == "--" + b.flag || a == "--" + b.flag + "=";
    });
    const bool has_word = i + 1 < given_args.size() && given_args[i + 1].rfind("--", 0) != 0;
    // Boost's own message for an empty value is about the equal sign, not what to give.
    if (bare != bare_valued_.end() && (a.back() == '=' || (has_word && given_args[i + 1].empty())))
      throw InputError("--" + bare->flag + " must be " + bare->allowed + ", got ''");
    if (bare != bare_valued_.end() && has_word) {
      args.push_back(a + "=" + given_args[i + 1]);
      ++i;
    } else {
      args.push_back(a);
    }
  }
  bindings().clear();
  for (const Entry& e : entries_)
    if (!e.quantity.empty()) bindings().push_back({e.quantity, "--" + e.flag, e.hint});
  // Long options only: a value like "-4" must reach the flag (and its range check), not be
  // taken for a short option.
  const int style = po::command_line_style::unix_style & ~po::command_line_style::allow_short &
                    ~po::command_line_style::allow_guessing;
  const po::parsed_options parsed = [&] {
    try {
      return po::command_line_parser(args).options(desc_).style(style).run();
    } catch (const po::unknown_option& e) {
      throw po::error(unknown_option_message(e.get_option_name(), desc_));
    }
  }();
  // Without a positional description Boost keeps a bare word and store() drops it, so
  // `simulate qwen3-8b` would quietly simulate the default model.
  for (const std::string& word : po::collect_unrecognized(parsed.options, po::include_positional))
    throw po::error("unexpected argument " + quoted_excerpt(word) + ": " + flag_hint(word, desc_));
  po::store(parsed, vm_);
  po::notify(vm_);
  if (vm_.count("help")) return false;
  for (const Entry& e : entries_)
    if (e.handler && given(e.flag)) e.handler(vm_[e.flag]);
  return true;
}

bool OptionTable::given(const std::string& flag) const { return vm_.count(flag) && !vm_[flag].defaulted(); }

std::string describe_error(const Error& e) {
  const std::string what = e.what();
  if (e.quantity().empty()) return what;
  for (const Binding& b : bindings())
    if (b.quantity == e.quantity()) {
      const std::string hint = b.hint.empty() ? "" : " " + b.hint;
      if (what.rfind(b.flag, 0) == 0) return what + hint;
      return b.flag + ": " + what + hint;
    }
  return what;
}

}  // namespace lorasim::cli
