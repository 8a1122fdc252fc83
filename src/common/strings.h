// Small string helpers shared by parsers (ASCII only: trace and log formats
// are ASCII, and locale-dependent case mapping would make parsing depend on
// the machine).
#pragma once

#include <string>
#include <string_view>

namespace tidal {

inline std::string AsciiLower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

}  // namespace tidal
