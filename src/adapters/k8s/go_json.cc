#include "adapters/k8s/go_json.h"

#include <charconv>
#include <cmath>

namespace tidal::k8s {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void AppendFloat(std::string& out, double x) {
  if (!std::isfinite(x)) {  // Go refuses to encode these; JSON has no spelling for them
    out += "null";
    return;
  }
  char buf[64];
  const double a = std::fabs(x);
  const bool fixed = a == 0 || (a >= 1e-6 && a < 1e21);
  auto r = std::to_chars(buf, buf + sizeof buf, x, fixed ? std::chars_format::fixed : std::chars_format::scientific);
  std::string s(buf, r.ptr);
  if (!fixed) {
    // to_chars writes "1e-07"; Go writes "1e-7" (at least two exponent digits only when needed).
    const size_t e = s.find('e');
    if (e != std::string::npos && e + 2 < s.size() && s[e + 2] == '0' && e + 3 < s.size()) s.erase(e + 2, 1);
  }
  out += s;
}

void Append(std::string& out, const ojson& v) {
  switch (v.type()) {
    case ojson::value_t::null:
    case ojson::value_t::discarded:
      out += "null";
      return;
    case ojson::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case ojson::value_t::number_integer:
      out += std::to_string(v.get<int64_t>());
      return;
    case ojson::value_t::number_unsigned:
      out += std::to_string(v.get<uint64_t>());
      return;
    case ojson::value_t::number_float:
      AppendFloat(out, v.get<double>());
      return;
    case ojson::value_t::string:
      AppendGoString(out, v.get_ref<const std::string&>());
      return;
    case ojson::value_t::binary:
      out += "null";
      return;
    case ojson::value_t::array: {
      out += '[';
      bool first = true;
      for (const ojson& e : v) {
        if (!first) out += ',';
        first = false;
        Append(out, e);
      }
      out += ']';
      return;
    }
    case ojson::value_t::object: {
      out += '{';
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (!first) out += ',';
        first = false;
        AppendGoString(out, it.key());
        out += ':';
        Append(out, it.value());
      }
      out += '}';
      return;
    }
  }
}

}  // namespace

void AppendGoString(std::string& out, std::string_view s) {
  out += '"';
  for (size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': out += "\\\""; continue;
        case '\\': out += "\\\\"; continue;
        case '\b': out += "\\b"; continue;
        case '\f': out += "\\f"; continue;
        case '\n': out += "\\n"; continue;
        case '\r': out += "\\r"; continue;
        case '\t': out += "\\t"; continue;
        default: break;
      }
      if (c < 0x20 || c == '<' || c == '>' || c == '&') {
        out += "\\u00";
        out += kHex[c >> 4];
        out += kHex[c & 0xF];
      } else {
        out += static_cast<char>(c);
      }
      continue;
    }
    // U+2028 and U+2029 (E2 80 A8 / E2 80 A9): escaped, as JavaScript needs.
    if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9)) {
      out += static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029";
      i += 2;
      continue;
    }
    out += static_cast<char>(c);
  }
  out += '"';
}

std::string GoJson(const ojson& v) {
  std::string out;
  Append(out, v);
  return out;
}

}  // namespace tidal::k8s
