// FGD: Fragmentation Gradient Descent (Weng et al., ATC'23). Place the pod
// where it increases the cluster's expected GPU fragmentation the least:
// score = 100 * sigmoid((frag_before - frag_after) / 1000) for the node, and
// for a GPU-sharing pod the device with the best score (lowest index on ties).
// Fragmentation is measured against the workload's typical pods.
#pragma once

#include <memory>
#include <unordered_map>
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
  // Evaluate, cached per request shape and node version: pods of one shape
  // recur constantly and between two of them only a few nodes change.
  const Choice& Cached(const ClusterState& c, const PodRequest& pod, NodeId n);
  double CurrentFrag(const ClusterState& c, NodeId n);

  struct ShapeKey {
    int64_t cpu_milli;
    int32_t gpu_milli;
    int32_t num_gpu;
    bool operator==(const ShapeKey&) const = default;
  };
  struct ShapeKeyHash {
    size_t operator()(const ShapeKey& k) const {
      return std::hash<int64_t>()(k.cpu_milli * 1000003 + k.gpu_milli * 131 + k.num_gpu);
    }
  };
  struct ShapeCache {
    std::vector<uint64_t> version;  // node version the choice was computed at (UINT64_MAX: never)
    std::vector<Choice> choice;
  };

  // Drops every cache when asked about a different ClusterState object.
  void BindTo(const ClusterState& c);

  std::shared_ptr<FragmentationModel> model_;
  uint64_t cluster_instance_ = 0;
  std::unordered_map<ShapeKey, ShapeCache, ShapeKeyHash> by_shape_;
  std::vector<uint64_t> cached_version_;
  std::vector<double> cached_frag_;
};

}  // namespace tidal::plugins
