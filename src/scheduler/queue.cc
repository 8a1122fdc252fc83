#include "scheduler/queue.h"

#include "framework/gang.h"

#include <algorithm>

namespace tidal {

namespace {
constexpr std::pair<QueuePolicy, std::string_view> kQueuePolicies[] = {
    {QueuePolicy::kFifo, "fifo"},
    {QueuePolicy::kFifoBackfill, "fifo-backfill"},
    {QueuePolicy::kStaticPartitions, "static-partitions"},
    {QueuePolicy::kSlurmMultifactor, "slurm-multifactor"},
    {QueuePolicy::kKueue, "kueue"},
    {QueuePolicy::kLas, "las"},
    {QueuePolicy::kTidal, "tidal"},
};
}  // namespace

Result<QueuePolicy> ParseQueuePolicy(std::string_view name) {
  for (const auto& [p, n] : kQueuePolicies)
    if (n == name) return p;
  return MakeError(ErrorCode::kInvalidArgument,
                   "unknown queue policy '{}'; choose fifo, fifo-backfill, static-partitions, slurm-multifactor, kueue, "
                   "las or tidal",
                   name);
}

std::string_view QueuePolicyName(QueuePolicy policy) {
  for (const auto& [p, n] : kQueuePolicies)
    if (p == policy) return n;
  return "?";
}

bool UsesTenantQueue(QueuePolicy policy) { return policy != QueuePolicy::kFifo && policy != QueuePolicy::kFifoBackfill; }

JobShape JobShape::Of(const PodRequest& pod) {
  const Job& j = *pod.job;
  return JobShape{pod.cpu_milli(),
                  pod.memory_mib(),
                  pod.num_gpu(),
                  pod.gpu_milli(),
                  j.single_node,
                  pod.gpu_spec_key,
                  j.tp_group,
                  j.topo_required ? topo::LevelIndex(*j.topo_required) : -1,
                  j.topo_preferred ? topo::LevelIndex(*j.topo_preferred) : -1,
                  j.topo_max_wait_s,
                  static_cast<int64_t>(j.topo_slowdown_ok * 1000 + 0.5),
                  j.mig_profile};
}

// --- JobQueue -------------------------------------------------------------

JobQueue::JobQueue(Scheduler& scheduler, QueuePolicy policy) : scheduler_(&scheduler), policy_(policy) {}

void JobQueue::AddShape(const Entry& e) {
  auto [it, inserted] = shapes_.try_emplace(e.shape, WaitingShape{e.request, 0});
  ++it->second.count;
  if (inserted) ++shapes_version_;
  const auto k = static_cast<size_t>(e.shape_id);
  ++waiting_by_id_[k];
  durations_by_id_[k].insert(e.job->PlannedDuration());
}

void JobQueue::RemoveShape(const Entry& e) {
  const auto k = static_cast<size_t>(e.shape_id);
  --waiting_by_id_[k];
  durations_by_id_[k].erase(durations_by_id_[k].find(e.job->PlannedDuration()));
  auto it = shapes_.find(e.shape);
  if (it == shapes_.end()) return;
  if (--it->second.count == 0) {
    shapes_.erase(it);
    ++shapes_version_;
  } else if (it->second.request.job == e.job) {
    // Keep the representative pointing at a job that is still waiting.
    for (const Entry& w : waiting_) {
      if (w.job != e.job && w.shape == e.shape) {
        it->second.request = w.request;
        break;
      }
    }
  }
}

JobQueue::EntryList::iterator JobQueue::Remove(EntryList::iterator it) {
  RemoveShape(*it);  // skips *it when it looks for a new representative
  return waiting_.erase(it);
}

Status JobQueue::Push(const Job& job, std::vector<UnresolvableJob>& unresolvable) {
  if (!job.duration_s) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "job '{}' ({}) has no duration; a queue needs each job's run time to know when it ends",
                     job.name, job.source);
  }
  auto request = ResolveRequest(job, scheduler_->cluster().models());
  if (!request) {
    unresolvable.push_back({&job, request.error().message});
    return Ok();
  }
  Entry e{.job = &job, .request = std::move(*request), .seq = next_seq_++};
  e.shape = JobShape::Of(e.request);
  auto [id, added] = shape_ids_.try_emplace(e.shape, static_cast<int32_t>(shape_ids_.size()));
  e.shape_id = id->second;
  if (added) {
    waiting_by_id_.push_back(0);
    durations_by_id_.emplace_back();
    unfit_.push_back(0);
    delays_head_.push_back(0);
    deferred_.push_back(0);
  }
  waiting_.push_back(std::move(e));
  // The PodRequest points at the job, which the caller keeps alive.
  AddShape(waiting_.back());
  return Ok();
}

