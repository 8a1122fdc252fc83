#include "framework/gang.h"

#include <algorithm>

#include "framework/devices.h"

namespace tidal::gang {

bool ShareFits(const ClusterState& c, const PodRequest& pod, NodeId n, int32_t gpus) {
  const int64_t total = pod.num_gpu();
  if (total <= 0) return false;
  // A share with a fractional part may get one unit of the rounding
  // remainder (Assemble); an exact share (e.g. the whole job) gets none.
  const int64_t cpu = pod.cpu_milli() * gpus / total + (pod.cpu_milli() * gpus % total != 0);
  const int64_t mem = pod.memory_mib() * gpus / total + (pod.memory_mib() * gpus % total != 0);
  return c.cpu_free(n) >= cpu && c.memory_free(n) >= mem;
}

bool NodeCanTake(const ClusterState& c, const PodRequest& pod, NodeId n, int32_t gpus) {
  return c.gpu_count(n) > 0 && pod.gpu_spec.Allows(c.gpu_model(n)) && c.free_whole_gpus(n) >= gpus &&
         ShareFits(c, pod, n, gpus);
}

namespace {

// Free whole GPUs under sub-node domain d of a host (from the aggregates).
int32_t FreeUnder(const ClusterState& c, topo::DomainId d) { return c.domain_free_gpus(d); }

void Collect(const ClusterState& c, NodeId n, topo::DomainId d, std::vector<int32_t>& out) {
  const topo::Topology& t = c.topology();
  const auto free = c.gpu_free(n);
  for (topo::DomainId x = d; x < t.subtree_end(d); ++x) {
    if (t.level(x) != topo::Level::kGpu) continue;
    const int32_t local = t.domain(x).local_index;
    if (free[static_cast<size_t>(local)] == kMilliPerGpu) out.push_back(local);
  }
}

// The free GPUs under sub-node domain d that whole TP groups of `tp` can
// use: inside NVLink groups no larger than the host, whole groups only.
int32_t UsableIn(const ClusterState& c, topo::DomainId d, int32_t tp) {
  const topo::Topology& t = c.topology();
  const topo::Domain& x = t.domain(d);
  if (x.level == topo::Level::kGpu) return FreeUnder(c, d);
  if (x.nvlink && x.level != topo::Level::kNode) return t.gpus_under(d) >= tp ? FreeUnder(c, d) / tp * tp : FreeUnder(c, d);
  int32_t sum = 0;
  bool grouped = false;
  for (topo::DomainId k : t.children(d)) {
    grouped = grouped || t.level(k) != topo::Level::kGpu;
    sum += UsableIn(c, k, tp);
  }
  return grouped ? sum : FreeUnder(c, d);
}

// Takes k GPUs under sub-domain d (best fit among children, then largest first).
bool Take(const ClusterState& c, NodeId n, topo::DomainId d, int32_t k, int32_t tp, std::span<const int32_t> prefer,
          std::vector<int32_t>& out) {
  const topo::Topology& t = c.topology();
  if (k <= 0) return true;
  if (t.level(d) == topo::Level::kGpu) {
    if (FreeUnder(c, d) < 1) return false;
    out.push_back(t.domain(d).local_index);
    return true;
  }
  const auto kids = t.children(d);
  // All children GPUs: choose among free ones, preferred rails first.
  bool all_gpus = true;
  for (topo::DomainId x : kids) all_gpus = all_gpus && t.level(x) == topo::Level::kGpu;
  if (all_gpus) {
    std::vector<int32_t> free;
    Collect(c, n, d, free);
    if (static_cast<int32_t>(free.size()) < k) return false;
    std::stable_sort(free.begin(), free.end(), [&](int32_t a, int32_t b) {
      const bool pa = std::find(prefer.begin(), prefer.end(), a) != prefer.end();
      const bool pb = std::find(prefer.begin(), prefer.end(), b) != prefer.end();
      return pa > pb;
    });
    free.resize(static_cast<size_t>(k));
    std::sort(free.begin(), free.end());
    out.insert(out.end(), free.begin(), free.end());
    return true;
  }
  // Best fit: the child with the fewest free GPUs that still holds k.
  topo::DomainId best = topo::kNoDomain;
  for (topo::DomainId x : kids) {
    const int32_t f = FreeUnder(c, x);
    const bool nv_ok = tp <= 1 || !t.domain(x).nvlink || f >= k;
    if (f >= k && nv_ok && (best == topo::kNoDomain || f < FreeUnder(c, best))) best = x;
  }
  if (best != topo::kNoDomain) return Take(c, n, best, k, tp, prefer, out);
  // Spread: largest children first; NVLink groups give whole TP groups.
  std::vector<topo::DomainId> order(kids.begin(), kids.end());
  std::stable_sort(order.begin(), order.end(), [&](topo::DomainId a, topo::DomainId b) { return FreeUnder(c, a) > FreeUnder(c, b); });
  int32_t need = k;
  for (topo::DomainId x : order) {
    if (need == 0) break;
    const int32_t f = std::min(need, tp > 1 ? UsableIn(c, x, tp) : FreeUnder(c, x));
    if (f <= 0) continue;
    if (!Take(c, n, x, f, tp, prefer, out)) return false;
    need -= f;
  }
  return need == 0;
}

}  // namespace

int32_t UsableGpus(const ClusterState& c, NodeId n, int32_t tp) {
  const int32_t free = c.free_whole_gpus(n);
  if (tp <= 1 || !c.has_topology() || c.gpu_count(n) == 0) return free;
  const topo::Topology& t = c.topology();
  const int32_t h = c.host_of(n);
  const topo::DomainId host = t.host(h);
  const topo::DomainId nv = t.NvlinkDomain(t.host_gpu(h, 0));
  if (nv != host && t.Contains(nv, host)) return free;          // NVLink spans hosts (NVL72): groups may too
  if (nv == host) return tp <= c.gpu_count(n) ? free / tp * tp : free;
  // Sub-node NVLink groups (bridged pairs): whole groups inside each — when
  // a group can hold one at all; a TP group larger than every NVLink group
  // cannot stay on NVLink anyway (the slowdown model charges for it).
  int32_t usable = 0, largest = 0;
  bool any = false;
  for (topo::DomainId d = host + 1; d < t.subtree_end(host); ++d) {
    if (t.level(d) == topo::Level::kGpu || !t.domain(d).nvlink) continue;
    if (t.parent(d) != host && t.domain(t.parent(d)).nvlink) continue;  // counted with its NVLink parent
    any = true;
    largest = std::max(largest, t.gpus_under(d));
    usable += c.domain_free_gpus(d) / tp * tp;
  }
  return any && tp <= largest ? usable : free;  // PCIe-only hosts: no NVLink to keep groups in
}

std::vector<int32_t> PickDevices(const ClusterState& c, NodeId n, int32_t k, int32_t tp, std::span<const int32_t> prefer) {
  std::vector<int32_t> out;
  if (k <= 0 || c.free_whole_gpus(n) < k) return out;
  if (!c.has_topology()) {
    auto devs = devices::FirstFreeWhole(c.gpu_free(n), k);
    return devs ? *devs : std::vector<int32_t>{};
  }
  out.reserve(static_cast<size_t>(k));
  const topo::DomainId host = c.topology().host(c.host_of(n));
  if (!Take(c, n, host, k, tp, prefer, out) || static_cast<int32_t>(out.size()) != k) {
    // The sub-domain rules could not give k (TP groups do not divide the free
    // GPUs): fall back to any free GPUs; the slowdown model charges for it.
    auto devs = devices::FirstFreeWhole(c.gpu_free(n), k);
    return devs ? *devs : std::vector<int32_t>{};
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<Placement> GatherInOrder(const ClusterState& c, const PodRequest& pod, std::span<const NodeId> order) {
  std::vector<Piece> pieces;
  int32_t need = pod.num_gpu();
  for (NodeId node : order) {
    if (need == 0) break;
    if (c.gpu_count(node) == 0 || !pod.gpu_spec.Allows(c.gpu_model(node))) continue;
    int32_t take = std::min(need, c.free_whole_gpus(node));
    while (take > 0 && !ShareFits(c, pod, node, take)) --take;
    if (take <= 0) continue;
    pieces.push_back({node, PickDevices(c, node, take)});
    need -= take;
  }
  if (need != 0) return std::nullopt;
  return Assemble(c, pod, pieces);
}

int32_t LargestNodeGpus(const ClusterState& c) {
  int32_t largest = 0;
  for (NodeId node = 0; node < c.num_nodes(); ++node) largest = std::max(largest, c.gpu_count(node));
  return largest;
}

std::optional<Placement> Assemble(const ClusterState& c, const PodRequest& pod, std::span<const Piece> pieces) {
  Placement p;
  int64_t cpu = 0, mem = 0;
  const int64_t total = pod.num_gpu();
  for (const Piece& piece : pieces) {
    const auto take = static_cast<int64_t>(piece.devices.size());
    NodeAssignment a = devices::MakeAssignment(piece.node, pod, piece.devices);
    a.cpu_milli = pod.cpu_milli() * take / total;
    a.memory_mib = pod.memory_mib() * take / total;
    cpu += a.cpu_milli;
    mem += a.memory_mib;
    p.assignments.push_back(std::move(a));
  }
  if (p.assignments.empty()) return std::nullopt;
  for (const auto& a : p.assignments) {
    if (a.cpu_milli > c.cpu_free(a.node) || a.memory_mib > c.memory_free(a.node)) return std::nullopt;
  }
  // The rounding remainder: one unit each to the nodes whose share has a
  // fractional part, in order (there are at least as many such nodes as
  // units, and ShareFits checked each has room for one more).
  int64_t rest_cpu = pod.cpu_milli() - cpu, rest_mem = pod.memory_mib() - mem;
  for (size_t i = 0; i < p.assignments.size(); ++i) {
    auto& a = p.assignments[i];
    const auto take = static_cast<int64_t>(pieces[i].devices.size());
    if (rest_cpu > 0 && pod.cpu_milli() * take % total != 0) ++a.cpu_milli, --rest_cpu;
    if (rest_mem > 0 && pod.memory_mib() * take % total != 0) ++a.memory_mib, --rest_mem;
    if (a.cpu_milli > c.cpu_free(a.node) || a.memory_mib > c.memory_free(a.node)) return std::nullopt;
  }
  if (rest_cpu != 0 || rest_mem != 0) return std::nullopt;  // cannot happen: kept as a guard
  return p;
}

}  // namespace tidal::gang
