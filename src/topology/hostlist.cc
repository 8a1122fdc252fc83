#include "topology/hostlist.h"

#include <charconv>
#include <map>

namespace tidal::topo {
namespace {

// Splits at commas that are outside brackets.
Result<std::vector<std::string_view>> SplitTop(std::string_view s) {
  std::vector<std::string_view> out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '[') {
      if (++depth > 1) return MakeError(ErrorCode::kParse, "host list '{}': nested '[' at {}", s, i + 1);
    } else if (s[i] == ']') {
      if (--depth < 0) return MakeError(ErrorCode::kParse, "host list '{}': ']' without '[' at {}", s, i + 1);
    } else if (s[i] == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  if (depth != 0) return MakeError(ErrorCode::kParse, "host list '{}': '[' is never closed", s);
  out.push_back(s.substr(start));
  return out;
}

Result<std::vector<std::string>> ExpandBracket(std::string_view whole, std::string_view inner, size_t max_names) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= inner.size()) {
    size_t comma = inner.find(',', pos);
    if (comma == std::string_view::npos) comma = inner.size();
    std::string_view part = inner.substr(pos, comma - pos);
    const size_t dash = part.find('-');
    std::string_view a = part.substr(0, dash);
    std::string_view b = dash == std::string_view::npos ? a : part.substr(dash + 1);
    auto number = [&](std::string_view t, uint64_t& v) {
      if (t.empty() || t.size() > 18) return false;
      auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
      return ec == std::errc() && p == t.data() + t.size();
    };
    uint64_t lo = 0, hi = 0;
    if (!number(a, lo) || !number(b, hi)) {
      return MakeError(ErrorCode::kParse, "host list '{}': '{}' is not a number or range like 1-8", whole, part);
    }
    if (hi < lo) return MakeError(ErrorCode::kParse, "host list '{}': range '{}' runs backwards", whole, part);
    if (hi - lo >= max_names || out.size() + (hi - lo) >= max_names) {
      return MakeError(ErrorCode::kParse, "host list '{}': range '{}' names more than {} hosts", whole, part, max_names);
    }
    const size_t width = a.size() > 1 && a[0] == '0' ? a.size() : 0;
    for (uint64_t v = lo; v <= hi; ++v) {
      std::string n = std::to_string(v);
      if (n.size() < width) n.insert(0, width - n.size(), '0');
      out.push_back(std::move(n));
    }
    pos = comma + 1;
  }
  return out;
}

}  // namespace

Result<std::vector<std::string>> ExpandHostlist(std::string_view list, size_t max_hosts) {
  std::vector<std::string> out;
  TIDAL_ASSIGN_OR_RETURN(auto parts, SplitTop(list));
  for (std::string_view part : parts) {
    while (!part.empty() && (part.front() == ' ' || part.front() == '\t')) part.remove_prefix(1);
    while (!part.empty() && (part.back() == ' ' || part.back() == '\t')) part.remove_suffix(1);
    if (part.empty()) {
      if (parts.size() == 1) return out;
      return MakeError(ErrorCode::kParse, "host list '{}': empty name between commas", list);
    }
    std::vector<std::string> names = {""};
    size_t pos = 0;
    while (pos < part.size()) {
      const size_t open = part.find('[', pos);
      const std::string_view lit = part.substr(pos, open == std::string_view::npos ? part.npos : open - pos);
      for (auto& n : names) n += lit;
      if (open == std::string_view::npos) break;
      const size_t close = part.find(']', open);
      TIDAL_ASSIGN_OR_RETURN(auto nums, ExpandBracket(list, part.substr(open + 1, close - open - 1), max_hosts));
      if (names.size() * nums.size() + out.size() > max_hosts) {
        return MakeError(ErrorCode::kParse, "host list '{}' names more than {} hosts", list, max_hosts);
      }
      std::vector<std::string> next;
      next.reserve(names.size() * nums.size());
      for (const auto& n : names)
        for (const auto& v : nums) next.push_back(n + v);
      names = std::move(next);
      pos = close + 1;
    }
    for (auto& n : names) out.push_back(std::move(n));
    if (out.size() > max_hosts) return MakeError(ErrorCode::kParse, "host list '{}' names more than {} hosts", list, max_hosts);
  }
  return out;
}

std::string CompressHostlist(const std::vector<std::string>& names) {
  struct Split {
    std::string prefix, digits;
  };
  auto split = [](const std::string& s) {
    size_t i = s.size();
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
    // A name with brackets or commas is written as is (it cannot be compressed safely).
    if (s.find_first_of("[],") != std::string::npos) return Split{s, ""};
    return Split{s.substr(0, i), s.substr(i)};
  };
  std::string out;
  size_t i = 0;
  while (i < names.size()) {
    const Split first = split(names[i]);
    if (first.digits.empty() || first.digits.size() > 18) {
      out += (out.empty() ? "" : ",") + names[i];
      ++i;
      continue;
    }
    // A run: same prefix, same digit width (or no zero padding on either), ascending.
    const bool padded = first.digits.size() > 1 && first.digits[0] == '0';
    std::vector<std::pair<uint64_t, uint64_t>> ranges;
    uint64_t prev = std::stoull(first.digits);
    ranges.push_back({prev, prev});
    size_t j = i + 1;
    for (; j < names.size(); ++j) {
      const Split s = split(names[j]);
      if (s.digits.empty() || s.digits.size() > 18 || s.prefix != first.prefix) break;
      const bool p = s.digits.size() > 1 && s.digits[0] == '0';
      if (padded || p ? s.digits.size() != first.digits.size() : false) break;
      if (!padded && p) break;
      const uint64_t v = std::stoull(s.digits);
      if (v <= prev) break;
      if (v == prev + 1) ranges.back().second = v;
      else ranges.push_back({v, v});
      prev = v;
    }
    if (j == i + 1) {
      out += (out.empty() ? "" : ",") + names[i];
      i = j;
      continue;
    }
    const size_t width = padded ? first.digits.size() : 0;
    auto num = [&](uint64_t v) {
      std::string n = std::to_string(v);
      if (n.size() < width) n.insert(0, width - n.size(), '0');
      return n;
    };
    std::string body;
    for (const auto& [a, b] : ranges) body += (body.empty() ? "" : ",") + (a == b ? num(a) : num(a) + "-" + num(b));
    out += (out.empty() ? "" : ",") + first.prefix + "[" + body + "]";
    i = j;
  }
  return out;
}

}  // namespace tidal::topo
