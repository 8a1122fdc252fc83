#include "planner/topology_placement.h"

#include <algorithm>
#include <vector>

namespace tidal::planner {

Placement PlacementFromTopology(const topo::Topology& t, std::span<const topo::DomainId> in) {
  std::vector<topo::DomainId> gpus(in.begin(), in.end());
  std::sort(gpus.begin(), gpus.end());
  const int n = static_cast<int>(gpus.size());
  Placement pl;
  pl.gpus = n;
  {
    std::vector<int32_t> hosts;
    for (topo::DomainId g : gpus) hosts.push_back(t.host_of(g));
    std::sort(hosts.begin(), hosts.end());
    pl.nodes = static_cast<int>(std::unique(hosts.begin(), hosts.end()) - hosts.begin());
  }
  if (n <= 1) {
    pl.gpus_per_domain = std::max(n, 1);
    pl.nvlink_gbps = n == 1 ? std::max(1.0, t.domain(t.NvlinkDomain(gpus[0])).link.gbps) : 1;
    pl.levels = {{"none", 0, pl.nvlink_gbps, 0, 1}};
    return pl;
  }
  std::vector<int> divisors;
  for (int k = 2; k <= n; ++k)
    if (n % k == 0) divisors.push_back(k);
  // The worst ring link over the blocks of k ranks. A block's ring links
  // are its neighbours in order, (j, j + 1), and its closing link (last,
  // first); the neighbours' links are the same for every k, so they are
  // asked of the topology once (a 512-GPU gang has nine block sizes).
  struct Worst {
    double gbps = 1e18;
    double latency_us = 0;
    int hops = 0;
    topo::Level level = topo::Level::kGpu;
    bool nvlink = true;  // every block inside one NVLink domain
  };
  auto add = [&](Worst& w, const topo::PathLink& p) {
    if (p.gbps < w.gbps) w.gbps = p.gbps;
    if (p.latency_us > w.latency_us) w.latency_us = p.latency_us;
    if (p.hops > w.hops) w.hops = p.hops;
    if (topo::LevelIndex(t.level(p.common)) > topo::LevelIndex(w.level)) w.level = t.level(p.common);
  };
  std::vector<topo::PathLink> next(static_cast<size_t>(n - 1));  // link (j, j + 1)
  for (int j = 0; j + 1 < n; ++j)
    next[static_cast<size_t>(j)] = t.Between(gpus[static_cast<size_t>(j)], gpus[static_cast<size_t>(j + 1)]);
  auto worst_at = [&](int k) {
    Worst w;
    for (int b = 0; b < n; b += k) {
      const topo::DomainId nv = t.NvlinkDomain(gpus[static_cast<size_t>(b)]);
      if (nv == gpus[static_cast<size_t>(b)] || !t.Contains(nv, gpus[static_cast<size_t>(b + k - 1)])) w.nvlink = false;
      for (int i = 0; i + 1 < k; ++i) add(w, next[static_cast<size_t>(b + i)]);
      add(w, t.Between(gpus[static_cast<size_t>(b + k - 1)], gpus[static_cast<size_t>(b)]));
    }
    return w;
  };
  // NVLink part: the largest divisor whose blocks each sit in one NVLink domain.
  pl.gpus_per_domain = 1;
  pl.nvlink_gbps = 0;
  size_t first_net = 0;
  for (size_t i = 0; i < divisors.size(); ++i) {
    const Worst w = worst_at(divisors[i]);
    if (!w.nvlink) break;
    pl.gpus_per_domain = divisors[i];
    pl.nvlink_gbps = w.gbps;
    pl.nvlink_latency_us = w.latency_us;
    first_net = i + 1;
  }
  for (size_t i = first_net; i < divisors.size(); ++i) {
    const Worst w = worst_at(divisors[i]);
    NetworkLevel l;
    l.name = std::string(topo::LevelName(w.level));
    l.span_gpus = divisors[i];
    l.gbps = w.gbps;
    l.hops = std::max(1, w.hops);
    l.latency_us = w.latency_us / l.hops;
    if (!pl.levels.empty() && pl.levels.back().gbps == l.gbps && pl.levels.back().hops == l.hops &&
        pl.levels.back().latency_us == l.latency_us) {
      pl.levels.back().span_gpus = l.span_gpus;
    } else {
      pl.levels.push_back(l);
    }
  }
  if (pl.nvlink_gbps <= 0) {
    // No NVLink between any two of its GPUs: the innermost link stands in
    // (span 1 never communicates, so only its positivity matters).
    pl.nvlink_gbps = pl.levels.empty() ? 1 : pl.levels.front().gbps;
    pl.nvlink_latency_us = pl.levels.empty() ? 3 : pl.levels.front().latency_us;
  }
  if (pl.levels.empty()) pl.levels.push_back({"nvlink", 0, pl.nvlink_gbps, pl.nvlink_latency_us, 1});
  pl.levels.back().span_gpus = 0;
  return pl;
}

}  // namespace tidal::planner
