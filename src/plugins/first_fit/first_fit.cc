#include "plugins/first_fit/first_fit.h"

#include <algorithm>

#include "framework/gang.h"

namespace tidal::plugins {

std::optional<Placement> FirstFitPlace::PlaceGang(const CycleContext& ctx, const PodRequest& pod) {
  const ClusterState& c = ctx.cluster;
  const int32_t n = pod.num_gpu();
  if (n <= 0 || pod.gpu_milli() != kMilliPerGpu) return std::nullopt;
  for (NodeId node = 0; node < c.num_nodes(); ++node) {
    if (!gang::NodeCanTake(c, pod, node, n)) continue;
    auto devs = gang::PickDevices(c, node, n);
    if (devs.empty()) continue;
    const gang::Piece piece{node, std::move(devs)};
    if (auto p = gang::Assemble(c, pod, std::span<const gang::Piece>(&piece, 1))) return p;
  }
  if (pod.job->single_node) return std::nullopt;
  std::vector<NodeId> order(static_cast<size_t>(c.num_nodes()));
  for (NodeId node = 0; node < c.num_nodes(); ++node) order[static_cast<size_t>(node)] = node;
  return gang::GatherInOrder(c, pod, order);
}

}  // namespace tidal::plugins
