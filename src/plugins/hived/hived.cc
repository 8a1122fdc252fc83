#include "plugins/hived/hived.h"

#include <algorithm>

#include "framework/gang.h"

namespace tidal::plugins {

std::optional<Placement> HivedPlace::PlaceGang(const CycleContext& ctx, const PodRequest& pod) {
  const ClusterState& c = ctx.cluster;
  const int32_t n = pod.num_gpu();
  if (n <= 0 || pod.gpu_milli() != kMilliPerGpu || !c.has_topology()) return std::nullopt;
  const topo::Topology& t = c.topology();
  const int32_t largest = gang::LargestNodeGpus(c);
  if (largest == 0 || (pod.job->single_node && n > largest)) return std::nullopt;
  // 1. Pods, ascending.
  std::vector<int32_t> pods;
  if (n <= largest) {
    pods.push_back(n);
  } else {
    for (int32_t left = n; left > 0; left -= std::min(left, largest)) pods.push_back(std::min(left, largest));
    std::sort(pods.begin(), pods.end());
  }
  // 2. Node cells in topology order, most used first (stable).
  order_.clear();
  for (int32_t h = 0; h < t.num_hosts(); ++h) {
    const NodeId node = c.node_of_host(h);
    if (c.gpu_count(node) > 0 && pod.gpu_spec.Allows(c.gpu_model(node))) order_.push_back(node);
  }
  std::stable_sort(order_.begin(), order_.end(), [&](NodeId a, NodeId b) {
    return c.gpu_count(a) - c.free_whole_gpus(a) > c.gpu_count(b) - c.free_whole_gpus(b);
  });
  // 3. Greedy walk.
  std::vector<gang::Piece> pieces;
  size_t p = 0;
  for (NodeId node : order_) {
    if (p == pods.size()) break;
    int32_t picked = 0;
    while (p < pods.size() && c.free_whole_gpus(node) - picked >= pods[p] && gang::ShareFits(c, pod, node, picked + pods[p])) {
      picked += pods[p];
      ++p;
    }
    if (picked == 0) continue;
    // 4. Lowest common ancestor on the node: the tightest sub-node domain.
    auto devs = gang::PickDevices(c, node, picked);
    if (devs.empty()) return std::nullopt;
    pieces.push_back({node, std::move(devs)});
  }
  if (p != pods.size()) return std::nullopt;
  return gang::Assemble(c, pod, pieces);
}

}  // namespace tidal::plugins
