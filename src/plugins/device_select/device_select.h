// Device selectors for the Reserve step: which GPUs of the chosen node a job
// gets. Whole-GPU requests always take the first fully free devices; sharing
// requests take the tightest fit (best) or a random fitting device.
#pragma once

#include "framework/plugin.h"

namespace tidal::plugins {

class BestFitDeviceSelect final : public DeviceSelectPlugin {
 public:
  std::string_view name() const override { return "BestFitDevice"; }
  std::optional<NodeAssignment> SelectDevices(const CycleContext& ctx, const PodRequest& pod,
                                              NodeId n) override;
};

class RandomDeviceSelect final : public DeviceSelectPlugin {
 public:
  std::string_view name() const override { return "RandomDevice"; }
  std::optional<NodeAssignment> SelectDevices(const CycleContext& ctx, const PodRequest& pod,
                                              NodeId n) override;
};

}  // namespace tidal::plugins