Status JobQueue::Withdraw(JobId job) {
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (it->job->id != job) continue;
    // A new head gets a fresh reservation in the next pass (Backfill sees
    // the head's seq change); capacity did not change, so unfit_ stays.
    Remove(it);
    return Ok();
  }
  return MakeError(ErrorCode::kNotFound, "job {} is not waiting in the queue; a running job is ended, not withdrawn", job);
}

Status JobQueue::CutRun(JobId job, int64_t now) {
  auto it = running_jobs_.find(job);
  if (it == running_jobs_.end()) return MakeError(ErrorCode::kNotFound, "job {} is not running; its run cannot end early", job);
  if (now < it->second.start) {
    return MakeError(ErrorCode::kInvalidArgument, "job {} started at {}; its run cannot end before that ({})", job,
                     it->second.start, now);
  }
  it->second.end = std::min(it->second.end, now);
  return Ok();
}

Status JobQueue::Finish(const Job& job) {
  auto it = running_jobs_.find(job.id);
  if (it == running_jobs_.end()) {
    return MakeError(ErrorCode::kNotFound, "job '{}' ({}) is not running; it cannot finish", job.name, job.source);
  }
  TIDAL_RETURN_IF_ERROR(scheduler_->Release(job));
  running_.erase({it->second.planned_end, job.id});
  running_jobs_.erase(it);
  // Capacity grew: every earlier "does not fit" and the reservation are stale.
  std::fill(unfit_.begin(), unfit_.end(), 0);
  std::fill(delays_head_.begin(), delays_head_.end(), 0);
  reservation_valid_ = false;
  scanned_below_ = 0;
  return Ok();
}

void JobQueue::CapacityChanged() {
  std::fill(unfit_.begin(), unfit_.end(), 0);
  std::fill(delays_head_.begin(), delays_head_.end(), 0);
  reservation_valid_ = false;
  scanned_below_ = 0;
}

int64_t JobQueue::RunTimeOf(const Job& job, const Placement& p) const {
  return run_time_ ? run_time_(job, p) : *job.duration_s;
}

void JobQueue::MarkStarted(const Entry& e, int64_t now, int64_t run_s, QueuePass& pass) {
  // Reservations plan with the estimated end; the job really ends at `end`.
  const int64_t planned = now + std::max(run_s, e.job->PlannedRun(run_s));
  running_.insert({planned, e.job->id});
  running_jobs_[e.job->id] = {planned, e.job, now, now + run_s};
  pass.started.push_back(e.job);
  pass.ends.push_back(now + run_s);
}

std::unique_ptr<WorkQueue> JobQueue::Fork(Scheduler& scheduler, const JobLookup& jobs) const {
  std::unique_ptr<JobQueue> f(new JobQueue(*this));
  f->scheduler_ = &scheduler;
  f->run_time_ = nullptr;
  auto remap = [&](const Job* j) {
    const Job* n = j != nullptr ? jobs(j->id) : nullptr;
    return n != nullptr ? n : j;
  };
  for (Entry& e : f->waiting_) e.job = e.request.job = remap(e.job);
  for (auto& [shape, w] : f->shapes_) w.request.job = remap(w.request.job);
  for (auto& [id, r] : f->running_jobs_) {
    const Job* n = remap(r.job);
    // A new run time stretches the run as the placement stretched the old.
    const int64_t d = *r.job->duration_s, nd = *n->duration_s;
    if (nd != d) {
      const int64_t run = r.end - r.start;
      r.end = r.start + (d > 0 ? (run * nd + d - 1) / d : nd);
    }
    r.job = n;
  }
  return f;
}

