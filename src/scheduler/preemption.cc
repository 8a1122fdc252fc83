#include "scheduler/preemption.h"

#include <algorithm>
#include <unordered_map>

#include "framework/gang.h"

namespace tidal {
namespace {

bool Allowed(const ClusterState& c, const PodRequest& pod, NodeId n) {
  return c.gpu_count(n) > 0 && pod.gpu_spec.Allows(c.gpu_model(n));
}

// Devices of node n this request could use now (whole free GPUs, or devices
// with enough free milli-GPU for a sharing job).
int32_t UsableFree(const ClusterState& c, const PodRequest& pod, NodeId n) {
  if (!Allowed(c, pod, n)) return 0;
  if (pod.gpu_milli() >= kMilliPerGpu) return c.free_whole_gpus(n);
  int32_t k = 0;
  for (int32_t f : c.gpu_free(n)) k += f >= pod.gpu_milli();
  return k;
}

const Placement* PlacementOf(const ClusterState& c, const VictimCandidate& v) {
  return v.placement != nullptr ? v.placement : c.FindAllocation(v.job->id);
}

}  // namespace

bool OnCordonedNode(const ClusterState& c, const Placement& p) {
  if (c.num_cordoned() == 0) return false;
  for (const NodeAssignment& a : p.assignments)
    if (c.cordoned(a.node)) return true;
  return false;
}

PreemptionScope ScopeFor(const ClusterState& c, const PodRequest& pod) {
  PreemptionScope s;
  if (pod.num_gpu() <= gang::LargestNodeGpus(c)) return s;
  s.host_level = false;
  if (!c.has_topology()) return s;
  const topo::Topology& t = c.topology();
  s.level = t.level(t.root());
  for (topo::Level l : t.levels()) {
    if (topo::LevelIndex(l) <= topo::LevelIndex(topo::Level::kNode)) continue;
    int32_t most = 0;
    for (topo::DomainId d : t.domains_at(l)) most = std::max(most, t.gpus_under(d));
    if (most >= pod.num_gpu()) {
      s.level = l;
      break;
    }
  }
  return s;
}

namespace {

using Admissible = std::function<bool(const VictimCandidate&, std::span<const size_t> chosen)>;

// Keeps the cheaper of `best` and the plan of `victims` in domain d (fewer
// victims at equal cost); a plan is built only when it wins.
void Consider(std::optional<PreemptionPlan>& best, int64_t d, std::span<const size_t> victims,
              std::span<const VictimCandidate> candidates) {
  int64_t cost = 0;
  for (size_t i : victims) cost += candidates[i].cost;
  if (!best || cost < best->cost || (cost == best->cost && victims.size() < best->victims.size())) {
    best = PreemptionPlan{.domain = d, .victims = {victims.begin(), victims.end()}, .cost = cost};
  }
}

// What a candidate frees in a domain (a host, or a topology domain): one
// flat vector, grouped by domain by PlanInDomains, no per-domain containers
// (a search may see 20k candidates).
struct Freed {
  int64_t domain;
  size_t cand;
  int32_t k;  // devices it frees there for the preemptor
};

// Per domain: victims by cost per GPU freed there, admissible against those
// chosen before, until need(domain) GPUs; then pruned, dearest first. Also
// every victim that frees enough alone. The cheapest plan over the domains.
std::optional<PreemptionPlan> PlanInDomains(std::vector<Freed>& all, std::span<const VictimCandidate> candidates,
                                            const Admissible& admissible, const std::function<int64_t(int64_t)>& need_in) {
  // By domain, then cost per GPU freed, ascending: a.cost / a.k < b.cost / b.k.
  std::sort(all.begin(), all.end(), [&](const Freed& a, const Freed& b) {
    if (a.domain != b.domain) return a.domain < b.domain;
    const int64_t l = candidates[a.cand].cost * b.k;  // costs < 2^40, k <= 2^10
    const int64_t r = candidates[b.cand].cost * a.k;
    return l != r ? l < r : a.cand < b.cand;
  });
  std::optional<PreemptionPlan> best;
  // Scratch reused over the domains (a search on hosts reads hundreds).
  std::vector<std::pair<size_t, int32_t>> list;
  std::vector<size_t> victims, order, kept;
  std::vector<int32_t> gave;
  std::vector<uint8_t> keep;
  for (size_t g = 0; g < all.size();) {
    const int64_t d = all[g].domain;
    list.clear();
    for (; g < all.size() && all[g].domain == d; ++g) list.push_back({all[g].cand, all[g].k});
    const int64_t need = need_in(d);
    if (need <= 0) continue;  // room is there already; preemption would not help
    // A lower bound: every victim here together frees too little.
    int64_t most = 0;
    for (const auto& [i, k] : list) most += k;
    if (most < need) continue;
    // One victim that frees enough on its own (the greedy pass can miss it
    // when an earlier, cheaper pick makes it inadmissible).
    for (const auto& [i, k] : list) {
      if (k >= need && admissible(candidates[i], {})) Consider(best, d, std::span(&i, 1), candidates);
    }
    victims.clear();
    gave.clear();
    int64_t got = 0;
    for (const auto& [i, k] : list) {
      if (got >= need) break;
      if (!admissible(candidates[i], victims)) continue;
      victims.push_back(i);
      gave.push_back(k);
      got += k;
    }
    if (got < need) continue;
    // Prune: drop victims not needed, dearest first. (Dropping one only
    // leaves its tenant with more, so the others stay admissible.)
    order.resize(victims.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return candidates[victims[a]].cost > candidates[victims[b]].cost; });
    keep.assign(order.size(), 1);
    for (size_t k : order) {
      if (got - gave[k] >= need) {
        keep[k] = 0;
        got -= gave[k];
      }
    }
    kept.clear();
    for (size_t k = 0; k < keep.size(); ++k)
      if (keep[k]) kept.push_back(victims[k]);
    Consider(best, d, kept, candidates);
  }
  return best;
}

// The domain of `level` that holds node n, as a PreemptionPlan::domain (the
// whole cluster without a level or a topology).
int64_t DomainOf(const ClusterState& c, std::optional<topo::Level> level, NodeId n) {
  if (!level || !c.has_topology()) return kWholeCluster;
  const topo::DomainId d = c.topology().AncestorAt(c.topology().host(c.host_of(n)), *level);
  return d == topo::kNoDomain ? kWholeCluster : PlanDomain(*level, d);
}

// One host: victims by cost per GPU freed there, pruned; or one victim alone.
std::optional<PreemptionPlan> PlanOnHosts(const ClusterState& c, const PodRequest& pod,
                                          std::span<const VictimCandidate> candidates, const Admissible& admissible,
                                          std::optional<int64_t> committed) {
  // (A cordoned host never shows up: its jobs are not victims below.)
  auto node_ok = [&](NodeId n) { return Allowed(c, pod, n) && c.gpu_count(n) >= pod.num_gpu(); };
  std::vector<Freed> all;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Placement* p = PlacementOf(c, candidates[i]);
    if (p == nullptr || OnCordonedNode(c, *p)) continue;
    for (const NodeAssignment& a : p->assignments) {
      if (committed && a.node != *committed) continue;
      if (!node_ok(a.node)) continue;
      const auto free = c.gpu_free(a.node);
      int32_t k = 0;
      for (size_t g = 0; g < a.gpus.size(); ++g) {
        const int32_t after = free[static_cast<size_t>(a.gpus[g])] + a.gpu_milli[g];
        k += pod.gpu_milli() >= kMilliPerGpu ? after == kMilliPerGpu : after >= pod.gpu_milli();
      }
      if (k > 0) all.push_back({a.node, i, k});
    }
  }
  return PlanInDomains(all, candidates, admissible, [&](int64_t d) { return pod.num_gpu() - UsableFree(c, pod, static_cast<NodeId>(d)); });
}

