// Random: every feasible node is equally likely (FGD baseline "01-Random").
#pragma once

#include "framework/plugin.h"

namespace tidal::plugins {

class RandomScore final : public ScorePlugin {
 public:
  std::string_view name() const override { return "RandomScore"; }
  void PreScore(const CycleContext& ctx, const PodRequest&, std::span<const NodeId> feasible) override {
    chosen_ = feasible[ctx.rng.Uniform(feasible.size())];
  }
  int64_t Score(const CycleContext&, const PodRequest&, NodeId n) override {
    return n == chosen_ ? kMaxNodeScore : kMinNodeScore;
  }

 private:
  NodeId chosen_ = -1;
};

}  // namespace tidal::plugins
