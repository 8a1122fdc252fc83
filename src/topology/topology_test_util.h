// Test helpers shared by the topology format tests (header-only: the test
// targets are one source each). Two views of a topology:
//  * Describe: every domain at node level and above, by name, in pre-order,
//    with its parent, hosts and GPUs under it and NVLink; exact expectations.
//  * Shape: the same domains identified by the hosts under them, names
//    ignored; what a round trip through a format that renames domains keeps.
#pragma once

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "common/csv.h"
#include "common/rng.h"
#include "topology/hostlist.h"
#include "topology/topology.h"

namespace tidal::topo::testing {

inline std::vector<std::string> Describe(const Topology& t) {
  std::vector<std::string> out;
  for (DomainId d = 0; d < t.num_domains(); ++d) {
    const Domain& x = t.domain(d);
    if (LevelIndex(x.level) < LevelIndex(Level::kNode)) continue;
    const std::string parent = x.parent == kNoDomain ? "-" : t.domain(x.parent).name;
    std::string s = fmt::format("{} {} <- {}", LevelName(x.level), x.name, parent);
    if (x.level != Level::kNode) s += fmt::format(" hosts={}", t.hosts_under(d));
    if (t.gpus_known()) s += fmt::format(" gpus={}", t.gpus_under(d));
    if (x.nvlink) s += " nvlink";
    out.push_back(std::move(s));
  }
  return out;
}

inline std::string HostsUnder(const Topology& t, DomainId d) {
  std::vector<std::string> names;
  for (int32_t h = t.first_host(d); h < t.first_host(d) + t.hosts_under(d); ++h) names.push_back(t.domain(t.host(h)).name);
  std::sort(names.begin(), names.end());
  return CompressHostlist(names);
}

// Domains at node level and above as "level [hosts] in [parent's hosts]",
// with NVLink for switch domains (a host's own NVSwitch is no node label).
inline std::set<std::string> Shape(const Topology& t) {
  std::set<std::string> out;
  for (DomainId d = 0; d < t.num_domains(); ++d) {
    const Domain& x = t.domain(d);
    if (LevelIndex(x.level) < LevelIndex(Level::kNode)) continue;
    const std::string parent = x.parent == kNoDomain ? "-" : HostsUnder(t, x.parent);
    out.insert(fmt::format("{} [{}] in [{}]{}", LevelName(x.level), HostsUnder(t, d), parent,
                           x.nvlink && x.level != Level::kNode ? " nvlink" : ""));
  }
  return out;
}

inline std::vector<std::string> HostNames(const Topology& t) {
  std::vector<std::string> v;
  for (int32_t h = 0; h < t.num_hosts(); ++h) v.push_back(t.domain(t.host(h)).name);
  std::sort(v.begin(), v.end());
  return v;
}

inline std::string Shared(const std::string& rel) { return std::string(TIDAL_SHARED_DIR) + "/" + rel; }
inline bool HaveShared(const std::string& rel) { return std::filesystem::exists(Shared(rel)); }
inline std::string ReadShared(const std::string& rel) {
  auto s = ReadFileToString(Shared(rel));
  return s ? *s : std::string();
}

inline bool HasNote(const Topology& t, const std::string& part) {
  for (const auto& n : t.notes())
    if (n.find(part) != std::string::npos) return true;
  return false;
}

// One seeded damage of `s` for robustness tests: up to `max_edits` edits,
// each a byte from `alphabet` written over, a cut, a run of up to `max_copy`
// bytes doubled, or up to `max_erase` bytes erased.
inline std::string Damage(std::string s, Rng& rng, std::string_view alphabet, int max_edits, size_t max_copy, size_t max_erase) {
  const int edits = 1 + static_cast<int>(rng.Uniform(static_cast<uint64_t>(max_edits)));
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const size_t pos = rng.Uniform(s.size());
    switch (rng.Uniform(4)) {
      case 0: s[pos] = alphabet[rng.Uniform(alphabet.size())]; break;
      case 1: s.resize(pos); break;
      case 2: s.insert(pos, s.substr(pos, rng.Uniform(max_copy))); break;
      default: s.erase(pos, rng.Uniform(max_erase)); break;
    }
  }
  return s;
}

}  // namespace tidal::topo::testing
