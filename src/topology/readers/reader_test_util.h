// Test helpers shared by the reader tests: fixtures from shared/ (read at run
// time, skipped with a message where shared/ is absent) and deterministic
// mutations of their text for the robustness tests.
#pragma once

#include <algorithm>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/csv.h"

namespace tidal::topo::testing {

inline std::string FixtureDir(const std::string& sub) { return std::string(TIDAL_SHARED_DIR) + "/fixtures/" + sub + "/"; }

// The fixture files of a directory (not its SOURCES.md), sorted.
inline std::vector<std::string> FixtureFiles(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().filename() != "SOURCES.md") out.push_back(e.path().filename().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::string Slurp(const std::string& path) {
  auto text = ReadFileToString(path);
  return text ? *text : std::string();
}

#define TIDAL_REQUIRE_DIR(dir)                                                                                     \
  do {                                                                                                             \
    if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "fixtures not found at " << (dir) << " (shared/ absent)"; \
  } while (0)

// One random damage of `s`: bytes overwritten (often with the bytes these
// formats care about), a cut, a line dropped or doubled, bytes inserted.
inline std::string Mutate(std::string s, std::mt19937& rng) {
  using namespace std::string_literals;
  static const std::string kBytes = " \t\n\r[]()\"#:-xX0123456789NVSYSPIXHS\x00\xff"s;  // NUL kept by the literal
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : std::uniform_int_distribution<size_t>(0, n - 1)(rng); };
  const int edits = 1 + static_cast<int>(pick(4));
  for (int e = 0; e < edits; ++e) {
    switch (pick(6)) {
      case 0:
      case 1:
        if (!s.empty()) s[pick(s.size())] = pick(3) == 0 ? static_cast<char>(pick(256)) : kBytes[pick(kBytes.size())];
        break;
      case 2: s.resize(pick(s.size() + 1)); break;
      case 3: {  // drop a line
        const size_t b = s.rfind('\n', pick(s.size() + 1));
        const size_t from = b == std::string::npos ? 0 : b + 1;
        const size_t to = s.find('\n', from);
        s.erase(from, to == std::string::npos ? std::string::npos : to - from + 1);
        break;
      }
      case 4: {  // double a line
        const size_t from = s.rfind('\n', pick(s.size() + 1));
        const size_t b = from == std::string::npos ? 0 : from + 1;
        const size_t to = s.find('\n', b);
        const std::string line = s.substr(b, to == std::string::npos ? std::string::npos : to - b + 1);
        s.insert(b, line);
        break;
      }
      default: s.insert(pick(s.size() + 1), 1, kBytes[pick(kBytes.size())]); break;
    }
  }
  return s;
}

}  // namespace tidal::topo::testing
