// BestFit as in the FGD simulator: the leftover after placement, CPU and GPU
// each normalised by the largest node spec and weighted 1/2, turned into a
// "less leftover scores higher" value in [0, 100], then min-max normalised
// across the feasible nodes (integer arithmetic, as kube-scheduler plugins do).
#pragma once

#include "framework/plugin.h"

namespace tidal::plugins {

class BestFitScore final : public ScorePlugin {
 public:
  std::string_view name() const override { return "BestFitScore"; }
  int64_t Score(const CycleContext& ctx, const PodRequest& pod, NodeId n) override;
  void Normalize(std::span<int64_t> scores) const override;
};

}  // namespace tidal::plugins