// What emptying each host of allowed model would take: whether only
// candidates hold its busy GPUs, which candidates and at what cost.
struct HostInfo {
  NodeId node = -1;
  int64_t cost = 0;
  std::span<const size_t> victims;  // sorted, unique (in Emptiable::victims)
};

struct Emptiable {
  std::vector<size_t> victims;  // every host's, host after host
  std::vector<HostInfo> hosts;
};

Emptiable EmptiableHosts(const ClusterState& c, const PodRequest& pod, std::span<const VictimCandidate> candidates) {
  std::vector<std::pair<NodeId, size_t>> held;  // (node, candidate) per assignment
  std::vector<int32_t> gpus_held(static_cast<size_t>(c.num_nodes()), 0);
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Placement* p = PlacementOf(c, candidates[i]);
    // Not a victim: its GPUs stay busy, so hosts it shares are not emptiable.
    if (p == nullptr || OnCordonedNode(c, *p)) continue;
    for (const NodeAssignment& a : p->assignments) {
      held.push_back({a.node, i});
      gpus_held[static_cast<size_t>(a.node)] += static_cast<int32_t>(a.gpus.size());
    }
  }
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  Emptiable out;
  out.victims.reserve(held.size());
  std::vector<std::pair<size_t, size_t>> spans;  // per host in out.hosts: [begin, end) in out.victims
  size_t h = 0;
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    HostInfo info{.node = n};
    const size_t begin = out.victims.size();
    for (; h < held.size() && held[h].first == n; ++h) {
      out.victims.push_back(held[h].second);
      info.cost += candidates[held[h].second].cost;
    }
    // Others' jobs stay. (A cordoned host never passes: its GPUs read busy
    // and none of its jobs is a victim.)
    if (!Allowed(c, pod, n) || c.free_whole_gpus(n) + gpus_held[static_cast<size_t>(n)] < c.gpu_count(n)) {
      out.victims.resize(begin);
      continue;
    }
    out.hosts.push_back(info);
    spans.push_back({begin, out.victims.size()});
  }
  // Spans into victims once it no longer grows.
  for (size_t i = 0; i < out.hosts.size(); ++i)
    out.hosts[i].victims = std::span<const size_t>(out.victims).subspan(spans[i].first, spans[i].second - spans[i].first);
  return out;
}

