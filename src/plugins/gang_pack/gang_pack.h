// Gang placement for jobs that may span nodes (whole GPUs only): use as few
// nodes as possible by taking the nodes with the most free whole GPUs first
// (ties by node id, so placement is deterministic). All or nothing.
// Topology-aware gang placement (NVLink domains, leaf switches) replaces this
// in the topology issue; this is the locality-blind baseline.
#pragma once

#include <vector>

#include "framework/plugin.h"

namespace tidal::plugins {

class GangPackPlace final : public GangPlacePlugin {
 public:
  std::string_view name() const override { return "GangPack"; }
  std::optional<Placement> PlaceGang(const CycleContext& ctx, const PodRequest& pod) override;

 private:
  std::vector<NodeId> order_;
};

}  // namespace tidal::plugins
