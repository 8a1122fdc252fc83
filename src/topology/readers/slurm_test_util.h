// Shared by the Slurm reader and writer tests: the fixtures, a comparable
// summary of a topology's domains, and deterministic input mutations.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "topology/hostlist.h"
#include "topology/topology.h"

namespace tidal::topo::slurm_test {

inline const std::string kDir = std::string(TIDAL_SHARED_DIR) + "/fixtures/slurm/";

inline bool HaveFixtures() { return std::filesystem::exists(kDir + "SOURCES.md"); }

inline std::string Fixture(const std::string& name) {
  std::ifstream in(kDir + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The topology files of the fixture folder, sorted (directory order is not).
inline std::vector<std::string> FixtureNames() {
  std::vector<std::string> v;
  for (const auto& e : std::filesystem::directory_iterator(kDir)) {
    const std::string n = e.path().filename().string();
    if (n.ends_with(".conf") || n.ends_with(".yaml")) v.push_back(n);
  }
  std::sort(v.begin(), v.end());
  return v;
}

// One domain as the tests compare it.
struct Dom {
  std::string level, parent, hosts;  // hosts under it, as a compressed host list
  int switches = 1, rails = 0;
  bool operator==(const Dom&) const = default;
};
inline std::ostream& operator<<(std::ostream& o, const Dom& d) {
  return o << "{" << d.level << ", parent " << d.parent << ", hosts " << d.hosts << ", x" << d.switches << ", rails " << d.rails << "}";
}

// Domains above hosts (and the hosts themselves with `with_hosts`), by name.
inline std::map<std::string, Dom> Domains(const Topology& t, bool with_hosts = false) {
  std::map<std::string, Dom> out;
  for (DomainId d = 0; d < t.num_domains(); ++d) {
    const int l = LevelIndex(t.level(d)), node = LevelIndex(Level::kNode);
    if (l < node || (l == node && !with_hosts)) continue;
    const Domain& x = t.domain(d);
    std::vector<std::string> hs;
    for (int32_t h = t.first_host(d); h < t.first_host(d) + t.hosts_under(d); ++h) hs.push_back(t.domain(t.host(h)).name);
    out[x.name] = {std::string(LevelName(x.level)), x.parent == kNoDomain ? "" : t.domain(x.parent).name, CompressHostlist(hs),
                   x.switches, x.rails};
  }
  return out;
}

inline std::vector<std::string> Hosts(const Topology& t) {
  std::vector<std::string> v;
  for (DomainId h : t.hosts()) v.push_back(t.domain(h).name);
  return v;
}

// FNV-1a: a seed that is the same on every platform (std::hash is not).
inline uint64_t Seed(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Replaced, inserted, deleted and repeated bytes (biased to the characters
// the syntax cares about), truncation, duplicated or swapped lines.
inline std::string Mutate(std::string s, std::mt19937_64& rng) {
  static const std::string kChars = std::string("[]-,=#\\\" \t\n\r:{}'|&*!0123456789abcnsxN_.+%\x01\xff") + '\0';
  auto pick = [&](size_t n) { return n == 0 ? size_t{0} : static_cast<size_t>(rng() % n); };
  const int ops = 1 + static_cast<int>(rng() % 4);
  for (int i = 0; i < ops; ++i) {
    switch (rng() % 7) {
      case 0:
        if (!s.empty()) s[pick(s.size())] = kChars[pick(kChars.size())];
        break;
      case 1: s.insert(s.begin() + static_cast<std::ptrdiff_t>(pick(s.size() + 1)), kChars[pick(kChars.size())]); break;
      case 2:
        if (!s.empty()) s.erase(pick(s.size()), 1 + pick(12));
        break;
      case 3: s.resize(pick(s.size() + 1)); break;
      case 4:
      case 5: {
        std::vector<std::string> lines;
        std::stringstream ss(s);
        for (std::string l; std::getline(ss, l);) lines.push_back(l);
        if (lines.empty()) break;
        const size_t a = pick(lines.size()), b = pick(lines.size());
        if (rng() % 2) lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(b), lines[a]);
        else std::swap(lines[a], lines[b]);
        s.clear();
        for (const auto& l : lines) s += l + "\n";
        break;
      }
      default:
        if (!s.empty()) {
          const size_t p = pick(s.size());
          s.insert(p, s.substr(p, 1 + pick(20)));
        }
        break;
    }
  }
  return s;
}

}  // namespace tidal::topo::slurm_test