// A gang over several hosts: whole hosts under one domain of `level` (the
// whole cluster when `level` is null), the cheapest to empty first.
std::optional<PreemptionPlan> PlanWholeHosts(const ClusterState& c, const PodRequest& pod,
                                             std::span<const VictimCandidate> candidates, const Admissible& admissible,
                                             std::optional<int64_t> committed, std::optional<topo::Level> level,
                                             const std::vector<HostInfo>& hosts) {
  auto domain_of = [&](NodeId n) { return DomainOf(c, level, n); };
  // Hosts by domain, each domain's cheapest first.
  std::vector<std::pair<int64_t, const HostInfo*>> by;
  by.reserve(hosts.size());
  for (const HostInfo& h : hosts) {
    const int64_t d = domain_of(h.node);
    if (!committed || d == *committed) by.push_back({d, &h});
  }
  std::sort(by.begin(), by.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return a.second->cost != b.second->cost ? a.second->cost < b.second->cost : a.second->node < b.second->node;
  });
  std::optional<PreemptionPlan> best;
  std::vector<uint8_t> chosen(candidates.size(), 0);
  std::vector<size_t> host_victims;
  for (size_t g = 0; g < by.size();) {
    const int64_t d = by[g].first;
    size_t end = g;
    int64_t room = 0;
    for (; end < by.size() && by[end].first == d; ++end) room += c.gpu_count(by[end].second->node);
    if (room < pod.num_gpu()) {
      g = end;
      continue;
    }
    PreemptionPlan plan{.domain = d};
    int64_t got = 0;
    for (; g < end && got < pod.num_gpu(); ++g) {
      const HostInfo& h = *by[g].second;
      const size_t before = plan.victims.size();
      bool ok = true;
      // Smallest first: under a rule like "its tenant still borrows before
      // it" the binding check is the tenant's last victim, which sees the
      // most usage left when it is the largest (the queue's own order made
      // a valid reclaim fail: TenantQueue.ReclaimTakesAHostsSmallVictimsFirst).
      host_victims.assign(h.victims.begin(), h.victims.end());
      std::stable_sort(host_victims.begin(), host_victims.end(), [&](size_t a, size_t b) {
        return candidates[a].job->TotalGpuMilli() < candidates[b].job->TotalGpuMilli();
      });
      for (size_t i : host_victims) {
        if (chosen[i]) continue;
        if (!admissible(candidates[i], plan.victims)) {
          ok = false;
          break;
        }
        plan.victims.push_back(i);
        chosen[i] = 1;
      }
      if (!ok) {  // undo this host's picks
        for (size_t k = before; k < plan.victims.size(); ++k) chosen[plan.victims[k]] = 0;
        plan.victims.resize(before);
        continue;
      }
      got += c.gpu_count(h.node);
    }
    for (size_t i : plan.victims) chosen[i] = 0;
    g = end;
    if (got < pod.num_gpu() || plan.victims.empty()) continue;
    Consider(best, plan.domain, plan.victims, candidates);
  }
  return best;
}

