// Reading a request body strictly: one JSON object of at most kMaxBodyBytes,
// nesting at most kMaxDepth deep, no duplicate keys (nlohmann would keep the
// last one silently), and typed field access that names the field in every
// error. Unknown fields are refused by the caller's list of known ones.
// Network-facing: fuzzed (json_body_fuzz.cc).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "server/api_error.h"

namespace tidal::server {

inline constexpr size_t kMaxBodyBytes = 64 * 1024;
inline constexpr int kMaxDepth = 8;

// The body as a JSON object (an empty body is refused).
ApiResult<nlohmann::json> ParseObject(std::string_view body);

// Field readers on an object; `path` prefixes the field name in errors
// ("topology.required"). Absent (or null) fields give nullopt.
class Fields {
 public:
  Fields(const nlohmann::json& object, std::string path = {}) : o_(object), path_(std::move(path)) {}

  // An error for the first key not in `known`.
  ApiResult<void> OnlyKnown(std::initializer_list<std::string_view> known) const;
  ApiResult<std::optional<int64_t>> Int(std::string_view key, int64_t min, int64_t max) const;
  ApiResult<std::optional<std::string>> Text(std::string_view key, size_t max_len) const;
  ApiResult<std::optional<bool>> Bool(std::string_view key) const;
  // A string or a list of strings.
  ApiResult<std::optional<std::vector<std::string>>> TextList(std::string_view key, size_t max_items, size_t max_len) const;
  // A nested object (nullopt when absent).
  ApiResult<std::optional<Fields>> Object(std::string_view key) const;
  // A list of objects.
  ApiResult<std::vector<Fields>> ObjectList(std::string_view key, size_t max_items) const;

  std::string Name(std::string_view key) const { return path_.empty() ? std::string(key) : path_ + "." + std::string(key); }
  const nlohmann::json& json() const { return o_; }

 private:
  const nlohmann::json* Find(std::string_view key) const;
  const nlohmann::json& o_;
  std::string path_;
};

}  // namespace tidal::server
