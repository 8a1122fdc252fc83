// The planner-backed PlacementCost: a job's predicted step time on the
// placement it got over its step time on a compact placement of the same
// size, and its exposed communication share there (DESIGN.md: placement
// slowdown, communication share). The job's model and launched layout come
// from a WorkloadModel; the links from the cluster's topology
// (planner::PlacementFromTopology); the compact placement is what the topo
// placer picks for the same request on the empty cluster.
//
// With a reference workload model (tidal sim org), a trace job's recorded
// run time is read as its run under the reference's launched layout on a
// compact placement: the job's work is that many reference steps, and it
// runs step_s / (reference compact step) times its trace time wherever and
// however it runs — less than 1 when the planner's layout is faster. With a
// planned workload model (WorkloadModel::planned), each job's layout is the
// planner's best for the placement it got (searched once per distinct
// placement shape).
#pragma once

#include <map>
#include <string>
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
  // Run time / trace run time: the slowdown, or with a reference model
  // step_s / the reference's compact step (may be below 1).
  double run_factor = 1;
  int32_t gpus = 0;
  double flops_per_s = 0;       // model FLOPs per second of the whole job (Megatron convention)
  double peak_bf16_flops = 0;   // per GPU, dense BF16
  double peak_native_flops = 0; // per GPU, the job's precision
  double mfu = 0;               // flops_per_s / (gpus x peak_bf16_flops)
  planner::Strategy strategy;   // the layout it runs with
};

class PlannerPlacementCost final : public PlacementCost {
 public:
  // `empty` is the cluster with its topology attached and nothing bound.
  PlannerPlacementCost(const ClusterState& empty, WorkloadModel model,
                       std::optional<WorkloadModel> reference = std::nullopt);
  ~PlannerPlacementCost() override;

  std::optional<double> Slowdown(const ClusterState& cluster, const Job& job, const Placement& placement) override;
  // nullopt for a job without a model (one GPU, or no class covers it).
  std::optional<PlacementEval> Evaluate(const ClusterState& cluster, const Job& job, const Placement& placement);
  const WorkloadModel& workload_model() const { return model_; }
  // The tensor-parallel size a job of `gpus` GPUs is launched with (0: none).
  int32_t TensorParallel(int32_t gpus) const;

 private:
  struct Step {
    double step_s = 0, comm_share = 0, flops_per_step = 0;
    planner::Strategy strategy;
  };
  // The step on placement p: the class's layout, or (planned) the best one.
  std::optional<Step> StepOn(const WorkloadModel& m, const WorkloadModel::Resolved& r, const ClusterState& c,
                             const Placement& p);
  std::unique_ptr<ClusterState> empty_;
  WorkloadModel model_;
  std::optional<WorkloadModel> reference_;
  planner::GpuSpec gpu_;
  planner::Calibration cal_;
  std::unique_ptr<GangPlacePlugin> compact_placer_;
  // Compact step time by (model: 0 own, 1 reference; GPUs, allowed models, tp group).
  std::map<std::tuple<int, int32_t, std::string, int32_t>, std::optional<Step>> compact_;
  // Planned layouts by (class, the placement's shape).
  std::map<std::pair<int, std::string>, std::optional<Step>> planned_;
};

}  // namespace tidal::sim
