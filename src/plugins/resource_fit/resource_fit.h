// Filters: CPU/memory fit (kube-scheduler's NodeResourcesFit) and GPU fit
// (Open-GPU-Share's filter: model allowed, enough devices with enough free milli).
#pragma once

#include "framework/plugin.h"

namespace tidal::plugins {

class ResourceFitFilter final : public FilterPlugin {
 public:
  std::string_view name() const override { return "NodeResourcesFit"; }
  bool Filter(const CycleContext& ctx, const PodRequest& pod, NodeId n) const override {
    // A cordoned node's free capacity reads 0; the flag also keeps off a
    // request for nothing.
    return !ctx.cluster.cordoned(n) && ctx.cluster.cpu_free(n) >= pod.cpu_milli() && ctx.cluster.memory_free(n) >= pod.memory_mib();
  }
};

class GpuFitFilter final : public FilterPlugin {
 public:
  std::string_view name() const override { return "GpuFit"; }
  bool Filter(const CycleContext& ctx, const PodRequest& pod, NodeId n) const override;
};

}  // namespace tidal::plugins
