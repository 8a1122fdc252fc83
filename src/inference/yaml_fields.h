// Field readers shared by the goodput and services YAML readers: each error
// names the file:line of the field, the thing it belongs to and what to write.
#pragma once

#include <charconv>
#include <cmath>
#include <initializer_list>
#include <string>
#include <string_view>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "common/result.h"

namespace tidal::inference::yaml {

// r, or its error rewritten by f (std::expected::transform_error is C++23 but
// missing from GCC 12's library).
template <typename T, typename F>
Result<T> MapError(Result<T> r, F&& f) {
  if (!r) return std::unexpected(f(std::move(r).error()));
  return r;
}

inline std::string Where(const std::string& source, const YAML::Node& n) {
  return fmt::format("{}:{}", source, n.Mark().line + 1);
}

inline Result<YAML::Node> Load(const std::string& text, const std::string& source) {
  try {
    YAML::Node doc = YAML::Load(text);
    if (!doc.IsMap()) return MakeError(ErrorCode::kParse, "{}:1: expected a map starting with 'version: 1'", source);
    if (!doc["version"] || !doc["version"].IsScalar() || doc["version"].Scalar() != "1") {
      return MakeError(ErrorCode::kParse, "{}:1: the file must start with 'version: 1'", source);
    }
    return doc;
  } catch (const YAML::Exception& e) {
    return MakeError(ErrorCode::kParse, "{}:{}: not valid YAML: {}", source, e.mark.line + 1, e.msg);
  }
}

// Unknown keys are errors, so a typo never silently drops a setting.
inline Status CheckKeys(const YAML::Node& map, std::initializer_list<std::string_view> known, const std::string& source,
                        std::string_view what) {
  if (!map.IsMap()) return MakeError(ErrorCode::kParse, "{}: {} must be a map of key: value", Where(source, map), what);
  for (const auto& kv : map) {
    const std::string k = kv.first.Scalar();
    bool ok = false;
    std::string list;
    for (std::string_view s : known) {
      ok = ok || s == k;
      list += fmt::format("{}{}", list.empty() ? "" : ", ", s);
    }
    if (!ok) {
      return MakeError(ErrorCode::kParse, "{}: unknown key '{}' in {} (known: {})", Where(source, kv.first), k, what,
                       list);
    }
  }
  return Ok();
}

inline Result<std::string> Str(const YAML::Node& map, const char* key, const std::string& source,
                               std::string_view what) {
  const YAML::Node n = map[key];
  if (!n) return MakeError(ErrorCode::kParse, "{}: {} has no '{}:'; add it", Where(source, map), what, key);
  if (!n.IsScalar() || n.Scalar().empty()) {
    return MakeError(ErrorCode::kParse, "{}: '{}' of {} must be a single non-empty value", Where(source, n), key, what);
  }
  return n.Scalar();
}

// A required finite number in [min, max].
inline Result<double> Num(const YAML::Node& map, const char* key, const std::string& source, std::string_view what,
                          double min, double max) {
  TIDAL_ASSIGN_OR_RETURN(std::string s, Str(map, key, source, what));
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  const std::string at = Where(source, map[key]);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) {
    return MakeError(ErrorCode::kParse, "{}: '{}' of {} is '{}', not a number", at, key, what, s);
  }
  if (v < min || v > max) {
    return MakeError(ErrorCode::kParse, "{}: '{}' of {} is {}, expected a value in [{}, {}]", at, key, what, v, min,
                     max);
  }
  return v;
}

inline Result<double> NumOr(const YAML::Node& map, const char* key, double fallback, const std::string& source,
                            std::string_view what, double min, double max) {
  if (!map[key]) return fallback;
  return Num(map, key, source, what, min, max);
}

inline Result<bool> BoolOr(const YAML::Node& map, const char* key, bool fallback, const std::string& source,
                           std::string_view what) {
  if (!map[key]) return fallback;
  TIDAL_ASSIGN_OR_RETURN(std::string s, Str(map, key, source, what));
  if (s == "true") return true;
  if (s == "false") return false;
  return MakeError(ErrorCode::kParse, "{}: '{}' of {} is '{}'; write true or false", Where(source, map[key]), key,
                   what, s);
}

}  // namespace tidal::inference::yaml