int64_t JobQueue::RunEnd(JobId job) const {
  auto it = running_jobs_.find(job);
  return it == running_jobs_.end() ? -1 : it->second.end;
}

int64_t JobQueue::RunTimeAtLeast(JobId job, int64_t now) const {
  if (auto it = running_jobs_.find(job); it != running_jobs_.end()) {
    const Running& r = it->second;
    const int64_t run = r.end - r.start;
    // Base seconds done: the elapsed share of the run (the run is the base
    // run time stretched by the placement).
    const int64_t done = run > 0 ? (now - r.start) * *r.job->duration_s / run : 0;
    return done + 1;
  }
  return 0;  // waiting (this queue never preempts), or not held
}

void JobQueue::ComputeReservation(const Entry& head, int64_t now) {
  reservation_valid_ = true;
  reservation_head_seq_ = head.seq;
  if (largest_node_gpus_ < 0) largest_node_gpus_ = gang::LargestNodeGpus(scheduler_->cluster());
  reservation_.Compute(scheduler_->cluster(), running_, head.request, now,
                       {.compact = head_deferred_,
                        .gangs_gather = scheduler_->framework().profile().gang != nullptr,
                        .largest_node_gpus = largest_node_gpus_});
}

Status JobQueue::Backfill(int64_t now, QueuePass& pass) {
  const Entry& head = waiting_.front();
  if (!reservation_valid_ || reservation_head_seq_ != head.seq || reservation_.compact() != head_deferred_) {
    std::fill(delays_head_.begin(), delays_head_.end(), 0);
    scanned_below_ = 0;
    ComputeReservation(head, now);
  }
  const int64_t res = reservation_.time_s();
  // A waiting shape is blocked if none of its jobs can start in this pass.
  auto blocked = [&](size_t k) {
    if (waiting_by_id_[k] == 0) return false;
    if (unfit_[k]) return true;
    return delays_head_[k] && res != kNoReservation && now + *durations_by_id_[k].begin() > res;
  };
  size_t blocked_shapes = 0;
  for (size_t k = 0; k < waiting_by_id_.size(); ++k) blocked_shapes += blocked(k);
  // Runs `change` and keeps blocked_shapes right for shape k.
  auto update = [&](size_t k, auto&& change) {
    const bool before = blocked(k);
    change();
    blocked_shapes = blocked_shapes - before + blocked(k);
  };

  // Entries already scanned under this reservation form a prefix (new jobs
  // are appended): start after it, walking back from the end so arrival-only
  // passes cost only the new jobs.
  // A job deferred in an earlier pass is not blocked by capacity: its wait
  // may be over without any release, so the scan starts again from the top.
  if (deferred_in_backfill_) {
    scanned_below_ = 0;
    deferred_in_backfill_ = false;
  }
  const auto first = std::next(waiting_.begin());
  auto it = first;
  if (it->seq < scanned_below_) {
    it = waiting_.end();
    while (it != first && std::prev(it)->seq >= scanned_below_) --it;
  }
  while (it != waiting_.end()) {
    if (blocked_shapes == shapes_.size()) break;  // nothing waiting can start now
    const Entry& e = *it;
    const auto k = static_cast<size_t>(e.shape_id);
    if (unfit_[k]) {
      ++it;
      continue;
    }
    // Ends by the reservation (finishes precede starts at equal times)?
    const bool short_job = res == kNoReservation || now + e.job->PlannedDuration() <= res;
    if (!short_job && delays_head_[k]) {
      ++it;
      continue;
    }
    if (deferred_[k]) {
      ++it;
      continue;
    }
    // Long jobs are steered off the nodes the head's reservation counts on.
    if (!short_job && reservation_.fitting_nodes() > 0) scheduler_->set_reserved_nodes(reservation_.fits());
    auto bound = scheduler_->ScheduleAndBind(*e.job);
    scheduler_->set_reserved_nodes({});
    if (!bound) {
      if (bound.error().code == ErrorCode::kUnschedulable) {
        update(k, [&] { unfit_[k] = 1; });
        ++it;
        continue;
      }
      if (bound.error().code == ErrorCode::kDeferred) {
        deferred_[k] = 1;
        deferred_in_backfill_ = true;
        ++it;
        continue;
      }
      if (bound.error().code == ErrorCode::kUnresolvable) {
        pass.unresolvable.push_back({e.job, bound.error().message});
        update(k, [&] { it = Remove(it); });
        continue;
      }
      return std::unexpected(bound.error());
    }
    // The run time on the placement it got (a worse placement runs longer).
    const int64_t run_s = RunTimeOf(*e.job, **bound);
    const bool ends_in_time = res == kNoReservation || now + e.job->PlannedRun(run_s) <= res;
    if (!ends_in_time && !reservation_.Take(head.request, **bound)) {
      // It would take capacity the head needs at its reservation: undo. The
      // scheduler is the only writer, so the what-if goes through it too.
      TIDAL_RETURN_IF_ERROR(scheduler_->Release(*e.job));
      if (!short_job) update(k, [&] { delays_head_[k] = 1; });
      ++it;
      continue;
    }
    MarkStarted(e, now, run_s, pass);
    ++pass.backfilled;
    update(k, [&] { it = Remove(it); });
  }
  scanned_below_ = next_seq_;
  return Ok();
}

