#include "sim/placement_cost.h"

#include <algorithm>

#include "common/rng.h"
#include <fmt/format.h>

#include "planner/gpu.h"
#include "planner/search.h"
#include "planner/topology_placement.h"
#include "plugins/topo/topo_place.h"

namespace tidal::sim {

PlannerPlacementCost::PlannerPlacementCost(const ClusterState& empty, WorkloadModel model,
                                           std::optional<WorkloadModel> reference)
    : empty_(std::make_unique<ClusterState>(empty)),
      model_(std::move(model)),
      reference_(std::move(reference)),
      gpu_(*planner::FindGpu(model_.gpu())),
      cal_(planner::DefaultCalibration()),
      compact_placer_(std::make_unique<plugins::TopoPlace>()) {}

PlannerPlacementCost::~PlannerPlacementCost() = default;

int32_t PlannerPlacementCost::TensorParallel(int32_t gpus) const {
  auto r = model_.Resolve(gpus);
  return r ? r->strategy.tp : 0;
}

namespace {

// What the planner sees of a placement, as a cache key.
std::string ShapeKey(const planner::Placement& pl) {
  std::string k = fmt::format("{}/{}/{}/{}/{}", pl.gpus, pl.gpus_per_domain, pl.nodes, pl.nvlink_gbps, pl.nvlink_latency_us);
  for (const auto& l : pl.levels) k += fmt::format("|{}:{}:{}:{}", l.span_gpus, l.gbps, l.latency_us, l.hops);
  return k;
}

}  // namespace

std::optional<PlannerPlacementCost::Step> PlannerPlacementCost::StepOn(const WorkloadModel& m,
                                                                       const WorkloadModel::Resolved& r,
                                                                       const ClusterState& c, const Placement& p) {
  if (!c.has_topology()) return std::nullopt;
  std::vector<topo::DomainId> gpus;
  for (const auto& a : p.assignments)
    for (int32_t d : a.gpus) gpus.push_back(c.gpu_domain(a.node, d));
  if (static_cast<int>(gpus.size()) != r.strategy.Gpus()) return std::nullopt;
  const planner::Placement pl = planner::PlacementFromTopology(c.topology(), gpus);
  auto predict = [&](const planner::Strategy& s) -> std::optional<Step> {
    auto pred = planner::Predict(r.model, gpu_, pl, s, cal_);
    if (!pred || pred->step_time_s <= 0) return std::nullopt;
    return Step{pred->step_time_s, pred->comm_share, pred->model_flops_per_step, s};
  };
  if (!m.planned()) return predict(r.strategy);
  const auto key = std::make_pair(m.ClassIndex(r.strategy.Gpus()), ShapeKey(pl));
  if (auto it = planned_.find(key); it != planned_.end()) return it->second;
  planner::SearchOptions opt;
  opt.top = 1;
  opt.global_batch = r.cls->global_batch;
  opt.precision = r.strategy.precision;
  std::optional<Step> best;
  if (auto found = planner::SearchPlans(r.model, gpu_, pl, opt, cal_); found && !found->plans.empty()) {
    const planner::Plan& plan = found->plans.front();
    if (plan.prediction.step_time_s > 0)
      best = Step{plan.prediction.step_time_s, plan.prediction.comm_share, plan.prediction.model_flops_per_step,
                  plan.strategy};
  }
  if (!best) best = predict(r.strategy);  // nothing fits in memory: as launched
  planned_.emplace(key, best);
  return best;
}

std::optional<PlacementEval> PlannerPlacementCost::Evaluate(const ClusterState& c, const Job& job, const Placement& p) {
  if (job.num_gpu < 1 || job.gpu_milli != kMilliPerGpu) return std::nullopt;
  auto r = model_.Resolve(job.num_gpu);
  if (!r) return std::nullopt;
  auto step = StepOn(model_, *r, c, p);
  if (!step) return std::nullopt;
  auto request = ResolveRequest(job, empty_->models());
  if (!request) return std::nullopt;
  // A compact placement of the same request on the empty cluster, and the
  // step of `m`'s layout for the job there (one GPU: any GPU is compact).
  auto compact_of = [&](int which) -> std::optional<Step> {
    const WorkloadModel& m = which == 0 ? model_ : *reference_;
    auto rr = m.Resolve(job.num_gpu);
    if (!rr) return std::nullopt;
    if (job.num_gpu == 1) return StepOn(m, *rr, c, p);
    const auto key = std::make_tuple(which, job.num_gpu, request->gpu_spec_key, job.tp_group);
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
      std::optional<Step> compact;
      if (auto cp = compact_placer_->PlaceGang(ctx, pod)) compact = StepOn(m, *rr, *empty_, *cp);
      it = compact_.emplace(key, compact).first;
    }
    return it->second;
  };
  auto compact = compact_of(0);
  if (!compact || compact->step_s <= 0) return std::nullopt;
  PlacementEval e;
  e.step_s = step->step_s;
  e.comm_share = step->comm_share;
  e.compact_step_s = compact->step_s;
  e.slowdown = std::max(1.0, e.step_s / e.compact_step_s);
  e.run_factor = e.slowdown;
  e.gpus = job.num_gpu;
  e.strategy = step->strategy;
  e.flops_per_s = step->flops_per_step / step->step_s;
  e.peak_bf16_flops = gpu_.PeakFlops(planner::Precision::kBf16).value_or(0);
  e.peak_native_flops = gpu_.PeakFlops(step->strategy.precision).value_or(e.peak_bf16_flops);
  if (e.peak_bf16_flops > 0) e.mfu = e.flops_per_s / (job.num_gpu * e.peak_bf16_flops);
  if (reference_) {
    // The trace's run time is the reference's work on a compact placement:
    // the same FLOPs at this run's rate.
    auto ref = compact_of(1);
    if (!ref || ref->step_s <= 0 || e.flops_per_s <= 0) return std::nullopt;
    e.run_factor = (ref->flops_per_step / ref->step_s) / e.flops_per_s;
  }
  return e;
}

std::optional<double> PlannerPlacementCost::Slowdown(const ClusterState& c, const Job& job, const Placement& p) {
  auto e = Evaluate(c, job, p);
  if (!e) return std::nullopt;
  return e->slowdown;
}

}  // namespace tidal::sim
