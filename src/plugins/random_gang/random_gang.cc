#include "plugins/random_gang/random_gang.h"

#include <algorithm>

#include "framework/gang.h"

namespace tidal::plugins {

std::optional<Placement> RandomGangPlace::PlaceGang(const CycleContext& ctx, const PodRequest& pod) {
  const ClusterState& c = ctx.cluster;
  const int32_t n = pod.num_gpu();
  if (n <= 0 || pod.gpu_milli() != kMilliPerGpu) return std::nullopt;
  order_.clear();
  int64_t available = 0;
  for (NodeId node = 0; node < c.num_nodes(); ++node) {
    if (c.free_whole_gpus(node) == 0 || !pod.gpu_spec.Allows(c.gpu_model(node))) continue;
    order_.push_back(node);
    available += c.free_whole_gpus(node);
  }
  if (available < n) return std::nullopt;
  // Fisher-Yates with the cycle's Rng.
  for (size_t i = order_.size(); i > 1; --i) std::swap(order_[i - 1], order_[ctx.rng.Uniform(i)]);
  return gang::GatherInOrder(c, pod, order_);
}

}  // namespace tidal::plugins
