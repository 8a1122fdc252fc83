#include "sim/replay.h"

#include <algorithm>
#include <cmath>

#include "plugins/registry.h"

namespace tidal::sim {

Replay::Replay(ReplaySetup setup, Scheduler scheduler, int64_t now)
    : setup_(std::move(setup)), scheduler_(std::move(scheduler)), now_(now) {}

Result<std::unique_ptr<Replay>> Replay::Make(ClusterState cluster, ReplaySetup setup, int64_t start_s) {
  TIDAL_ASSIGN_OR_RETURN(Profile profile, plugins::MakePolicyProfile(setup.placer, setup.frag, setup.mig_placer));
  const uint64_t seed = setup.seed;
  std::unique_ptr<Replay> r(new Replay(std::move(setup), Scheduler(std::move(cluster), std::move(profile), seed), start_s));
  if (UsesTenantQueue(r->setup_.queue)) {
    r->queue_ = std::make_unique<TenantQueue>(r->scheduler_, r->setup_.tenants, r->setup_.tenant_options);
  } else {
    r->queue_ = std::make_unique<JobQueue>(r->scheduler_, r->setup_.queue);
  }
  r->InstallRunTime();
  return r;
}

void Replay::InstallRunTime() {
  if (setup_.cost == nullptr) return;
  scheduler_.set_placement_cost(setup_.cost);
  // The placement a job got decides how long it runs (and what it measures).
  queue_->SetRunTime([this](const Job& job, const Placement& p) -> int64_t {
    auto e = setup_.cost->Evaluate(scheduler_.cluster(), job, p);
    if (!e) {
      if (evals_ != nullptr) evals_->erase(job.id);
      return *job.duration_s;
    }
    if (evals_ != nullptr) (*evals_)[job.id] = *e;
    return static_cast<int64_t>(std::ceil(static_cast<double>(*job.duration_s) * e->run_factor - 1e-9));
  });
}

void Replay::SetWakes(std::vector<std::pair<int64_t, int64_t>> wakes) {
  std::sort(wakes.begin(), wakes.end());
  wakes_ = std::move(wakes);
  next_wake_ = 0;
}

int64_t Replay::PeekBatch(int64_t next_arrival) const {
  int64_t now = next_arrival;
  if (!finishes_.empty()) now = std::min(now, finishes_.top().first);
  size_t w = next_wake_;
  while (w < wakes_.size() && wakes_[w].first <= now_) ++w;
  if (w < wakes_.size() && queue_->waiting() > 0) now = std::min(now, wakes_[w].first);
  return now;
}

int64_t Replay::NextBatch(int64_t next_arrival) {
  while (next_wake_ < wakes_.size() && wakes_[next_wake_].first <= now_) ++next_wake_;
  const int64_t now = PeekBatch(next_arrival);
  if (now != kNoReservation) now_ = now;
  return now;
}

Status Replay::FinishesAt(int64_t now, std::vector<const Job*>& finished) {
  while (!finishes_.empty() && finishes_.top().first == now) {
    const JobId id = finishes_.top().second;
    finishes_.pop();
    auto ce = current_end_.find(id);
    if (ce == current_end_.end() || ce->second != now) continue;  // a preempted run's
    const Job* job = live_.at(id);
    if (auto tail = tails_.find(id); tail != tails_.end()) {
      // Its work is done; it keeps its GPUs, idle, for its tail.
      ce->second = now + tail->second;
      finishes_.push({ce->second, id});
      tails_.erase(tail);
      idled_.push_back(job);
      continue;
    }
    current_end_.erase(ce);
    TIDAL_RETURN_IF_ERROR(queue_->Finish(*job));
    live_.erase(id);
    finished.push_back(job);
  }
  return Ok();
}

Status Replay::EndNow(JobId job, int64_t now) {
  auto ce = current_end_.find(job);
  if (ce == current_end_.end()) return MakeError(ErrorCode::kInternal, "job {} is not running; it cannot end now", job);
  ce->second = now;
  finishes_.push({now, job});
  tails_.erase(job);
  return Ok();
}

Status Replay::Cancel(JobId job, int64_t now) {
  if (!live_.contains(job)) return MakeError(ErrorCode::kNotFound, "job {} is neither waiting nor running", job);
  if (current_end_.contains(job)) {
    TIDAL_RETURN_IF_ERROR(queue_->CutRun(job, now));
    return EndNow(job, now);
  }
  TIDAL_RETURN_IF_ERROR(queue_->Withdraw(job));
  live_.erase(job);
  return Ok();
}

Status Replay::Cordon(NodeId n) {
  TIDAL_RETURN_IF_ERROR(scheduler_.Cordon(n));
  queue_->CapacityChanged();
  return Ok();
}

Status Replay::Uncordon(NodeId n) {
  TIDAL_RETURN_IF_ERROR(scheduler_.Uncordon(n));
  queue_->CapacityChanged();
  return Ok();
}

Status Replay::SetTenants(std::shared_ptr<const tenancy::TenantTree> tree) {
  auto* tq = dynamic_cast<TenantQueue*>(queue_.get());
  if (tq == nullptr) return MakeError(ErrorCode::kFailedPrecondition, "quotas apply to the tenant queues; this replay runs a FIFO queue");
  TIDAL_RETURN_IF_ERROR(tq->SetTree(tree));
  setup_.tenants = std::move(tree);
  return Ok();
}

Status Replay::Arrive(const Job& job, std::vector<UnresolvableJob>& rejected) {
  const size_t before = rejected.size();
  TIDAL_RETURN_IF_ERROR(queue_->Push(job, rejected));
  if (rejected.size() == before) live_[job.id] = &job;
  return Ok();
}

Result<QueuePass> Replay::Pass(int64_t now) {
  TIDAL_ASSIGN_OR_RETURN(QueuePass pass, queue_->Schedule(now));
  for (const PreemptedJob& pj : pass.preempted) current_end_.erase(pj.job->id);
  for (size_t i = 0; i < pass.started.size(); ++i) {
    finishes_.push({pass.ends[i], pass.started[i]->id});
    current_end_[pass.started[i]->id] = pass.ends[i];
  }
  for (const UnresolvableJob& u : pass.unresolvable) live_.erase(u.job->id);
  return pass;
}

Result<std::unique_ptr<Replay>> Replay::Fork(std::vector<Job> jobs) const {
  if (jobs.size() != live_.size()) {
    return MakeError(ErrorCode::kInternal, "a fork needs a copy of each of the {} live jobs, got {}", live_.size(), jobs.size());
  }
  std::unordered_map<JobId, const Job*> copies;
  copies.reserve(jobs.size());
  for (const Job& j : jobs) {
    if (!live_.contains(j.id) || !copies.emplace(j.id, &j).second) {
      return MakeError(ErrorCode::kInternal, "a fork got job {}, which is not live or given twice", j.id);
    }
  }
  // Moving the vector keeps its elements where they are.
  auto lookup = [&copies](JobId id) -> const Job* {
    auto it = copies.find(id);
    return it == copies.end() ? nullptr : it->second;
  };
  TIDAL_ASSIGN_OR_RETURN(Profile profile, plugins::MakePolicyProfile(setup_.placer, setup_.frag, setup_.mig_placer));
  std::unique_ptr<Replay> f(new Replay(setup_, scheduler_.Fork(std::move(profile), lookup), now_));
  f->owned_ = std::move(jobs);
  for (const auto& [id, j] : copies) f->live_[id] = j;
  f->queue_ = queue_->Fork(f->scheduler_, lookup);
  f->InstallRunTime();
  // Stale events stay (the replay would run a pass then too); a running
  // job's live event moves to its run's new end.
  auto heap = finishes_;
  for (; !heap.empty(); heap.pop()) {
    const auto [t, id] = heap.top();
    auto ce = current_end_.find(id);
    if (ce == current_end_.end() || ce->second != t) {
      f->finishes_.push({t, id});
      continue;
    }
    const int64_t end = std::max(now_, f->queue_->RunEnd(id));
    f->finishes_.push({end, id});
    f->current_end_[id] = end;
  }
  for (size_t i = next_wake_; i < wakes_.size(); ++i)
    if (wakes_[i].second <= now_) f->wakes_.push_back(wakes_[i]);
  return f;
}

Result<int64_t> Replay::ReleaseIdleMig() {
  const ClusterState& c = scheduler_.cluster();
  if (c.idle_mig_gpus() == 0) return int64_t{0};  // most passes: no scan
  int64_t released = 0;
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    if (c.mig_gpus(n) == 0) continue;
    for (int32_t g = 0; g < c.gpu_count(n); ++g) {
      const MigDevice* d = c.mig_device(n, g);
      if (!d || d->BusyCompute() > 0) continue;
      TIDAL_RETURN_IF_ERROR(scheduler_.DisableMig(n, g));
      ++released;
    }
  }
  return released;
}

}  // namespace tidal::sim
