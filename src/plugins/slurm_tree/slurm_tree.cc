#include "plugins/slurm_tree/slurm_tree.h"

#include <algorithm>
#include <functional>

#include "framework/gang.h"

namespace tidal::plugins {
namespace {

using topo::DomainId;

int HopDistance(const topo::Topology& t, DomainId a, DomainId b) {
  const DomainId l = t.LowestCommonDomain(a, b);
  return t.depth(a) + t.depth(b) - 2 * t.depth(l);
}

}  // namespace

std::optional<Placement> SlurmTreePlace::PlaceGang(const CycleContext& ctx, const PodRequest& pod) {
  const ClusterState& c = ctx.cluster;
  const int32_t n = pod.num_gpu();
  if (n <= 0 || pod.gpu_milli() != kMilliPerGpu || !c.has_topology()) return std::nullopt;
  const topo::Topology& t = c.topology();
  // How users ask Slurm for GPUs: a job that fits on one node is
  // `-N1 --gres=gpu:n`; a larger one `-N k --gres=gpu:per` with k the fewest
  // nodes of the largest size and per = ceil(n / k) (the last node's share
  // may be smaller). Slurm then needs k nodes with `per` free GPUs each.
  const int32_t largest = gang::LargestNodeGpus(c);
  if (largest == 0) return std::nullopt;
  if (pod.job->single_node && n > largest) return std::nullopt;
  const int32_t k = n <= largest ? 1 : (n + largest - 1) / largest;
  const int32_t per = (n + k - 1) / k;
  const auto nd = static_cast<size_t>(t.num_domains());
  nodes_.assign(nd, 0);
  gpus_.assign(nd, 0);
  // 1. Candidate nodes (can run `per` GPUs of it) and per-switch totals.
  std::vector<uint8_t> candidate(static_cast<size_t>(c.num_nodes()), 0);
  for (int32_t h = 0; h < t.num_hosts(); ++h) {
    const NodeId node = c.node_of_host(h);
    if (!gang::NodeCanTake(c, pod, node, per)) continue;
    candidate[static_cast<size_t>(node)] = 1;
    for (DomainId d = t.parent(t.host(h)); d != topo::kNoDomain; d = t.parent(d)) {
      ++nodes_[static_cast<size_t>(d)];
      gpus_[static_cast<size_t>(d)] += per;
    }
  }
  // 2. The top switch: the root holds everything in a single-rooted tree.
  if (nodes_[static_cast<size_t>(t.root())] < k) return std::nullopt;
  // 3. Leaf switches: domains with host children.
  leaves_.clear();
  for (DomainId d = 0; d < t.num_domains(); ++d) {
    if (topo::LevelIndex(t.level(d)) <= topo::LevelIndex(topo::Level::kNode)) continue;
    for (DomainId k : t.children(d)) {
      if (t.level(k) == topo::Level::kNode) {
        leaves_.push_back(d);
        break;
      }
    }
  }
  dist_.assign(leaves_.size(), 0);
  used_.assign(leaves_.size(), 0);
  int32_t rem_nodes = k, rem = n;
  auto fits = [&](DomainId d) { return nodes_[static_cast<size_t>(d)] >= rem_nodes; };
  // > 0: i is better than j.
  std::function<int(DomainId, DomainId)> compare = [&](DomainId i, DomainId j) -> int {
    const bool fi = fits(i), fj = fits(j);
    const int32_t ni = nodes_[static_cast<size_t>(i)], nj = nodes_[static_cast<size_t>(j)];
    if (fi && fj) return ni < nj ? 1 : (ni > nj ? -1 : 0);
    if (fi != fj) return fi ? 1 : -1;
    const DomainId pi = t.parent(i), pj = t.parent(j);
    if (pi != pj && pi != topo::kNoDomain && pj != topo::kNoDomain) return compare(pi, pj);
    if (ni != nj) return ni > nj ? 1 : -1;
    if (t.level(i) != t.level(j)) return topo::LevelIndex(t.level(i)) < topo::LevelIndex(t.level(j)) ? 1 : -1;
    return 0;
  };
  std::vector<gang::Piece> pieces;
  while (rem_nodes > 0) {
    int best = -1;
    for (size_t i = 0; i < leaves_.size(); ++i) {
      if (used_[i] || nodes_[static_cast<size_t>(leaves_[i])] == 0) continue;
      if (best < 0) {
        best = static_cast<int>(i);
        continue;
      }
      const DomainId li = leaves_[i], lb = leaves_[static_cast<size_t>(best)];
      const bool i_fit = fits(li);
      const int tcs = compare(li, lb);
      if ((dist_[i] < dist_[static_cast<size_t>(best)] && i_fit) || (dist_[i] == dist_[static_cast<size_t>(best)] && tcs > 0))
        best = static_cast<int>(i);
    }
    if (best < 0) return std::nullopt;
    const DomainId leaf = leaves_[static_cast<size_t>(best)];
    // 4. Nodes of the leaf in node-list order.
    std::vector<NodeId> in_leaf;
    for (DomainId k : t.children(leaf))
      if (t.level(k) == topo::Level::kNode) in_leaf.push_back(c.node_of_host(t.host_index(k)));
    std::sort(in_leaf.begin(), in_leaf.end());
    for (NodeId node : in_leaf) {
      if (rem_nodes == 0) break;
      if (!candidate[static_cast<size_t>(node)]) continue;
      const int32_t take = std::min(per, rem);
      auto devs = gang::PickDevices(c, node, take);
      if (devs.empty()) continue;
      pieces.push_back({node, std::move(devs)});
      rem -= take;
      --rem_nodes;
    }
    // The leaf is spent: its nodes leave the counts, distances grow from it.
    const int32_t ln = nodes_[static_cast<size_t>(leaf)], lg = gpus_[static_cast<size_t>(leaf)];
    for (DomainId d = leaf; d != topo::kNoDomain; d = t.parent(d)) {
      nodes_[static_cast<size_t>(d)] -= ln;
      gpus_[static_cast<size_t>(d)] -= lg;
    }
    used_[static_cast<size_t>(best)] = 1;
    for (size_t i = 0; i < leaves_.size(); ++i) dist_[i] += HopDistance(t, leaves_[i], leaf);
  }
  return gang::Assemble(c, pod, pieces);
}

}  // namespace tidal::plugins
