// The planner-backed PlacementCost: a job's predicted step time on the
// placement it got over its step time on a compact placement of the same
// size, and its exposed communication share there (DESIGN.md: placement
// slowdown, communication share). The job's model and launched layout come
// from a WorkloadModel; the links from the cluster's topology
// (planner::PlacementFromTopology); the compact placement is what the topo
// placer picks for the same request on the empty cluster.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "cluster/cluster_state.h"
#include "framework/plugin.h"
#include "planner/cost_model.h"
#include "sim/workload_model.h"

namespace tidal::sim {

struct PlacementEval {
  double step_s = 0;          // on the placement
  double compact_step_s = 0;  // on the compact placement
  double slowdown = 1;        // max(1, step_s / compact_step_s)
  double comm_share = 0;      // exposed communication / step time, on the placement
};

class PlannerPlacementCost final : public PlacementCost {
 public:
  // `empty` is the cluster with its topology attached and nothing bound.
  PlannerPlacementCost(const ClusterState& empty, WorkloadModel model);
  ~PlannerPlacementCost() override;

  std::optional<double> Slowdown(const ClusterState& cluster, const Job& job, const Placement& placement) override;
  // nullopt for a job without a model (one GPU, or no class covers it).
  std::optional<PlacementEval> Evaluate(const ClusterState& cluster, const Job& job, const Placement& placement);
  const WorkloadModel& workload_model() const { return model_; }
  // The tensor-parallel size a job of `gpus` GPUs is launched with (0: none).
  int32_t TensorParallel(int32_t gpus) const;

 private:
  std::optional<double> StepTime(const WorkloadModel::Resolved& r, const ClusterState& c, const Placement& p,
                                 double* comm_share) const;
  std::unique_ptr<ClusterState> empty_;
  WorkloadModel model_;
  planner::GpuSpec gpu_;
  planner::Calibration cal_;
  std::unique_ptr<GangPlacePlugin> compact_placer_;
  // Compact step time by (GPUs, allowed models, tp group).
  std::map<std::tuple<int32_t, std::string, int32_t>, std::optional<double>> compact_;
};

}  // namespace tidal::sim
