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
  std::vector<gang::Piece> pieces;
  int32_t need = n;
  for (NodeId node = 0; node < c.num_nodes() && need > 0; ++node) {
    if (c.gpu_count(node) == 0 || !pod.gpu_spec.Allows(c.gpu_model(node))) continue;
    int32_t take = std::min(need, c.free_whole_gpus(node));
    while (take > 0 && !gang::ShareFits(c, pod, node, take)) --take;
    if (take <= 0) continue;
    pieces.push_back({node, gang::PickDevices(c, node, take)});
    need -= take;
  }
  if (need != 0) return std::nullopt;
  return gang::Assemble(c, pod, pieces);
}

}  // namespace tidal::plugins
