#include "plugins/gpu_packing/gpu_packing_score.h"

#include <algorithm>
#include <array>
#include <numeric>

namespace tidal::plugins {

int64_t GpuPackingScore::Score(const CycleContext& ctx, const PodRequest& pod, NodeId n) {
  if (pod.gpu_milli() <= 0) return kMinNodeScore;
  const ClusterState& c = ctx.cluster;
  const int32_t count = c.gpu_count(n);
  const int64_t fully_free = c.free_whole_gpus(n);
  if (fully_free == count) {  // case 3: an untouched node
    return std::max<int64_t>(kMaxNodeScore / 3 - fully_free, fully_free);
  }
  // Walk devices from least free to most (stable by index) taking those that fit.
  auto free = c.gpu_free(n);
  std::vector<int32_t> order(free.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return free[a] < free[b]; });
  int32_t need = pod.num_gpu();
  int64_t whole_used = 0, free_ratio_on_used = 0;
  for (int32_t d : order) {
    if (need == 0) break;
    if (pod.gpu_milli() <= free[d]) {
      --need;
      if (free[d] == kMilliPerGpu) ++whole_used;
      free_ratio_on_used += int64_t{free[d]} * 100 / kMilliPerGpu;
    }
  }
  if (need != 0) return kMinNodeScore;
  if (whole_used > 0) return std::max<int64_t>(kMaxNodeScore / 2 - whole_used, kMaxNodeScore / 3);  // case 2
  return std::max<int64_t>(kMaxNodeScore - free_ratio_on_used / 10, kMaxNodeScore / 2);             // case 1
}

}  // namespace tidal::plugins
