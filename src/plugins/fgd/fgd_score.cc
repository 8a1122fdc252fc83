#include "plugins/fgd/fgd_score.h"

#include <cmath>

#include "framework/devices.h"

namespace tidal::plugins {

namespace {
int64_t ScoreOf(double before, double after) {
  const double x = (before - after) / 1000.0;
  return static_cast<int64_t>(1.0 / (1.0 + std::exp(-x)) * static_cast<double>(kMaxNodeScore));
}
}  // namespace

void FgdScore::BindTo(const ClusterState& c) {
  if (cluster_instance_ == c.instance_id()) return;
  cluster_instance_ = c.instance_id();
  by_shape_.clear();
  cached_version_.clear();
  cached_frag_.clear();
}

double FgdScore::CurrentFrag(const ClusterState& c, NodeId n) {
  BindTo(c);
  const auto i = static_cast<size_t>(n);
  if (cached_version_.size() <= i) {
    cached_version_.resize(static_cast<size_t>(c.num_nodes()), UINT64_MAX);
    cached_frag_.resize(static_cast<size_t>(c.num_nodes()), 0);
  }
  if (cached_version_[i] != c.version(n)) {
    cached_frag_[i] = model_->NodeFragMilli(NodeFreeState::FromCluster(c, n));
    cached_version_[i] = c.version(n);
  }
  return cached_frag_[i];
}

FgdScore::Choice FgdScore::Evaluate(const ClusterState& c, const PodRequest& pod, NodeId n) {
  const double before = CurrentFrag(c, n);
  const NodeFreeState s = NodeFreeState::FromCluster(c, n);
  std::array<int32_t, NodeFreeState::kMaxGpus> take{};
  Choice best;
  if (pod.IsGpuSharing()) {
    // Devices with equal free milli lead to the same state; evaluate each
    // distinct value once and keep the first device that reaches the best.
    std::array<int32_t, NodeFreeState::kMaxGpus> seen_value{};
    std::array<int64_t, NodeFreeState::kMaxGpus> seen_score{};
    int seen = 0;
    for (int d = 0; d < s.gpu_count; ++d) {
      const int32_t left = s.gpu_left[static_cast<size_t>(d)];
      if (left < pod.gpu_milli()) continue;
      int64_t score = -1;
      for (int k = 0; k < seen; ++k)
        if (seen_value[static_cast<size_t>(k)] == left) score = seen_score[static_cast<size_t>(k)];
      if (score < 0) {
        take.fill(0);
        take[static_cast<size_t>(d)] = pod.gpu_milli();
        score = ScoreOf(before, model_->NodeFragMilli(Subtract(s, pod.cpu_milli(), take)));
        seen_value[static_cast<size_t>(seen)] = left;
        seen_score[static_cast<size_t>(seen++)] = score;
      }
      if (best.device < 0 || score > best.score) best = {score, d};
    }
    return best;
  }
  // Whole GPUs (or none): every choice of fully free devices gives the same
  // state, so take the first ones.
  take.fill(0);
  int32_t need = pod.num_gpu();
  for (int d = 0; d < s.gpu_count && need > 0; ++d) {
    if (s.gpu_left[static_cast<size_t>(d)] == kMilliPerGpu) {
      take[static_cast<size_t>(d)] = kMilliPerGpu;
      --need;
    }
  }
  best.score = ScoreOf(before, model_->NodeFragMilli(Subtract(s, pod.cpu_milli(), take)));
  return best;
}

const FgdScore::Choice& FgdScore::Cached(const ClusterState& c, const PodRequest& pod, NodeId n) {
  // The choice depends on the node's free state and the pod's CPU and GPU
  // shape only (model constraints and memory are the filters' business).
  BindTo(c);
  ShapeCache& sc = by_shape_[{pod.cpu_milli(), pod.gpu_milli(), pod.num_gpu()}];
  const auto i = static_cast<size_t>(n);
  if (sc.version.size() != static_cast<size_t>(c.num_nodes())) {
    sc.version.assign(static_cast<size_t>(c.num_nodes()), UINT64_MAX);
    sc.choice.assign(static_cast<size_t>(c.num_nodes()), Choice{});
  }
  if (sc.version[i] != c.version(n)) {
    sc.choice[i] = Evaluate(c, pod, n);
    sc.version[i] = c.version(n);
  }
  return sc.choice[i];
}

int64_t FgdScore::Score(const CycleContext& ctx, const PodRequest& pod, NodeId n) {
  return Cached(ctx.cluster, pod, n).score;
}

std::optional<NodeAssignment> FgdScore::SelectDevices(const CycleContext& ctx, const PodRequest& pod,
                                                      NodeId n) {
  if (!pod.IsGpuSharing()) return devices::SelectBestFit(ctx.cluster, pod, n);
  const Choice c = Cached(ctx.cluster, pod, n);
  if (c.device < 0) return std::nullopt;
  return devices::MakeAssignment(n, pod, std::span<const int32_t>(&c.device, 1));
}

}  // namespace tidal::plugins
