#include "plugins/resource_fit/resource_fit.h"

#include "framework/devices.h"

namespace tidal::plugins {

bool GpuFitFilter::Filter(const CycleContext& ctx, const PodRequest& pod, NodeId n) const {
  return devices::GpuFits(ctx.cluster, pod, n);
}

}  // namespace tidal::plugins
