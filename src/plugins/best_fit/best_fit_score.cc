#include "plugins/best_fit/best_fit_score.h"

#include <algorithm>

#include "framework/devices.h"

namespace tidal::plugins {

int64_t BestFitScore::Score(const CycleContext& ctx, const PodRequest& pod, NodeId n) {
  const ClusterState& c = ctx.cluster;
  const double cpu_left = static_cast<double>(c.cpu_free(n) - pod.cpu_milli());
  const double gpu_left = static_cast<double>(c.gpu_milli_free(n) - pod.job->TotalGpuMilli());
  if (cpu_left < 0 || gpu_left < 0) return kMinNodeScore;
  const double leftover = cpu_left / static_cast<double>(devices::kRefMaxNodeCpuMilli) * 0.5 +
                          gpu_left / static_cast<double>(devices::kRefMaxNodeGpuMilli) * 0.5;
  return static_cast<int64_t>((1.0 - leftover) * static_cast<double>(kMaxNodeScore));
}

void BestFitScore::Normalize(std::span<int64_t> scores) const {
  if (scores.empty()) return;
  const auto [lo, hi] = std::minmax_element(scores.begin(), scores.end());
  const int64_t low = *lo, range = *hi - *lo;
  for (int64_t& s : scores) s = range == 0 ? kMinNodeScore : (s - low) * (kMaxNodeScore - kMinNodeScore) / range + kMinNodeScore;
}

}  // namespace tidal::plugins
