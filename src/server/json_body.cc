#include "server/json_body.h"

#include <set>

#include <fmt/format.h>

namespace tidal::server {

ApiResult<nlohmann::json> ParseObject(std::string_view body) {
  if (body.size() > kMaxBodyBytes) {
    return std::unexpected(ApiError{413, "payload_too_large",
                                    fmt::format("the body has {} bytes; at most {} are accepted", body.size(), kMaxBodyBytes), ""});
  }
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    return std::unexpected(BadRequest("the body is empty; send a JSON object"));
  }
  // Duplicate keys and depth, checked while parsing: one set of keys per
  // open object.
  std::vector<std::set<std::string>> keys;
  std::string problem;
  auto cb = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) -> bool {
    using E = nlohmann::json::parse_event_t;
    if (!problem.empty()) return false;
    if (depth > kMaxDepth) {
      problem = fmt::format("the body nests deeper than {} levels", kMaxDepth);
      return false;
    }
    if (event == E::object_start) keys.emplace_back();
    else if (event == E::object_end && !keys.empty()) keys.pop_back();
    else if (event == E::key && !keys.empty()) {
      const std::string& k = parsed.get_ref<const std::string&>();
      if (!keys.back().insert(k).second) {
        problem = fmt::format("key '{}' appears twice in one object", k);
        return false;
      }
    }
    return true;
  };
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body.begin(), body.end(), cb, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const nlohmann::json::exception& e) {
    if (!problem.empty()) return std::unexpected(BadRequest("the body is refused: " + problem));
    return std::unexpected(BadRequest(fmt::format("the body is not valid JSON: {}", e.what())));
  }
  if (!problem.empty()) return std::unexpected(BadRequest("the body is refused: " + problem));
  if (!j.is_object()) return std::unexpected(BadRequest("the body must be a JSON object ({...})"));
  return j;
}

const nlohmann::json* Fields::Find(std::string_view key) const {
  auto it = o_.find(key);
  if (it == o_.end() || it->is_null()) return nullptr;
  return &*it;
}

ApiResult<void> Fields::OnlyKnown(std::initializer_list<std::string_view> known) const {
  for (const auto& [k, v] : o_.items()) {
    bool ok = false;
    for (std::string_view n : known) ok = ok || n == k;
    if (!ok) {
      std::string list;
      for (std::string_view n : known) list += (list.empty() ? "" : ", ") + std::string(n);
      return std::unexpected(BadRequest(fmt::format("unknown field '{}'; the known fields are: {}", Name(k), list), Name(k)));
    }
  }
  return {};
}

ApiResult<std::optional<int64_t>> Fields::Int(std::string_view key, int64_t min, int64_t max) const {
  const nlohmann::json* v = Find(key);
  if (!v) return std::optional<int64_t>();
  const std::string name = Name(key);
  auto range = [&] {
    return std::unexpected(BadRequest(fmt::format("field '{}' must be an integer from {} to {}", name, min, max), name));
  };
  if (v->is_number_unsigned()) {
    const uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(max) || (min > 0 && u < static_cast<uint64_t>(min))) return range();
    return std::optional<int64_t>(static_cast<int64_t>(u));
  }
  if (v->is_number_integer()) {
    const int64_t i = v->get<int64_t>();
    if (i < min || i > max) return range();
    return std::optional<int64_t>(i);
  }
  return range();
}

ApiResult<std::optional<std::string>> Fields::Text(std::string_view key, size_t max_len) const {
  const nlohmann::json* v = Find(key);
  if (!v) return std::optional<std::string>();
  const std::string name = Name(key);
  if (!v->is_string()) return std::unexpected(BadRequest(fmt::format("field '{}' must be a string", name), name));
  const std::string& s = v->get_ref<const std::string&>();
  if (s.size() > max_len) {
    return std::unexpected(BadRequest(fmt::format("field '{}' is {} bytes long; at most {}", name, s.size(), max_len), name));
  }
  for (unsigned char c : s) {
    if (c < 0x20) return std::unexpected(BadRequest(fmt::format("field '{}' has a control character", name), name));
  }
  return std::optional<std::string>(s);
}

ApiResult<std::optional<bool>> Fields::Bool(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  if (!v) return std::optional<bool>();
  if (!v->is_boolean()) return std::unexpected(BadRequest(fmt::format("field '{}' must be true or false", Name(key)), Name(key)));
  return std::optional<bool>(v->get<bool>());
}

ApiResult<std::optional<std::vector<std::string>>> Fields::TextList(std::string_view key, size_t max_items,
                                                                    size_t max_len) const {
  const nlohmann::json* v = Find(key);
  if (!v) return std::optional<std::vector<std::string>>();
  const std::string name = Name(key);
  std::vector<std::string> out;
  auto one = [&](const nlohmann::json& x) -> ApiResult<void> {
    if (!x.is_string() || x.get_ref<const std::string&>().empty() || x.get_ref<const std::string&>().size() > max_len) {
      return std::unexpected(
          BadRequest(fmt::format("field '{}' must be a non-empty string of at most {} bytes or a list of them", name, max_len), name));
    }
    out.push_back(x.get<std::string>());
    return {};
  };
  if (v->is_array()) {
    if (v->size() > max_items) {
      return std::unexpected(BadRequest(fmt::format("field '{}' has {} items; at most {}", name, v->size(), max_items), name));
    }
    for (const auto& x : *v)
      if (auto r = one(x); !r) return std::unexpected(r.error());
  } else if (auto r = one(*v); !r) {
    return std::unexpected(r.error());
  }
  return std::optional<std::vector<std::string>>(std::move(out));
}

ApiResult<std::optional<Fields>> Fields::Object(std::string_view key) const {
  const nlohmann::json* v = Find(key);
  if (!v) return std::optional<Fields>();
  if (!v->is_object()) return std::unexpected(BadRequest(fmt::format("field '{}' must be an object", Name(key)), Name(key)));
  return std::optional<Fields>(Fields(*v, Name(key)));
}

ApiResult<std::vector<Fields>> Fields::ObjectList(std::string_view key, size_t max_items) const {
  const nlohmann::json* v = Find(key);
  std::vector<Fields> out;
  if (!v) return out;
  const std::string name = Name(key);
  if (!v->is_array()) return std::unexpected(BadRequest(fmt::format("field '{}' must be a list of objects", name), name));
  if (v->size() > max_items) {
    return std::unexpected(BadRequest(fmt::format("field '{}' has {} items; at most {}", name, v->size(), max_items), name));
  }
  for (size_t i = 0; i < v->size(); ++i) {
    const std::string item = fmt::format("{}[{}]", name, i);
    if (!(*v)[i].is_object()) return std::unexpected(BadRequest(fmt::format("'{}' must be an object", item), item));
    out.emplace_back((*v)[i], item);
  }
  return out;
}

}  // namespace tidal::server