Result<QueuePass> JobQueue::Schedule(int64_t now) {
  QueuePass pass;
  scheduler_->set_now(now);
  std::fill(deferred_.begin(), deferred_.end(), 0);
  head_deferred_ = false;
  // FIFO part: start heads while they fit.
  while (!waiting_.empty()) {
    const Entry& head = waiting_.front();
    if (unfit_[static_cast<size_t>(head.shape_id)]) break;  // still does not fit
    auto bound = scheduler_->ScheduleAndBind(*head.job);
    if (bound) {
      MarkStarted(head, now, RunTimeOf(*head.job, **bound), pass);
      Remove(waiting_.begin());
      continue;
    }
    if (bound.error().code == ErrorCode::kUnresolvable) {
      pass.unresolvable.push_back({head.job, bound.error().message});
      Remove(waiting_.begin());
      continue;
    }
    if (bound.error().code == ErrorCode::kDeferred) {
      // It fits, but its placer waits for a compact placement: it stays the
      // head, and its reservation is for a compact placement (see HeadFits).
      // Not marked unfit: waiting longer may change the placer's mind.
      head_deferred_ = true;
      deferred_[static_cast<size_t>(head.shape_id)] = 1;
      break;
    }
    if (bound.error().code != ErrorCode::kUnschedulable) return std::unexpected(bound.error());
    if (running_.empty()) {
      // The cluster is empty and it still does not fit: it never will.
      pass.unresolvable.push_back(
          {head.job, fmt::format("job '{}' ({}) does not fit even on the empty cluster ({}); shrink the "
                                 "request or add capacity",
                                 head.job->name, head.job->source, bound.error().message)});
      Remove(waiting_.begin());
      continue;
    }
    unfit_[static_cast<size_t>(head.shape_id)] = 1;
    break;
  }
  if (policy_ == QueuePolicy::kFifoBackfill && waiting_.size() > 1) {
    TIDAL_RETURN_IF_ERROR(Backfill(now, pass));
  }
  return pass;
}

}  // namespace tidal
