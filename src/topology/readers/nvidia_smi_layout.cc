// From a checked `topo -m` matrix to a host layout.
//
//  * Every GPU pair NV-linked (NVSwitch, or a full mesh such as 4 x A100 NV4):
//    the host is an NVLink domain at the slowest pair's NV# x 25 GB/s.
//  * Otherwise NVLink groups (level nvlink) for all-to-all NV-linked sets: the
//    largest such set first, repeatedly (exact up to 16 GPUs, greedy above),
//    so a mesh that is not all-to-all (DGX-1's hybrid cube) becomes its
//    cliques and a note says which NV links were left to PCIe.
//  * NUMA nodes (NUMA Affinity) as pcie groups, unless one node holds every
//    GPU or the column says N/A.
//  * PCIe switches (GPU pairs at PIX/PXB) as pcie groups too, but a host's
//    pcie groups cannot nest (the builder wants levels to rise strictly), so a
//    switch group inside a NUMA group is left out with a note: the NUMA node
//    is the coarser, always-present split and keeps its place.
// Groups are accepted in that order (NVLink, NUMA, PCIe switch); one that
// would overlap an accepted group without nesting is left out with a note.
// A set's link is its worst path: all NV -> NVLink; PIX/PXB/PHB/NODE ->
// tidal's PCIe default; SYS -> the cross-socket default (topo -m gives no
// bandwidths, so the note names the defaults).
#include <algorithm>
#include <climits>
#include <functional>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topology/readers/nvidia_smi_matrix.h"

