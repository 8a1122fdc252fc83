#include "plugins/topo/topo_place.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace tidal::plugins {
namespace {

using topo::DomainId;
using topo::Level;

bool IsHost(const topo::Topology& t, DomainId d) { return t.level(d) == Level::kNode; }

// A lower bound on the hosts `want` GPUs take inside d (from its largest free host).
int32_t HostsNeeded(const ClusterState& c, const topo::Topology& t, DomainId d, int32_t want) {
  if (IsHost(t, d)) return 1;
  const int32_t m = std::max(1, c.domain_max_host_free(d));
  return (want + m - 1) / m;
}

}  // namespace

bool TopoPlace::ModelOk(const ClusterState& c, const PodRequest& pod, DomainId d) const {
  const GpuModelId m = c.domain_model(d);
  if (m == kNoGpuModel) return false;
  return m == kMixedGpuModels || pod.gpu_spec.Allows(m);
}

NodeId TopoPlace::OneHost(const CycleContext& ctx, const PodRequest& pod, DomainId d, int32_t tp) const {
  const ClusterState& c = ctx.cluster;
  const int32_t n = pod.num_gpu();
  // Largest hosts first, tightest there (per-size free-host histograms say
  // which free counts exist and where, so there is no scan). While the queue
  // backfills, hosts its reservation counts on come last.
  for (const bool avoid : {true, false}) {
    if (avoid && ctx.reserved_nodes.empty()) continue;
    for (int32_t cls = 0; cls < c.num_host_sizes(); ++cls) {
      const int32_t size = c.host_size(cls);
      if (size < n) break;
      for (int32_t k = n; k <= std::min(size, ClusterState::kFreeHistogram - 1); ++k) {
        if (c.domain_hosts_with_free(d, cls, k) == 0) continue;
        if (NodeId r = Descend(ctx, pod, d, tp, cls, k, avoid); r >= 0) return r;
      }
    }
  }
  return -1;
}

NodeId TopoPlace::Descend(const CycleContext& ctx, const PodRequest& pod, DomainId d, int32_t tp, int32_t cls, int32_t k,
                          bool avoid) const {
  const ClusterState& c = ctx.cluster;
  const topo::Topology& t = c.topology();
  const int32_t n = pod.num_gpu();
  if (IsHost(t, d)) {
    const NodeId node = c.node_of_host(t.host_index(d));
    const int32_t free = c.free_whole_gpus(node);
    const bool last_bucket = k == ClusterState::kFreeHistogram - 1;
    if (c.gpu_count(node) != c.host_size(cls) || (last_bucket ? free < k : free != k)) return -1;
    if (!gang::NodeCanTake(c, pod, node, n) || gang::UsableGpus(c, node, tp) < n) return -1;
    if (avoid && static_cast<size_t>(node) < ctx.reserved_nodes.size() && ctx.reserved_nodes[static_cast<size_t>(node)]) return -1;
    return node;
  }
  // Domains holding such a host, the most allocated first (small jobs fill
  // broken domains; whole ones stay whole for gangs); hosts in order.
  struct Kid {
    int32_t key;
    DomainId d;
  };
  Kid kids[256];
  std::vector<Kid> many;
  size_t count = 0;
  for (DomainId x : t.children(d)) {
    if (c.domain_hosts_with_free(x, cls, k) == 0 || !ModelOk(c, pod, x)) continue;
    const Kid kid{IsHost(t, x) ? 0 : c.domain_free_gpus(x), x};
    if (count < 256) kids[count++] = kid;
    else many.push_back(kid);
  }
  auto less = [](const Kid& a, const Kid& b) { return a.key != b.key ? a.key < b.key : a.d < b.d; };
  if (!many.empty()) {
    many.insert(many.end(), kids, kids + count);
    std::sort(many.begin(), many.end(), less);
    for (const Kid& x : many)
      if (NodeId r = Descend(ctx, pod, x.d, tp, cls, k, avoid); r >= 0) return r;
    return -1;
  }
  std::sort(kids, kids + count, less);
  for (size_t i = 0; i < count; ++i)
    if (NodeId r = Descend(ctx, pod, kids[i].d, tp, cls, k, avoid); r >= 0) return r;
  return -1;
}

