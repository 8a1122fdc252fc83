// Random whole-GPU placement ("random" placer's gang step): a job that fits
// on one node goes to a node drawn uniformly from those that can host it; a
// gang that does not gathers free whole GPUs from nodes in a random order.
// The randomness is the cycle's seeded Rng, so runs are reproducible.
#pragma once

#include <vector>

#include "framework/plugin.h"

namespace tidal::plugins {

class RandomGangPlace final : public GangPlacePlugin {
 public:
  std::string_view name() const override { return "RandomGangPlace"; }
  std::optional<Placement> PlaceGang(const CycleContext& ctx, const PodRequest& pod) override;

 private:
  std::vector<NodeId> order_;
};

}  // namespace tidal::plugins
