// DotProd (Tetris, SIGCOMM'14) as in the FGD simulator with dimension
// extension "merge" and normalisation "max": the node's free (CPU, total GPU)
// and the pod's request, each divided by the largest node spec (128 cores,
// 8 GPUs); score = 100 * (1 - dot / 2). Prefers nodes with less free capacity
// along the pod's dimensions.
#pragma once

#include "framework/plugin.h"

namespace tidal::plugins {

class DotProductScore final : public ScorePlugin {
 public:
  std::string_view name() const override { return "DotProductScore"; }
  int64_t Score(const CycleContext& ctx, const PodRequest& pod, NodeId n) override;
};

}  // namespace tidal::plugins
