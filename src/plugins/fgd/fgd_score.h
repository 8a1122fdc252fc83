// FGD: Fragmentation Gradient Descent (Weng et al., ATC'23). Place the pod
// where it increases the cluster's expected GPU fragmentation the least:
// score = 100 * sigmoid((frag_before - frag_after) / 1000) for the node, and
// for a GPU-sharing pod the device with the best score (lowest index on ties).
// Fragmentation is measured against the workload's typical pods.
#pragma once

#include <memory>
#include <vector>

#include "framework/fragmentation.h"
#include "framework/plugin.h"

namespace tidal::plugins {

class FgdScore final : public ScorePlugin, public DeviceSelectPlugin {
 public:
  explicit FgdScore(std::shared_ptr<FragmentationModel> model) : model_(std::move(model)) {}
  std::string_view name() const override { return "FGDScore"; }
  int64_t Score(const CycleContext& ctx, const PodRequest& pod, NodeId n) override;
  std::optional<NodeAssignment> SelectDevices(const CycleContext& ctx, const PodRequest& pod,
                                              NodeId n) override;

 private:
  struct Choice {
    int64_t score = kMinNodeScore;
    int32_t device = -1;  // for sharing pods
  };
  Choice Evaluate(const ClusterState& c, const PodRequest& pod, NodeId n);
  double CurrentFrag(const ClusterState& c, NodeId n);

  std::shared_ptr<FragmentationModel> model_;
  std::vector<uint64_t> cached_version_;
  std::vector<double> cached_frag_;
};

}  // namespace tidal::plugins
