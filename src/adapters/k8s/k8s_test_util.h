// Test helpers: the upstream extender fixtures in ../shared.
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace tidal::k8s::testing {

inline const std::filesystem::path& ExtenderFixtures() {
  static const std::filesystem::path p = std::filesystem::path(TIDAL_SHARED_DIR) / "fixtures" / "k8s-extender";
  return p;
}

// A fixture's bytes without the trailing newline a file may end with.
inline std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

}  // namespace tidal::k8s::testing
