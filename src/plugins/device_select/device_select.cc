#include "plugins/device_select/device_select.h"

#include "framework/devices.h"

namespace tidal::plugins {

std::optional<NodeAssignment> BestFitDeviceSelect::SelectDevices(const CycleContext& ctx,
                                                                 const PodRequest& pod, NodeId n) {
  return devices::SelectBestFit(ctx.cluster, pod, n);
}

std::optional<NodeAssignment> RandomDeviceSelect::SelectDevices(const CycleContext& ctx,
                                                               const PodRequest& pod, NodeId n) {
  if (!pod.IsGpuSharing()) return devices::SelectBestFit(ctx.cluster, pod, n);
  auto d = devices::RandomShare(ctx.cluster.gpu_free(n), pod.gpu_milli(), ctx.rng);
  if (!d) return std::nullopt;
  const int32_t dev = *d;
  return devices::MakeAssignment(n, pod, std::span<const int32_t>(&dev, 1));
}

}  // namespace tidal::plugins
