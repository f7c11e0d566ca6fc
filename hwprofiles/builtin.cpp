// Lookup of the embedded hardware profiles by name, with spelling suggestions.
#include "hwprofiles/builtin.h"

#include <algorithm>
#include <cctype>

#include "hwprofiles/embedded.h"
#include "model/error.h"

namespace lorasim::hw {
namespace {

std::string normalize(const std::string& name) {
  std::string s;
  for (unsigned char c : name) {
    if (c == ' ' || c == '_') c = '-';
    s += static_cast<char>(std::tolower(c));
  }
  // People paste what nvidia-smi or a cloud console prints: "NVIDIA H200", "Tesla T4".
  for (const char* prefix : {"nvidia-", "tesla-"})
    if (s.rfind(prefix, 0) == 0) s.erase(0, std::char_traits<char>::length(prefix));
  return s;
}

std::string quoted_list(const std::vector<std::string>& names, const char* last_sep) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += (i + 1 == names.size()) ? last_sep : ", ";
    out += "'" + names[i] + "'";
  }
  return out;
}

}  // namespace

const std::vector<BuiltinProfile>& builtin_profile_texts() {
  static const std::vector<BuiltinProfile> texts = [] {
    std::vector<BuiltinProfile> v;
    for (size_t i = 0; i < detail::kEmbeddedProfileCount; ++i) {
      const detail::EmbeddedFile& f = detail::kEmbeddedProfiles[i];
      std::string stem = f.file_name;
      stem = stem.substr(0, stem.rfind(".toml"));
      v.push_back({stem, std::string_view(reinterpret_cast<const char*>(f.data), f.size)});
    }
    return v;
  }();
  return texts;
}

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> names;
  for (const auto& p : builtin_profile_texts()) names.push_back(p.name);
  return names;
}

std::string canonical_builtin_name(const std::string& name) {
  const std::vector<std::string> names = builtin_profile_names();
  const std::string wanted = normalize(name);
  if (std::find(names.begin(), names.end(), wanted) != names.end()) return wanted;

  std::vector<std::string> extensions;
  for (const auto& n : names)
    if (!wanted.empty() && n.rfind(wanted, 0) == 0) extensions.push_back(n);
  if (extensions.size() > 1)
    throw InputError("GPU " + quoted_excerpt(name) + " is ambiguous: did you mean " +
                     quoted_list(extensions, " or ") + "?", "gpu");
  const std::string guess = nearest_name(wanted, names);
  if (!guess.empty())
    throw InputError("unknown GPU " + quoted_excerpt(name) + ", did you mean '" + guess + "'?", "gpu");
  throw InputError("unknown GPU " + quoted_excerpt(name) + "; built-in profiles are " +
                   quoted_list(names, " and "), "gpu");
}

Profile builtin_profile(const std::string& name) {
  const std::string canonical = canonical_builtin_name(name);
  for (const auto& p : builtin_profile_texts())
    if (p.name == canonical) return parse_profile(p.toml, "builtin:" + p.name + ".toml");
  throw InputError("unknown GPU '" + name + "'");  // unreachable: canonical names exist
}

}  // namespace lorasim::hw
