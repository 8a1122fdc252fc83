// Line and field splitting shared by the line-oriented topology readers
// (nvidia-smi, ibnetdiscover). Lines keep their 1-based number so every error
// can say "file:line"; CRLF endings are accepted; text quoted back in a
// message is made printable, since a damaged file may hold any byte.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tidal::topo {

struct TextLine {
  int no = 0;
  std::string_view text;
};

inline std::vector<TextLine> SplitLines(std::string_view text) {
  std::vector<TextLine> out;
  size_t pos = 0;
  int no = 0;
  while (pos < text.size()) {
    size_t e = text.find('\n', pos);
    if (e == std::string_view::npos) e = text.size();
    std::string_view line = text.substr(pos, e - pos);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    out.push_back({++no, line});
    pos = e + 1;
  }
  return out;
}

inline bool IsFieldSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

inline bool IsBlank(std::string_view s) {
  for (char c : s)
    if (!IsFieldSpace(c)) return false;
  return true;
}

// Fields separated by runs of spaces or tabs (empty fields vanish, as the
// tab-padded and space-padded pastes of one output must read the same).
inline std::vector<std::string_view> SplitFields(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && IsFieldSpace(s[i])) ++i;
    const size_t b = i;
    while (i < s.size() && !IsFieldSpace(s[i])) ++i;
    if (i > b) out.push_back(s.substr(b, i - b));
  }
  return out;
}

inline std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && IsFieldSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsFieldSpace(s.back())) s.remove_suffix(1);
  return s;
}

// A non-negative decimal integer of at most `max`, all of `s`.
inline std::optional<int64_t> ParseDecimal(std::string_view s, int64_t max) {
  if (s.empty() || s.size() > 18) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  if (v > max) return std::nullopt;
  return v;
}

// `s` for an error message: control and non-ASCII bytes as '?', cut at `max`.
inline std::string Printable(std::string_view s, size_t max = 60) {
  std::string out;
  for (char c : s.substr(0, max)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > max) out += "...";
  return out;
}

}  // namespace tidal::topo