int32_t TopoPlace::Fill(const CycleContext& ctx, const PodRequest& pod, DomainId d, int32_t want, int32_t tp,
                        std::vector<gang::Piece>& pieces) const {
  const ClusterState& c = ctx.cluster;
  const topo::Topology& t = c.topology();
  if (want <= 0) return 0;
  if (IsHost(t, d)) {
    const NodeId node = c.node_of_host(t.host_index(d));
    if (c.gpu_count(node) == 0 || !pod.gpu_spec.Allows(c.gpu_model(node))) return 0;
    int32_t take = std::min(want, gang::UsableGpus(c, node, tp));
    while (take > 0 && !gang::ShareFits(c, pod, node, take)) --take;
    if (take <= 0) return 0;
    // Same local indices as the previous host of this gang: shared rails.
    std::span<const int32_t> prefer;
    if (!pieces.empty()) prefer = pieces.back().devices;
    auto devs = gang::PickDevices(c, node, take, tp, prefer);
    if (devs.empty()) return 0;
    pieces.push_back({node, std::move(devs)});
    return take;
  }
  auto cap = [&](DomainId k) {
    if (!IsHost(t, k)) return c.domain_free_gpus(k);
    const NodeId node = c.node_of_host(t.host_index(k));
    return pod.gpu_spec.Allows(c.gpu_model(node)) ? gang::UsableGpus(c, node, tp) : 0;
  };
  std::vector<std::pair<int32_t, DomainId>> kids;
  for (DomainId k : t.children(d)) {
    if (!ModelOk(c, pod, k)) continue;
    const int32_t f = cap(k);
    if (f > 0) kids.push_back({f, k});
  }
  // One child holds it all: the one needing the fewest hosts (its largest
  // free host decides), then the tightest.
  const size_t mark = pieces.size();
  {
    DomainId best = topo::kNoDomain;
    int64_t best_key = std::numeric_limits<int64_t>::max();
    for (const auto& [f, k] : kids) {
      if (f < want) continue;
      const int64_t key = int64_t{HostsNeeded(c, t, k, want)} << 32 | f;
      if (key < best_key) best = k, best_key = key;
    }
    if (best != topo::kNoDomain) {
      if (Fill(ctx, pod, best, want, tp, pieces) == want) return want;
      pieces.resize(mark);
    }
  }
  // Spread: largest children first, whole hosts before broken ones.
  std::stable_sort(kids.begin(), kids.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  int32_t got = 0;
  for (size_t i = 0; i < kids.size() && got < want; ++i) {
    const int32_t need = want - got;
    // The rest fits in one of the remaining children: take the tightest of them.
    DomainId last = topo::kNoDomain;
    int32_t last_f = std::numeric_limits<int32_t>::max();
    for (size_t j = i; j < kids.size(); ++j)
      if (kids[j].first >= need && kids[j].first < last_f) last = kids[j].second, last_f = kids[j].first;
    if (last != topo::kNoDomain) {
      const size_t m2 = pieces.size();
      if (Fill(ctx, pod, last, need, tp, pieces) == need) return want;
      pieces.resize(m2);
    }
    got += Fill(ctx, pod, kids[i].second, std::min(need, kids[i].first), tp, pieces);
  }
  return got;
}

std::optional<Placement> TopoPlace::Flat(const CycleContext& ctx, const PodRequest& pod) const {
  // No topology: best-fit host, else most-free hosts first.
  const ClusterState& c = ctx.cluster;
  const int32_t n = pod.num_gpu();
  NodeId best = -1;
  for (NodeId node = 0; node < c.num_nodes(); ++node) {
    if (!gang::NodeCanTake(c, pod, node, n)) continue;
    if (best < 0 || c.free_whole_gpus(node) < c.free_whole_gpus(best)) best = node;
  }
  if (best >= 0) {
    const gang::Piece piece{best, gang::PickDevices(c, best, n)};
    return gang::Assemble(c, pod, std::span<const gang::Piece>(&piece, 1));
  }
  if (pod.job->single_node) return std::nullopt;
  std::vector<NodeId> order;
  for (NodeId node = 0; node < c.num_nodes(); ++node)
    if (c.free_whole_gpus(node) > 0 && pod.gpu_spec.Allows(c.gpu_model(node))) order.push_back(node);
  std::stable_sort(order.begin(), order.end(), [&](NodeId a, NodeId b) { return c.free_whole_gpus(a) > c.free_whole_gpus(b); });
  return gang::GatherInOrder(c, pod, order);
}

std::optional<Placement> TopoPlace::PlaceGang(const CycleContext& ctx, const PodRequest& pod) {
  const ClusterState& c = ctx.cluster;
  const int32_t n = pod.num_gpu();
  if (n <= 0 || pod.gpu_milli() != kMilliPerGpu) return std::nullopt;
  if (!c.has_topology()) return Flat(ctx, pod);
  const topo::Topology& t = c.topology();
  const Job& job = *pod.job;
  const int32_t tp = job.tp_group;
  const DomainId root = t.root();
  const int64_t waited = job.submit_time_s ? ctx.now_s - *job.submit_time_s : 0;

  // One host, when it fits on one.
  if (c.domain_max_host_free(root) >= n) {
    const NodeId node = OneHost(ctx, pod, root, tp);
    if (node >= 0) {
      const gang::Piece piece{node, gang::PickDevices(c, node, n, tp)};
      if (!piece.devices.empty()) {
        if (auto p = gang::Assemble(c, pod, std::span<const gang::Piece>(&piece, 1))) return p;
      }
    }
  }
  if (job.single_node || c.domain_free_gpus(root) < n) return std::nullopt;

  // Candidates: per level above the host, the best-fit domain and the one with the most free hosts.
  std::vector<Candidate> cands;
  const int required = job.topo_required ? topo::LevelIndex(*job.topo_required) : topo::kNumLevels;
  int levels_with_candidates = 0;
  for (Level l : t.levels()) {
    if (topo::LevelIndex(l) <= topo::LevelIndex(Level::kNode)) continue;
    if (topo::LevelIndex(l) > required) break;
    // tight: fewest free GPUs that hold it (packs, keeps big domains whole);
    // roomy: most whole free hosts; dense: fewest hosts needed (largest free
    // host), then tightest — they differ where hosts differ in size.
    DomainId pick[3] = {topo::kNoDomain, topo::kNoDomain, topo::kNoDomain};
    for (DomainId d : t.domains_at(l)) {
      const int32_t f = c.domain_free_gpus(d);
      if (f < n || !ModelOk(c, pod, d)) continue;
      if (pick[0] == topo::kNoDomain || f < c.domain_free_gpus(pick[0])) pick[0] = d;
      if (pick[1] == topo::kNoDomain || c.domain_free_hosts(d) > c.domain_free_hosts(pick[1])) pick[1] = d;
      if (pick[2] == topo::kNoDomain) {
        pick[2] = d;
      } else {
        const int32_t h = HostsNeeded(c, t, d, n), hb = HostsNeeded(c, t, pick[2], n);
        if (h < hb || (h == hb && f < c.domain_free_gpus(pick[2]))) pick[2] = d;
      }
    }
    for (int which = 0; which < 3; ++which) {
      const DomainId d = pick[which];
      if (d == topo::kNoDomain || std::find(pick, pick + which, d) != pick + which) continue;
      Candidate cand;
      if (Fill(ctx, pod, d, n, tp, cand.pieces) != n) continue;
      cand.domain = d;
      cand.level = topo::LevelIndex(l);
      cand.free = c.domain_free_gpus(d);
      std::vector<NodeId> hosts;
      for (const auto& piece : cand.pieces) hosts.push_back(piece.node);
      std::sort(hosts.begin(), hosts.end());
      cand.hosts = static_cast<int32_t>(std::unique(hosts.begin(), hosts.end()) - hosts.begin());
      cands.push_back(std::move(cand));
    }
    // Topology alone: the lowest level wins; with a cost model, look two levels further up.
    if (!cands.empty() && (ctx.cost == nullptr || ++levels_with_candidates >= 3)) break;
  }
  if (cands.empty()) return std::nullopt;
  std::vector<std::optional<Placement>> placements(cands.size());
  for (size_t i = 0; i < cands.size(); ++i) {
    placements[i] = gang::Assemble(c, pod, cands[i].pieces);
    if (placements[i] && ctx.cost != nullptr) {
      if (auto s = ctx.cost->Slowdown(c, job, *placements[i])) cands[i].slowdown = *s;
    }
  }
  const int preferred = job.topo_preferred ? topo::LevelIndex(*job.topo_preferred) : topo::kNumLevels;
  size_t best = cands.size();
  auto better = [&](size_t a, size_t b) {
    const bool pa = cands[a].level <= preferred, pb = cands[b].level <= preferred;
    if (pa != pb) return pa;
    if (cands[a].slowdown != cands[b].slowdown) return cands[a].slowdown < cands[b].slowdown;
    if (cands[a].level != cands[b].level) return cands[a].level < cands[b].level;
    if (ctx.cost == nullptr && cands[a].hosts != cands[b].hosts) return cands[a].hosts < cands[b].hosts;
    if (cands[a].free != cands[b].free) return cands[a].free < cands[b].free;
    return cands[a].domain < cands[b].domain;
  };
  for (size_t i = 0; i < cands.size(); ++i) {
    if (!placements[i]) continue;
    if (best == cands.size() || better(i, best)) best = i;
  }
  if (best == cands.size()) return std::nullopt;
  const bool too_slow_now = !ctx.no_defer || cands[best].slowdown > ctx.no_defer_slowdown_max + 1e-9;
  if (too_slow_now && ctx.cost != nullptr && cands[best].slowdown > job.topo_slowdown_ok + 1e-9 && job.topo_max_wait_s != 0 &&
      (job.topo_max_wait_s < 0 || waited < job.topo_max_wait_s)) {
    // Wait for a placement within the tolerance (like Slurm's
    // --switches=N@time): a slower one would cost the cluster
    // GPUs x run time x (slowdown - 1) GPU-seconds, which at load is other
    // jobs' waiting time. (Measured on Philly at 0.75 load: bounding the wait
    // by the job's own extra run time — ski rental — gave 60% more mean
    // queueing delay than waiting; docs/topology.md.)
    if (ctx.deferred != nullptr && ctx.no_defer) {
      *ctx.deferred = fmt::format("reclaiming its floor, but the best placement now is {:.3f}x slower than a compact "
                                  "one (a reclaim takes at most {:.2f}x); waiting for a better one",
                                  cands[best].slowdown, ctx.no_defer_slowdown_max);
    } else if (ctx.deferred != nullptr) {
      *ctx.deferred = job.topo_max_wait_s < 0
                          ? fmt::format("the best placement now is {:.3f}x slower than a compact one (tolerance {:.2f}x); "
                                        "waiting for a better one",
                                        cands[best].slowdown, job.topo_slowdown_ok)
                          : fmt::format("the best placement now is {:.3f}x slower than a compact one (tolerance {:.2f}x); "
                                        "waiting up to {} s more for a better one",
                                        cands[best].slowdown, job.topo_slowdown_ok, job.topo_max_wait_s - waited);
    }
    return std::nullopt;
  }
  return std::move(placements[best]);
}

}  // namespace tidal::plugins
