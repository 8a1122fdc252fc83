#include "framework/devices.h"

namespace tidal::devices {

int CountFitting(std::span<const int32_t> free, int32_t milli) {
  int n = 0;
  for (int32_t f : free) n += f >= milli;
  return n;
}

bool GpuFits(const ClusterState& c, const PodRequest& pod, NodeId n) {
  if (pod.num_gpu() == 0) return true;
  if (c.gpu_count(n) < pod.num_gpu()) return false;
  if (!pod.gpu_spec.Allows(c.gpu_model(n))) return false;
  if (pod.gpu_milli() == kMilliPerGpu) return c.free_whole_gpus(n) >= pod.num_gpu();
  return CountFitting(c.gpu_free(n), pod.gpu_milli()) >= pod.num_gpu();
}

std::optional<std::vector<int32_t>> FirstFreeWhole(std::span<const int32_t> free, int32_t count) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < free.size() && static_cast<int32_t>(out.size()) < count; ++i)
    if (free[i] == kMilliPerGpu) out.push_back(static_cast<int32_t>(i));
  if (static_cast<int32_t>(out.size()) < count) return std::nullopt;
  return out;
}

std::optional<int32_t> BestFitShare(std::span<const int32_t> free, int32_t milli) {
  std::optional<int32_t> best;
  for (size_t i = 0; i < free.size(); ++i)
    if (free[i] >= milli && (!best || free[i] < free[static_cast<size_t>(*best)])) best = static_cast<int32_t>(i);
  return best;
}

std::optional<int32_t> RandomShare(std::span<const int32_t> free, int32_t milli, Rng& rng) {
  std::optional<int32_t> pick;
  uint64_t seen = 0;
  for (size_t i = 0; i < free.size(); ++i) {
    if (free[i] < milli) continue;
    if (rng.Uniform(++seen) == 0) pick = static_cast<int32_t>(i);
  }
  return pick;
}

NodeAssignment MakeAssignment(NodeId n, const PodRequest& pod, std::span<const int32_t> devs) {
  NodeAssignment a;
  a.node = n;
  a.cpu_milli = pod.cpu_milli();
  a.memory_mib = pod.memory_mib();
  a.gpus.assign(devs.begin(), devs.end());
  a.gpu_milli.assign(devs.size(), pod.gpu_milli());
  return a;
}

std::optional<NodeAssignment> SelectBestFit(const ClusterState& c, const PodRequest& pod, NodeId n) {
  if (pod.num_gpu() == 0) return MakeAssignment(n, pod, {});
  if (pod.IsGpuSharing()) {
    auto d = BestFitShare(c.gpu_free(n), pod.gpu_milli());
    if (!d) return std::nullopt;
    const int32_t dev = *d;
    return MakeAssignment(n, pod, std::span<const int32_t>(&dev, 1));
  }
  auto devs = FirstFreeWhole(c.gpu_free(n), pod.num_gpu());
  if (!devs) return std::nullopt;
  return MakeAssignment(n, pod, *devs);
}

}  // namespace tidal::devices
