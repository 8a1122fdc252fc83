#include "plugins/kueue_tas/kueue_tas.h"

#include <algorithm>
#include <unordered_map>

#include "framework/gang.h"

namespace tidal::plugins {
namespace {

using topo::DomainId;
using topo::Level;

}  // namespace

std::optional<Placement> KueueTasPlace::PlaceGang(const CycleContext& ctx, const PodRequest& pod) {
  const ClusterState& c = ctx.cluster;
  const int32_t n = pod.num_gpu();
  if (n <= 0 || pod.gpu_milli() != kMilliPerGpu || !c.has_topology()) return std::nullopt;
  const topo::Topology& t = c.topology();
  const Job& job = *pod.job;

  // The pod set a training operator creates: one pod if the job fits on a
  // host, else the fewest pods of at most the largest host's GPUs, all the
  // same size (a 12-GPU job on 8-GPU hosts: 2 pods of 6). Capacity counts
  // such pods per host, summed up the tree.
  const int32_t largest = gang::LargestNodeGpus(c);
  if (largest == 0) return std::nullopt;
  const int32_t npods = n <= largest ? 1 : (n + largest - 1) / largest;
  const int32_t per = (n + npods - 1) / npods;  // GPUs per pod (the last may be short)
  std::unordered_map<DomainId, int32_t> cap;
  for (int32_t h = 0; h < t.num_hosts(); ++h) {
    const NodeId node = c.node_of_host(h);
    if (c.gpu_count(node) == 0 || !pod.gpu_spec.Allows(c.gpu_model(node))) continue;
    int32_t pods = c.free_whole_gpus(node) / per;
    while (pods > 0 && !gang::ShareFits(c, pod, node, std::min(n, pods * per))) --pods;
    if (pods <= 0) continue;
    for (DomainId d = t.host(h); d != topo::kNoDomain; d = t.parent(d)) cap[d] += pods;
  }
  auto capacity = [&](DomainId d) {
    auto it = cap.find(d);
    return it == cap.end() ? 0 : it->second;
  };
  // Kueue's comparator for BestFit: capacity descending, then by name
  // (levelValues); names ranked once per topology.
  if (name_rank_topology_ != c.topology_ptr()) {
    std::vector<DomainId> all(static_cast<size_t>(t.num_domains()));
    for (DomainId d = 0; d < t.num_domains(); ++d) all[static_cast<size_t>(d)] = d;
    std::vector<std::string> names(all.size());
    for (DomainId d : all) names[static_cast<size_t>(d)] = t.DomainName(d);
    std::sort(all.begin(), all.end(), [&](DomainId a, DomainId b) { return names[static_cast<size_t>(a)] < names[static_cast<size_t>(b)]; });
    name_rank_.assign(all.size(), 0);
    for (size_t i = 0; i < all.size(); ++i) name_rank_[static_cast<size_t>(all[i])] = static_cast<int32_t>(i);
    name_rank_topology_ = c.topology_ptr();
  }
  auto sorted = [&](std::vector<DomainId> ds) {
    std::vector<std::pair<int32_t, DomainId>> keyed;
    keyed.reserve(ds.size());
    for (DomainId d : ds) keyed.push_back({capacity(d), d});
    std::sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first > b.first;
      return name_rank_[static_cast<size_t>(a.second)] < name_rank_[static_cast<size_t>(b.second)];
    });
    for (size_t i = 0; i < ds.size(); ++i) ds[i] = keyed[i].second;
    return ds;
  };
  // Levels Kueue sees: those above the host, outermost first, then hostname.
  std::vector<Level> levels;
  for (Level l : t.levels())
    if (topo::LevelIndex(l) >= topo::LevelIndex(Level::kNode)) levels.push_back(l);
  std::reverse(levels.begin(), levels.end());  // outermost first; hostname last
  bool required = false;
  Level want = Level::kNode;
  if (job.single_node) {
    required = true;
    want = Level::kNode;
  } else if (job.topo_required) {
    required = true;
    want = *job.topo_required;
  } else if (job.topo_preferred) {
    want = *job.topo_preferred;
  } else {
    // As a careful user annotates a training job: required
    // kubernetes.io/hostname when it fits on one host (as Slurm users ask
    // -N1), else preferred at the lowest level above the host.
    if (n <= largest || levels.size() < 2) {
      required = true;
      want = Level::kNode;
    } else {
      want = levels[levels.size() - 2];
    }
  }
  // The requested level index (outermost = 0); a level the topology lacks: the next one out.
  int idx = -1;
  for (int i = static_cast<int>(levels.size()) - 1; i >= 0; --i) {
    if (topo::LevelIndex(levels[static_cast<size_t>(i)]) >= topo::LevelIndex(want)) {
      idx = i;
      break;
    }
  }
  if (idx < 0) idx = 0;
  std::vector<DomainId> selected;
  for (int level = idx; level >= 0; --level) {
    std::vector<DomainId> ds(t.domains_at(levels[static_cast<size_t>(level)]).begin(),
                             t.domains_at(levels[static_cast<size_t>(level)]).end());
    ds = sorted(std::move(ds));
    if (!ds.empty() && capacity(ds.front()) >= npods) {
      DomainId best = ds.front();
      for (DomainId d : ds)
        if (capacity(d) >= npods && capacity(d) < capacity(best)) best = d;
      selected = {best};
      break;
    }
    if (required) return std::nullopt;
    if (level == 0) {
      // Top level: several domains, greedily; the last one best-fit among the rest.
      int32_t rem = npods;
      for (size_t i = 0; i < ds.size() && rem > 0; ++i) {
        DomainId fin = topo::kNoDomain;
        for (size_t j = i; j < ds.size(); ++j)
          if (capacity(ds[j]) >= rem && (fin == topo::kNoDomain || capacity(ds[j]) < capacity(fin))) fin = ds[j];
        if (fin != topo::kNoDomain) {
          selected.push_back(fin);
          rem = 0;
          break;
        }
        if (capacity(ds[i]) <= 0) break;
        selected.push_back(ds[i]);
        rem -= capacity(ds[i]);
      }
      if (rem > 0) return std::nullopt;
    }
  }
  if (selected.empty()) return std::nullopt;
  // Downwards: the children of every selected domain in one pool, sorted,
  // taken greedily, finishing with the tightest child that completes it.
  std::vector<std::pair<DomainId, int32_t>> take;  // host, GPUs
  {
    std::vector<DomainId> cur = selected;
    auto all_hosts = [&] {
      return std::all_of(cur.begin(), cur.end(), [&](DomainId d) { return t.level(d) == Level::kNode; });
    };
    while (!cur.empty() && !all_hosts()) {
      // A host beside switches (mixed depths) stays in the pool as it is.
      std::vector<DomainId> pool;
      for (DomainId d : cur) {
        if (t.level(d) == Level::kNode) {
          pool.push_back(d);
          continue;
        }
        for (DomainId k : t.children(d))
          if (capacity(k) > 0) pool.push_back(k);
      }
      pool = sorted(std::move(pool));
      std::vector<DomainId> next;
      int32_t r = npods;
      for (size_t i = 0; i < pool.size() && r > 0; ++i) {
        DomainId fin = topo::kNoDomain;
        for (size_t j = i; j < pool.size(); ++j)
          if (capacity(pool[j]) >= r && (fin == topo::kNoDomain || capacity(pool[j]) < capacity(fin))) fin = pool[j];
        if (fin != topo::kNoDomain) {
          next.push_back(fin);
          r = 0;
          break;
        }
        next.push_back(pool[i]);
        r -= capacity(pool[i]);
      }
      if (r > 0) return std::nullopt;
      cur = std::move(next);
    }
    int32_t r = npods, gpus_left = n;
    for (DomainId h : cur) {
      const int32_t k = std::min(r, capacity(h));
      if (k <= 0) continue;
      const int32_t g = std::min(gpus_left, k * per);
      take.push_back({h, g});
      r -= k;
      gpus_left -= g;
    }
    if (r > 0 || gpus_left != 0) return std::nullopt;
  }
  std::vector<gang::Piece> pieces;
  for (const auto& [host, gpus] : take) {
    const NodeId node = c.node_of_host(t.host_index(host));
    auto devs = gang::PickDevices(c, node, gpus);
    if (devs.empty()) return std::nullopt;
    pieces.push_back({node, std::move(devs)});
  }
  return gang::Assemble(c, pod, pieces);
}

}  // namespace tidal::plugins
