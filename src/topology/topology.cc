#include "topology/topology.h"

#include <algorithm>

#include <fmt/format.h>

namespace tidal::topo {

LinkSpec DefaultLink(Level level, bool nvlink) {
  if (nvlink) {
    // NVLink 4 per direction (H100 SXM, 18 links x 25 GB/s); an NVL72 block
    // runs NVLink 5 (900 GB/s per direction) through NVLink switch trays.
    if (level == Level::kBlock) return {900, 3.0, 1, 1};
    return {450, 3.0, 1, 1};
  }
  switch (level) {
    case Level::kGpu: return {0, 0, 0, 1};
    case Level::kNvlink: return {450, 3.0, 1, 1};
    case Level::kPcie: return {25, 2.0, 1, 1};     // PCIe Gen4 x16 behind one switch
    case Level::kNode: return {20, 3.0, 1, 1};     // across sockets (UPI) and PCIe
    case Level::kBlock: return {50, 5.0, 1, 1};    // a block of hosts behind one switch layer
    case Level::kLeaf: return {50, 5.0, 1, 1};     // NDR 400 Gb/s NIC per GPU, leaf-local
    case Level::kSpine: return {50, 8.1, 3, 1};    // leaf-spine-leaf, 2.7 us a hop
    case Level::kCore: return {50, 13.5, 5, 1};
    case Level::kZone: return {25, 50.0, 7, 1};    // across halls: longer fibre, thinner pipes
  }
  return {};
}

std::string Topology::DomainName(DomainId d) const {
  const Domain& x = domain(d);
  if (x.level != Level::kGpu) return x.name;
  const int32_t h = host_of(d);
  return fmt::format("{}/gpu{}", domains_[static_cast<size_t>(host(h))].name, x.local_index);
}

std::optional<int32_t> Topology::FindHost(std::string_view name) const {
  auto it = host_by_name_.find(std::string(name));
  if (it == host_by_name_.end()) return std::nullopt;
  return it->second;
}

DomainId Topology::LowestCommonDomain(DomainId a, DomainId b) const {
  if (a > b) std::swap(a, b);
  // With pre-order ids, the LCA is the deepest ancestor of a whose subtree holds b.
  while (!Contains(a, b)) a = parent(a);
  return a;
}

DomainId Topology::LowestCommonDomain(std::span<const DomainId> ds) const {
  if (ds.empty()) return kNoDomain;
  DomainId lo = ds.front(), hi = ds.front();
  for (DomainId d : ds) lo = std::min(lo, d), hi = std::max(hi, d);
  return LowestCommonDomain(lo, hi);
}

DomainId Topology::AncestorAt(DomainId d, Level l) const {
  for (DomainId x = d; x != kNoDomain; x = parent(x)) {
    if (level(x) == l) return x;
    if (LevelIndex(level(x)) > LevelIndex(l)) return kNoDomain;
  }
  return kNoDomain;
}

int Topology::Rail(DomainId gpu) const {
  const DomainId g = rail_group_[static_cast<size_t>(gpu)];
  if (g == kNoDomain) return -1;
  return domain(gpu).local_index % domain(g).rails;
}

double Topology::OversubscriptionBelow(DomainId d, DomainId top) const {
  double worst = 1;
  for (DomainId x = d; x != kNoDomain && x != top; x = parent(x)) worst = std::max(worst, domain(x).link.oversubscription);
  return worst;
}

PathLink Topology::Between(DomainId a, DomainId b) const {
  PathLink p;
  if (a == b) {
    p.common = a;
    return p;
  }
  p.common = LowestCommonDomain(a, b);
  const Domain& c = domain(p.common);
  const double over = std::max(OversubscriptionBelow(a, p.common), OversubscriptionBelow(b, p.common));
  p.gbps = c.link.gbps / over;
  p.latency_us = c.link.latency_us;
  p.hops = c.link.hops;
  const DomainId ga = rail_group_[static_cast<size_t>(a)], gb = rail_group_[static_cast<size_t>(b)];
  if (ga != kNoDomain && ga == gb && p.common == ga && Rail(a) != Rail(b)) {
    // Different rails in one rail group: an NVLink hop to the GPU on the peer's rail first (PXN).
    p.hops += 1;
    const DomainId nv = NvlinkDomain(a);
    p.latency_us += nv != a ? domain(nv).link.latency_us : c.link.latency_us;
  }
  return p;
}

void Topology::Index() {
  const size_t n = domains_.size();
  depth_.assign(n, 0);
  child_begin_.assign(n + 1, 0);
  subtree_end_.assign(n, 0);
  children_.clear();
  // Children: parents precede children in pre-order; count, then fill.
  std::vector<int32_t> count(n, 0);
  for (size_t d = 1; d < n; ++d) ++count[static_cast<size_t>(domains_[d].parent)];
  for (size_t d = 0; d < n; ++d) child_begin_[d + 1] = child_begin_[d] + count[d];
  children_.resize(static_cast<size_t>(child_begin_[n]));
  std::vector<int32_t> fill(child_begin_.begin(), child_begin_.end() - 1);
  for (size_t d = 1; d < n; ++d) {
    const auto p = static_cast<size_t>(domains_[d].parent);
    children_[static_cast<size_t>(fill[p]++)] = static_cast<DomainId>(d);
    depth_[d] = depth_[p] + 1;
  }
  for (size_t d = n; d-- > 0;) {
    subtree_end_[d] = static_cast<int32_t>(d) + 1;
    const auto kids = children(static_cast<DomainId>(d));
    if (!kids.empty()) subtree_end_[d] = subtree_end_[static_cast<size_t>(kids.back())];
  }
  hosts_.clear();
  host_index_.assign(n, -1);
  host_of_.assign(n, -1);
  for (size_t d = 0; d < n; ++d) {
    if (domains_[d].level == Level::kNode) {
      host_index_[d] = static_cast<int32_t>(hosts_.size());
      hosts_.push_back(static_cast<DomainId>(d));
    }
  }
  host_gpus_.assign(hosts_.size(), 0);
  host_gpu_begin_.assign(hosts_.size(), 0);
  gpu_ids_.clear();
  host_by_name_.clear();
  for (size_t h = 0; h < hosts_.size(); ++h) {
    const DomainId hd = hosts_[h];
    host_by_name_.emplace(domains_[static_cast<size_t>(hd)].name, static_cast<int32_t>(h));
    std::vector<DomainId> gpus;
    for (DomainId d = hd; d < subtree_end(hd); ++d) {
      host_of_[static_cast<size_t>(d)] = static_cast<int32_t>(h);
      if (domains_[static_cast<size_t>(d)].level == Level::kGpu) gpus.push_back(d);
    }
    std::sort(gpus.begin(), gpus.end(),
              [&](DomainId x, DomainId y) { return domain(x).local_index < domain(y).local_index; });
    host_gpu_begin_[h] = static_cast<int32_t>(gpu_ids_.size());
    host_gpus_[h] = static_cast<int32_t>(gpus.size());
    gpu_ids_.insert(gpu_ids_.end(), gpus.begin(), gpus.end());
  }
  gpus_under_.assign(n, 0);
  hosts_under_.assign(n, 0);
  first_host_.assign(n, 0);
  for (size_t d = n; d-- > 0;) {
    if (domains_[d].level == Level::kGpu) gpus_under_[d] = 1;
    if (domains_[d].level == Level::kNode) hosts_under_[d] = 1;
    if (d > 0) {
      const auto p = static_cast<size_t>(domains_[d].parent);
      gpus_under_[p] += gpus_under_[d];
      hosts_under_[p] += hosts_under_[d];
    }
  }
  // First host at or after d in pre-order (hosts under d are contiguous).
  int32_t next_host = static_cast<int32_t>(hosts_.size());
  for (size_t d = n; d-- > 0;) {
    if (domains_[d].level == Level::kNode) next_host = host_index_[d];
    first_host_[d] = next_host;
  }
  nvlink_domain_.assign(n, kNoDomain);
  rail_group_.assign(n, kNoDomain);
  for (size_t d = 0; d < n; ++d) {
    if (domains_[d].level != Level::kGpu) continue;
    DomainId top = static_cast<DomainId>(d);
    for (DomainId x = parent(top); x != kNoDomain && domain(x).nvlink; x = parent(x)) top = x;
    nvlink_domain_[d] = top;
    for (DomainId x = parent(static_cast<DomainId>(d)); x != kNoDomain; x = parent(x)) {
      if (domain(x).rails > 0) {
        rail_group_[d] = x;
        break;
      }
    }
  }
  by_level_.assign(kNumLevels, {});
  for (size_t d = 0; d < n; ++d) by_level_[static_cast<size_t>(LevelIndex(domains_[d].level))].push_back(static_cast<DomainId>(d));
  levels_.clear();
  for (Level l : kAllLevels)
    if (!by_level_[static_cast<size_t>(LevelIndex(l))].empty()) levels_.push_back(l);
}

}  // namespace tidal::topo
