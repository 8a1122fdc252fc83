#include "plugins/dot_product/dot_product_score.h"

#include "framework/devices.h"

namespace tidal::plugins {

namespace {
constexpr double kMaxSpecCpu = devices::kRefMaxNodeCpuMilli;
constexpr double kMaxSpecGpu = devices::kRefMaxNodeGpuMilli;
}  // namespace

int64_t DotProductScore::Score(const CycleContext& ctx, const PodRequest& pod, NodeId n) {
  const ClusterState& c = ctx.cluster;
  if (c.cpu_free(n) < pod.cpu_milli()) return kMinNodeScore;
  const double node_cpu = static_cast<double>(c.cpu_free(n)) / kMaxSpecCpu;
  const double node_gpu = static_cast<double>(c.gpu_milli_free(n)) / kMaxSpecGpu;
  const double pod_cpu = static_cast<double>(pod.cpu_milli()) / kMaxSpecCpu;
  const double pod_gpu = static_cast<double>(pod.job->TotalGpuMilli()) / kMaxSpecGpu;
  const double score = 1.0 - (node_cpu * pod_cpu + node_gpu * pod_gpu) / 2.0;
  return static_cast<int64_t>(static_cast<double>(kMaxNodeScore) * score);
}

}  // namespace tidal::plugins
