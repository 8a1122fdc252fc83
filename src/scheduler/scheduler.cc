#include "scheduler/scheduler.h"

namespace tidal {

Result<Placement> Scheduler::TrySchedule(const Job& job) {
  TIDAL_ASSIGN_OR_RETURN(PodRequest pod, ResolveRequest(job, cluster_.models()));
  CycleContext ctx{cluster_, rng_, now_s_, cost_, nullptr, reserved_, no_defer_, no_defer_slowdown_max_};
  return framework_.Schedule(ctx, pod);
}

Result<Placement> Scheduler::Probe(const Job& job) {
  TIDAL_ASSIGN_OR_RETURN(PodRequest pod, ResolveRequest(job, cluster_.models()));
  Rng rng = rng_;
  CycleContext ctx{cluster_, rng, now_s_, cost_, nullptr, reserved_, no_defer_, no_defer_slowdown_max_};
  return framework_.Schedule(ctx, pod);
}

Result<const Placement*> Scheduler::ScheduleAndBind(const Job& job) {
  TIDAL_ASSIGN_OR_RETURN(Placement p, TrySchedule(job));
  TIDAL_RETURN_IF_ERROR(cluster_.Bind(job.id, std::move(p)));
  const Placement* bound = cluster_.FindAllocation(job.id);
  framework_.NotifyBound(cluster_, job, *bound);
  return bound;
}

Status Scheduler::Bind(const Job& job, Placement placement) {
  TIDAL_RETURN_IF_ERROR(cluster_.Bind(job.id, std::move(placement)));
  framework_.NotifyBound(cluster_, job, *cluster_.FindAllocation(job.id));
  return Ok();
}

Scheduler Scheduler::Fork(Profile profile, const std::function<const Job*(JobId)>& job_of) const {
  Scheduler s(cluster_, std::move(profile), 0);
  s.rng_ = rng_;
  s.now_s_ = now_s_;
  s.cost_ = cost_;
  s.framework_.SetNodePriority(framework_.node_priority());
  if (!s.framework_.profile().reserves.empty()) {
    for (const auto& [id, p] : s.cluster_.allocations()) s.framework_.NotifyBound(s.cluster_, *job_of(id), p);
  }
  return s;
}

Status Scheduler::Release(const Job& job) {
  const Placement* p = cluster_.FindAllocation(job.id);
  if (p == nullptr) return MakeError(ErrorCode::kNotFound, "job '{}' holds no allocation", job.name);
  Placement copy = *p;
  TIDAL_RETURN_IF_ERROR(cluster_.Unbind(job.id));
  framework_.NotifyUnbound(cluster_, job, copy);
  return Ok();
}

}  // namespace tidal
