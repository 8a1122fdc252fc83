// GpuPacking as in the FGD simulator: prefer, in order, (1) sharing devices
// already in use (tighter leftover first), (2) fully free devices on a node
// already in use (fewer first), (3) a node with every device free (fewer
// devices first). Pods that ask for no GPU score 0 everywhere.
#pragma once

#include "framework/plugin.h"

namespace tidal::plugins {

class GpuPackingScore final : public ScorePlugin {
 public:
  std::string_view name() const override { return "GpuPackingScore"; }
  int64_t Score(const CycleContext& ctx, const PodRequest& pod, NodeId n) override;
};

}  // namespace tidal::plugins
