// The topology-oblivious baseline ("first-fit"): a job that fits on one node
// goes to the first node in node-list order with enough free whole GPUs; a
// gang that does not gathers free whole GPUs from nodes in node-list order.
// This is what a scheduler without a topology model does (and what node
// order alone gives Slurm without topology/tree): it never looks at switches.
#pragma once

#include "framework/plugin.h"

namespace tidal::plugins {

class FirstFitPlace final : public GangPlacePlugin {
 public:
  std::string_view name() const override { return "FirstFitPlace"; }
  bool PlacesWholeGpuJobs() const override { return true; }
  std::optional<Placement> PlaceGang(const CycleContext& ctx, const PodRequest& pod) override;
};

}  // namespace tidal::plugins