// A gang over several hosts when no set of whole hosts can be emptied for
// it (a host it needs holds a job that is no victim): GPUs anywhere under
// one domain of `level` (the whole cluster when `level` is null), victims
// by cost per GPU they free there, then pruned as on one host. The gang
// placer decides on the what-if whether the room is usable.
std::optional<PreemptionPlan> PlanFreeGpus(const ClusterState& c, const PodRequest& pod,
                                           std::span<const VictimCandidate> candidates, const Admissible& admissible,
                                           std::optional<int64_t> committed, std::optional<topo::Level> level) {
  // Each node's domain, read once (kUnusable: the request cannot use it).
  constexpr int64_t kUnusable = -1;  // neither kWholeCluster nor a PlanDomain
  std::vector<int64_t> node_domain(static_cast<size_t>(c.num_nodes()), kUnusable);
  std::unordered_map<int64_t, int64_t> free;  // domain -> usable free GPUs now
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    if (!Allowed(c, pod, n)) continue;
    const int64_t d = DomainOf(c, level, n);
    node_domain[static_cast<size_t>(n)] = d;
    if (!committed || d == *committed) free[d] += c.free_whole_gpus(n);
  }
  std::vector<Freed> all;
  for (size_t i = 0; i < candidates.size(); ++i) {
    const Placement* p = PlacementOf(c, candidates[i]);
    if (p == nullptr || OnCordonedNode(c, *p)) continue;
    // GPUs it frees per domain: a placement spans few domains, so entries
    // of this candidate are found by a scan from `from`.
    const size_t from = all.size();
    for (const NodeAssignment& a : p->assignments) {
      const int64_t d = node_domain[static_cast<size_t>(a.node)];
      if (d == kUnusable || (committed && d != *committed)) continue;
      const auto f = c.gpu_free(a.node);
      int32_t k = 0;
      for (size_t g = 0; g < a.gpus.size(); ++g) k += f[static_cast<size_t>(a.gpus[g])] + a.gpu_milli[g] == kMilliPerGpu;
      auto it = std::find_if(all.begin() + static_cast<std::ptrdiff_t>(from), all.end(),
                             [&](const Freed& x) { return x.domain == d; });
      if (it == all.end()) all.push_back({d, i, k});
      else it->k += k;
    }
    // (PlanInDomains sorts them; only those that free some GPU count.)
    all.erase(std::remove_if(all.begin() + static_cast<std::ptrdiff_t>(from), all.end(),
                             [](const Freed& x) { return x.k <= 0; }),
              all.end());
  }
  return PlanInDomains(all, candidates, admissible, [&](int64_t d) {
    const auto it = free.find(d);
    return pod.num_gpu() - (it == free.end() ? 0 : it->second);
  });
}

}  // namespace

std::optional<PreemptionPlan> PlanPreemption(const ClusterState& c, const PodRequest& pod,
                                             std::span<const VictimCandidate> candidates, const Admissible& admissible,
                                             std::optional<int64_t> committed) {
  const PreemptionScope scope = ScopeFor(c, pod);
  const std::optional<int64_t> first_choice = committed;
  if (scope.host_level) {
    auto plan = PlanOnHosts(c, pod, candidates, admissible, committed);
    if (plan || pod.job->single_node || pod.gpu_milli() < kMilliPerGpu) return plan;
    committed.reset();  // a gang that fits on a host but found no host: whole hosts under a switch
  }
  if (pod.gpu_milli() < kMilliPerGpu) return std::nullopt;
  const Emptiable emptiable = EmptiableHosts(c, pod, candidates);
  const std::vector<HostInfo>& hosts = emptiable.hosts;
  // The smallest level that can hold it first, then wider ones: a gang whose
  // floor is held across two leaves still gets it back.
  if (c.has_topology()) {
    const int from = topo::LevelIndex(scope.host_level ? topo::Level::kNode : scope.level);
    for (topo::Level l : c.topology().levels()) {
      if (topo::LevelIndex(l) <= topo::LevelIndex(topo::Level::kNode) || topo::LevelIndex(l) < from) continue;
      auto plan = PlanWholeHosts(c, pod, candidates, admissible, committed, l, hosts);
      if (plan) return plan;
      committed.reset();
    }
  }
  auto plan = PlanWholeHosts(c, pod, candidates, admissible, committed, std::nullopt, hosts);
  if (plan) return plan;
  // No whole hosts to be had: GPUs anywhere, but only inside a domain of the
  // smallest level that can hold it (the whole cluster without a topology):
  // a gang spread over wider domains runs too slowly to be worth victims.
  // The committed domain first.
  std::optional<topo::Level> level;
  if (c.has_topology()) {
    const int from = topo::LevelIndex(scope.host_level ? topo::Level::kNode : scope.level);
    for (topo::Level l : c.topology().levels()) {
      if (topo::LevelIndex(l) <= topo::LevelIndex(topo::Level::kNode) || topo::LevelIndex(l) < from) continue;
      level = l;
      break;
    }
  }
  if (first_choice) {
    if (auto p = PlanFreeGpus(c, pod, candidates, admissible, first_choice, level)) return p;
  }
  return PlanFreeGpus(c, pod, candidates, admissible, std::nullopt, level);
}

}  // namespace tidal
