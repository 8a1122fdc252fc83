#include "sim/placement_cost.h"

#include <algorithm>

#include "common/rng.h"
#include "planner/gpu.h"
#include "planner/topology_placement.h"
#include "plugins/topo/topo_place.h"

namespace tidal::sim {

PlannerPlacementCost::PlannerPlacementCost(const ClusterState& empty, WorkloadModel model)
    : empty_(std::make_unique<ClusterState>(empty)),
      model_(std::move(model)),
      gpu_(*planner::FindGpu(model_.gpu())),
      cal_(planner::DefaultCalibration()),
      compact_placer_(std::make_unique<plugins::TopoPlace>()) {}

PlannerPlacementCost::~PlannerPlacementCost() = default;

int32_t PlannerPlacementCost::TensorParallel(int32_t gpus) const {
  auto r = model_.Resolve(gpus);
  return r ? r->strategy.tp : 0;
}

std::optional<double> PlannerPlacementCost::StepTime(const WorkloadModel::Resolved& r, const ClusterState& c,
                                                     const Placement& p, double* comm_share) const {
  if (!c.has_topology()) return std::nullopt;
  std::vector<topo::DomainId> gpus;
  for (const auto& a : p.assignments)
    for (int32_t d : a.gpus) gpus.push_back(c.gpu_domain(a.node, d));
  if (static_cast<int>(gpus.size()) != r.strategy.Gpus()) return std::nullopt;
  const planner::Placement pl = planner::PlacementFromTopology(c.topology(), gpus);
  auto pred = planner::Predict(r.model, gpu_, pl, r.strategy, cal_);
  if (!pred) return std::nullopt;
  if (comm_share) *comm_share = pred->comm_share;
  return pred->step_time_s;
}

std::optional<PlacementEval> PlannerPlacementCost::Evaluate(const ClusterState& c, const Job& job, const Placement& p) {
  if (job.num_gpu < 2 || job.gpu_milli != kMilliPerGpu) return std::nullopt;
  auto r = model_.Resolve(job.num_gpu);
  if (!r) return std::nullopt;
  PlacementEval e;
  auto step = StepTime(*r, c, p, &e.comm_share);
  if (!step) return std::nullopt;
  e.step_s = *step;
  // Compact: the topo placer's choice for the same request on the empty cluster.
  auto request = ResolveRequest(job, empty_->models());
  if (!request) return std::nullopt;
  const auto key = std::make_tuple(job.num_gpu, request->gpu_spec_key, job.tp_group);
  auto it = compact_.find(key);
  if (it == compact_.end()) {
    Job probe;
    probe.id = -1;
    probe.name = "compact-probe";
    probe.num_gpu = job.num_gpu;
    probe.gpu_milli = kMilliPerGpu;
    probe.gpu_spec = job.gpu_spec;
    probe.single_node = false;
    probe.tp_group = job.tp_group;
    PodRequest pod = *request;
    pod.job = &probe;
    Rng rng(1);
    CycleContext ctx{*empty_, rng};
    std::optional<double> compact;
    if (auto cp = compact_placer_->PlaceGang(ctx, pod)) compact = StepTime(*r, *empty_, *cp, nullptr);
    it = compact_.emplace(key, compact).first;
  }
  if (!it->second || *it->second <= 0) return std::nullopt;
  e.compact_step_s = *it->second;
  e.slowdown = std::max(1.0, e.step_s / e.compact_step_s);
  return e;
}

std::optional<double> PlannerPlacementCost::Slowdown(const ClusterState& c, const Job& job, const Placement& p) {
  auto e = Evaluate(c, job, p);
  if (!e) return std::nullopt;
  return e->slowdown;
}

}  // namespace tidal::sim
