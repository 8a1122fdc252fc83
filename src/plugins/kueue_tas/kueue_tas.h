// Kueue Topology Aware Scheduling ("kueue-tas"), after kubernetes-sigs/kueue
// pkg/cache/scheduler/tas_flavor_snapshot.go (findTopologyAssignment,
// findLevelWithFitDomains, updateCountsToMinimumGeneric; BestFit profile,
// the default for required and preferred pod sets since v0.15). A job is the
// pod set a training operator creates — one pod if it fits on a host, else
// the fewest equal pods of at most a host's GPUs — so a domain's capacity is
// the pods of that size it can hold.
//  1. The requested level: Job::topo_required, else Job::topo_preferred,
//     else as a careful user annotates a training job: required
//     kubernetes.io/hostname when it fits on one host (preferred would let
//     TAS spread it over a rack's hosts whenever no host is free enough:
//     measured, that doubles its run time on Philly), else preferred at the
//     lowest level above the host; a job that must stay on one node is
//     required at the host.
//  2. Domains at that level sorted by capacity descending, then by name;
//     if the largest fits, the first with the smallest capacity that still
//     fits (BestFit). Nothing fits: required fails, preferred moves one
//     level up; at the top level several domains are taken greedily in
//     sorted order, the last one best-fit among those left.
//  3. Downwards, the children of all selected domains form one pool,
//     sorted the same way, taken greedily (min(capacity, remaining)), and
//     once a child can finish the request the tightest such child is taken.
#pragma once

#include <memory>
#include <vector>

#include "framework/plugin.h"

namespace tidal::plugins {

class KueueTasPlace final : public GangPlacePlugin {
 public:
  std::string_view name() const override { return "KueueTasPlace"; }
  bool PlacesWholeGpuJobs() const override { return true; }
  std::optional<Placement> PlaceGang(const CycleContext& ctx, const PodRequest& pod) override;

 private:
  std::shared_ptr<const topo::Topology> name_rank_topology_;  // the topology name_rank_ is for
  std::vector<int32_t> name_rank_;                      // per domain: rank of its name
};

}  // namespace tidal::plugins
