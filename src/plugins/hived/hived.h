// HiveD's topology-aware placement ("hived"), after microsoft/hivedscheduler
// pkg/algorithm/topology_aware_scheduler.go with one virtual cluster owning
// every cell (so buddy binding of VC cells to physical cells, cell_allocation.go,
// never constrains: the cluster is one chain whose node-level cells are the
// hosts in topology order):
//  1. The job is an affinity group of pods: one pod if it fits on a host,
//     else pods of the largest host's GPU count (the last one smaller);
//     pod sizes sorted ascending.
//  2. Node-level cells sorted (stably, so ties keep topology order, which
//     keeps a rack's hosts together) by GPUs in use, descending: packing.
//  3. Greedy, no backtracking: walk the nodes, place consecutive pods on the
//     current node while its free GPUs hold them, else move on.
//  4. On a node, the GPUs with the lowest common ancestor (same PCIe switch,
//     then socket) — findLeafCellsInNode's goal.
#pragma once

#include <vector>

#include "framework/plugin.h"

namespace tidal::plugins {

class HivedPlace final : public GangPlacePlugin {
 public:
  std::string_view name() const override { return "HivedPlace"; }
  bool PlacesWholeGpuJobs() const override { return true; }
  std::optional<Placement> PlaceGang(const CycleContext& ctx, const PodRequest& pod) override;

 private:
  std::vector<NodeId> order_;
};

}  // namespace tidal::plugins
