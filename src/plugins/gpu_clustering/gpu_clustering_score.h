// GpuClustering as in the FGD simulator: put a pod where pods of the same GPU
// shape ("share-gpu", "1-gpu", "2-gpu", ...) already run, preferring nodes
// that host only that shape, then mixed nodes with it, then idle nodes, then
// others; within a band, fuller nodes score higher. It keeps, per node, how
// many pods of each shape run there (Reserve/Unreserve).
#pragma once

#include <vector>

#include "framework/plugin.h"

namespace tidal::plugins {

class GpuClusteringScore final : public ScorePlugin, public ReservePlugin {
 public:
  std::string_view name() const override { return "GpuClusteringScore"; }
  int64_t Score(const CycleContext& ctx, const PodRequest& pod, NodeId n) override;
  void Reserve(const ClusterState& cluster, const Job& job, const Placement& p) override;
  void Unreserve(const ClusterState& cluster, const Job& job, const Placement& p) override;

 private:
  // Shape tag: 0 = sharing, k = k whole GPUs; -1 = no GPU (not tracked).
  static int Tag(const Job& j) { return j.num_gpu == 0 ? -1 : (j.IsGpuSharing() ? 0 : j.num_gpu); }
  void Adjust(NodeId n, int tag, int delta);

  struct NodeShapes {
    std::vector<int32_t> count;  // by tag
    int32_t distinct = 0;
  };
  std::vector<NodeShapes> nodes_;
};

}  // namespace tidal::plugins