namespace tidal::topo::nvsmi {
namespace {

using Group = HostLayout::Group;

std::string Set(const std::vector<int>& g) { return fmt::format("{{{}}}", fmt::join(g, ",")); }

struct Rated {
  bool nvlink = false;
  LinkSpec link;
};

Rated RateSet(const Matrix& m, const std::vector<int>& g, Level level, bool& pcie_default) {
  if (g.size() < 2) return {false, DefaultLink(Level::kNode, false)};
  int min_nv = INT_MAX;
  bool all_nv = true;
  Path worst = Path::kPix;
  for (size_t i = 0; i < g.size(); ++i) {
    for (size_t j = i + 1; j < g.size(); ++j) {
      const Cell& c = m.At(g[i], g[j]);
      if (c.path == Path::kNv) {
        min_nv = std::min(min_nv, c.links);
      } else {
        all_nv = false;
        worst = std::max(worst, c.path);
      }
    }
  }
  if (all_nv) {
    LinkSpec l = DefaultLink(level, true);
    l.gbps = min_nv * kGbpsPerNvlink;
    return {true, l};
  }
  pcie_default = true;
  return {false, worst == Path::kSys ? DefaultLink(Level::kNode, false) : DefaultLink(Level::kPcie, false)};
}

using Adjacency = std::vector<std::vector<bool>>;

void Extend(const Adjacency& adj, std::vector<int>& cur, const std::vector<int>& cand, std::vector<int>& best) {
  if (cur.size() > best.size()) best = cur;
  for (size_t k = 0; k < cand.size(); ++k) {
    if (cur.size() + (cand.size() - k) <= best.size()) return;  // cannot beat the best any more
    const int v = cand[k];
    std::vector<int> next;
    for (size_t q = k + 1; q < cand.size(); ++q)
      if (adj[static_cast<size_t>(v)][static_cast<size_t>(cand[q])]) next.push_back(cand[q]);
    cur.push_back(v);
    Extend(adj, cur, next, best);
    cur.pop_back();
  }
}

// The largest all-to-all set among `rest` (ascending); ties go to the one
// with the lowest GPU indices. Exact search up to 16 GPUs (HGX boards have
// at most 16), greedy by degree above, so no input can make it slow.
std::vector<int> LargestClique(const Adjacency& adj, const std::vector<int>& rest) {
  std::vector<int> best, cur;
  if (rest.size() <= 16) {
    Extend(adj, cur, rest, best);
    return best;
  }
  int seed = rest.front(), seed_degree = -1;
  for (int v : rest) {
    int d = 0;
    for (int u : rest) d += adj[static_cast<size_t>(v)][static_cast<size_t>(u)];
    if (d > seed_degree) seed = v, seed_degree = d;
  }
  best.push_back(seed);
  for (int u : rest) {
    bool all = u != seed;
    for (int v : best) all = all && adj[static_cast<size_t>(u)][static_cast<size_t>(v)];
    if (all) best.push_back(u);
  }
  std::sort(best.begin(), best.end());
  return best;
}

// NVLink groups; `covered` tells whether they hold every NV link.
std::vector<std::vector<int>> NvCliques(const Matrix& m, bool& covered) {
  const auto n = static_cast<size_t>(m.gpus);
  Adjacency adj(n, std::vector<bool>(n, false));
  std::vector<int> rest;
  int edges = 0;
  for (int a = 0; a < m.gpus; ++a) {
    for (int b = 0; b < m.gpus; ++b) {
      adj[static_cast<size_t>(a)][static_cast<size_t>(b)] = a != b && m.At(a, b).path == Path::kNv;
      edges += a < b && adj[static_cast<size_t>(a)][static_cast<size_t>(b)];
    }
    if (std::find(adj[static_cast<size_t>(a)].begin(), adj[static_cast<size_t>(a)].end(), true) != adj[static_cast<size_t>(a)].end())
      rest.push_back(a);
  }
  std::vector<std::vector<int>> out;
  int inside = 0;
  while (rest.size() >= 2) {
    std::vector<int> c = LargestClique(adj, rest);
    if (c.size() < 2) break;
    inside += static_cast<int>(c.size() * (c.size() - 1) / 2);
    std::erase_if(rest, [&](int v) { return std::find(c.begin(), c.end(), v) != c.end(); });
    out.push_back(std::move(c));
  }
  covered = inside == edges;
  return out;
}

// Why `c` cannot join the accepted groups ("" if it can): groups must nest or
// be disjoint, and a group inside another must be of a lower level.
std::string Conflict(const Group& c, const std::vector<Group>& accepted) {
  for (const Group& a : accepted) {
    size_t inter = 0;
    for (int x : c.gpus) inter += std::find(a.gpus.begin(), a.gpus.end(), x) != a.gpus.end();
    if (inter == 0) continue;
    const bool c_in_a = inter == c.gpus.size(), a_in_c = inter == a.gpus.size();
    if (c_in_a && a_in_c) {
      if (c.level == a.level) return fmt::format("it holds the same GPUs as {}", a.name);
      continue;
    }
    if (c_in_a && LevelIndex(c.level) < LevelIndex(a.level)) continue;
    if (a_in_c && LevelIndex(a.level) < LevelIndex(c.level)) continue;
    if (c_in_a || a_in_c) {
      return fmt::format("it would nest with {} at the same level ({}), which a host's layout cannot hold", a.name,
                         LevelName(a.level));
    }
    return fmt::format("it overlaps {} {} without nesting", a.name, Set(a.gpus));
  }
  return "";
}

void NicNote(const Matrix& m, const std::string& src, std::vector<std::string>& notes) {
  const size_t nics = m.cols.size() - static_cast<size_t>(m.gpus);
  if (nics == 0) return;
  std::vector<std::string> bonds, missing;
  for (size_t i = 0; i < nics; ++i) {
    const std::string& name = m.nic_name[i].empty() ? m.cols[static_cast<size_t>(m.gpus) + i].name : m.nic_name[i];
    if (name.find("bond") != std::string::npos) bonds.push_back(name);
    if (m.nic_line[i] == 0) missing.push_back(m.cols[static_cast<size_t>(m.gpus) + i].name);
  }
  int near = 0;
  for (int g = 0; g < m.gpus; ++g) {
    bool any = false;
    for (size_t c = static_cast<size_t>(m.gpus); c < m.cols.size(); ++c) {
      const Path p = m.At(g, static_cast<int>(c)).path;
      any = any || p == Path::kPix || p == Path::kPxb;
    }
    near += any;
  }
  std::string note = fmt::format("{}: {} NIC column(s)", src, nics);
  if (!bonds.empty()) {
    note += fmt::format(", less {} bond(s) ({}): a bonded interface (usually the front-end Ethernet), not a port of the GPU fabric",
                        bonds.size(), fmt::join(bonds, ", "));
  }
  note += fmt::format("; {} NIC(s) for {} GPU(s), {} of the GPUs with a NIC behind their PCIe switch (PIX/PXB). Rails are a "
                      "property of the leaf switches above the hosts; read the fabric with ibnetdiscover",
                      nics - bonds.size(), m.gpus, near);
  notes.push_back(std::move(note));
  if (!missing.empty()) {
    notes.push_back(fmt::format("{}: no rows for {} ({} of {} NIC rows; the file is cut after the GPU matrix?); the GPU rows "
                                "give every GPU-NIC path, so the layout is whole",
                                src, fmt::join(missing, ", "), missing.size(), nics));
  }
}

}  // namespace

HostLayout LayoutFromMatrix(const Matrix& m, const std::string& src, std::vector<std::string>& notes) {
  HostLayout L;
  L.gpus = m.gpus;
  bool pcie_default = false;
  std::vector<int> all(static_cast<size_t>(m.gpus));
  std::iota(all.begin(), all.end(), 0);
  const Rated host = RateSet(m, all, Level::kNode, pcie_default);
  L.nvlink = host.nvlink;
  L.link = host.link;

  std::vector<std::pair<Group, std::string>> candidates;  // group, what it is
  if (!host.nvlink) {
    bool covered = true;
    const auto cliques = NvCliques(m, covered);
    for (size_t i = 0; i < cliques.size(); ++i) {
      const Rated r = RateSet(m, cliques[i], Level::kNvlink, pcie_default);
      candidates.push_back({Group{Level::kNvlink, fmt::format("nvlink{}", i), cliques[i], true, r.link}, "NVLink group"});
    }
    if (!covered) {
      std::vector<std::string> sets;
      for (const auto& c : cliques) sets.push_back(Set(c));
      notes.push_back(fmt::format("{}: the NVLinks do not join all-to-all sets; tidal took the largest all-to-all sets as NVLink "
                                  "groups ({}), and GPUs of different groups talk at the host's PCIe rate",
                                  src, fmt::join(sets, ", ")));
    }
  }
  if (m.numa_extra >= 0) {
    std::vector<std::pair<std::string, std::vector<int>>> nodes;  // in order of first GPU
    std::vector<int> unknown;
    for (int g = 0; g < m.gpus; ++g) {
      const std::string& v = m.numa[static_cast<size_t>(g)];
      if (v == "N/A" || v.empty()) {
        unknown.push_back(g);
        continue;
      }
      auto it = std::find_if(nodes.begin(), nodes.end(), [&](const auto& p) { return p.first == v; });
      if (it == nodes.end()) nodes.push_back({v, {g}});
      else it->second.push_back(g);
    }
    if (!unknown.empty() && !nodes.empty()) {
      notes.push_back(fmt::format("{}: GPUs {} have NUMA Affinity N/A; they belong to no NUMA group", src, Set(unknown)));
    }
    if (nodes.size() > 1 || (nodes.size() == 1 && nodes.front().second.size() < all.size())) {
      for (const auto& [v, g] : nodes) {
        const Rated r = RateSet(m, g, Level::kPcie, pcie_default);
        candidates.push_back({Group{Level::kPcie, "numa" + v, g, r.nvlink, r.link}, "NUMA node " + v});
      }
    }
  }
  {
    // PCIe switches: GPUs joined by PIX/PXB paths, transitively.
    std::vector<int> comp(all);
    std::function<int(int)> find = [&](int x) { return comp[static_cast<size_t>(x)] == x ? x : comp[static_cast<size_t>(x)] = find(comp[static_cast<size_t>(x)]); };
    for (int a = 0; a < m.gpus; ++a)
      for (int b = a + 1; b < m.gpus; ++b)
        if (m.At(a, b).path == Path::kPix || m.At(a, b).path == Path::kPxb) comp[static_cast<size_t>(find(b))] = find(a);
    std::vector<std::vector<int>> sets(all.size());
    for (int g = 0; g < m.gpus; ++g) sets[static_cast<size_t>(find(g))].push_back(g);
    int k = 0;
    for (const auto& s : sets) {
      if (s.size() < 2 || s.size() == all.size()) continue;
      const Rated r = RateSet(m, s, Level::kPcie, pcie_default);
      candidates.push_back({Group{Level::kPcie, fmt::format("pcisw{}", k++), s, r.nvlink, r.link}, "PCIe switch group"});
    }
  }
  std::vector<Group> accepted;
  for (auto& [g, what] : candidates) {
    const std::string why = Conflict(g, accepted);
    if (why.empty()) {
      accepted.push_back(std::move(g));
      continue;
    }
    notes.push_back(fmt::format("{}: {} {} ({}) is not modelled: {}", src, what, Set(g.gpus), g.name, why));
  }
  // Larger sets first, and of two equal sets the higher level first: the
  // builder nests an equal later group inside the earlier one.
  std::stable_sort(accepted.begin(), accepted.end(), [](const Group& a, const Group& b) {
    if (a.gpus.size() != b.gpus.size()) return a.gpus.size() > b.gpus.size();
    return LevelIndex(a.level) > LevelIndex(b.level);
  });
  L.groups = std::move(accepted);

  int min_nv = INT_MAX, max_nv = 0;
  for (int a = 0; a < m.gpus; ++a)
    for (int b = 0; b < m.gpus; ++b)
      if (m.At(a, b).path == Path::kNv) min_nv = std::min(min_nv, m.At(a, b).links), max_nv = std::max(max_nv, m.At(a, b).links);
  if (max_nv > 0) {
    const std::string range = min_nv == max_nv ? fmt::format("NV{}", max_nv) : fmt::format("NV{}..NV{}", min_nv, max_nv);
    notes.push_back(fmt::format("{}: {} rated at {:g} GB/s per NVLink per direction ({} -> {:g} GB/s), the rate of NVLink 2-4 "
                                "(V100, A100, H100); `topo -m` does not give the generation, and Blackwell's NVLink 5 is "
                                "twice as fast",
                                src, range, kGbpsPerNvlink, fmt::format("NV{}", max_nv), max_nv * kGbpsPerNvlink));
  }
  if (pcie_default) {
    notes.push_back(fmt::format("{}: `topo -m` gives no PCIe bandwidths; PIX/PXB/PHB/NODE paths use tidal's PCIe default of "
                                "{:g} GB/s and SYS paths the cross-socket default of {:g} GB/s",
                                src, DefaultLink(Level::kPcie, false).gbps, DefaultLink(Level::kNode, false).gbps));
  }
  NicNote(m, src, notes);
  return L;
}

}  // namespace tidal::topo::nvsmi
