// The moving parts of a queue replay — the scheduler, the queue, the
// pending finish events and the jobs that wait or run — and the one way
// they advance. RunQueueSim (queue_sim.h) drives a Replay through the trace
// and measures it; a forward run (start_estimate.h) forks one and drives the
// fork on without arrivals. Both go through the same calls, so a fork sees
// its events in the order the replay itself would:
//
//   now = NextBatch(next arrival);  FinishesAt(now);  Arrive(...)*;  Pass(now)
//
// (time ascending; at equal times all finishes by job id, then the
// arrivals, then one scheduling pass; a finite --max-wait adds wake-ups).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/result.h"
#include "framework/fragmentation.h"
#include "scheduler/queue.h"
#include "scheduler/reservation.h"
#include "scheduler/scheduler.h"
#include "scheduler/tenant_queue.h"
#include "sim/placement_cost.h"
#include "tenancy/tenant_tree.h"
#include "workload/job.h"

namespace tidal::sim {

// What a replay is built from; a fork is built from the same.
struct ReplaySetup {
  std::string placer;                        // plugins::MakePolicyProfile
  std::string mig_placer = "pack";           // MIG jobs' placer (plugins::CheckMigPlacer)
  std::shared_ptr<FragmentationModel> frag;  // fgd's typical pods (null for others)
  QueuePolicy queue = QueuePolicy::kFifoBackfill;
  std::shared_ptr<const tenancy::TenantTree> tenants;  // tenant-queue policies
  TenantQueueOptions tenant_options;                   // tenant-queue policies
  // With a topology: multi-GPU jobs run duration x their placement's
  // slowdown. Borrowed; must outlive the replay and its forks.
  PlannerPlacementCost* cost = nullptr;
  uint64_t seed = 0;
};

class Replay {
 public:
  // An idle replay of `cluster` whose clock starts at `start_s`.
  static Result<std::unique_ptr<Replay>> Make(ClusterState cluster, ReplaySetup setup, int64_t start_s);
  Replay(const Replay&) = delete;
  Replay& operator=(const Replay&) = delete;

  const ClusterState& cluster() const { return scheduler_.cluster(); }
  WorkQueue& queue() { return *queue_; }
  const WorkQueue& queue() const { return *queue_; }
  int64_t now() const { return now_; }  // the time of the last batch
  // Waiting or running jobs by id.
  const std::map<JobId, const Job*>& live() const { return live_; }
  bool running(JobId job) const { return current_end_.contains(job); }
  bool has_finishes() const { return !finishes_.empty(); }

  // Passes while a job waits (--max-wait): (time, submit time of the job it
  // is for).
  void SetWakes(std::vector<std::pair<int64_t, int64_t>> wakes);
  // Zombies (sim/market_sim.h, HoardingScenario): when the work of a job in
  // `tails` ends, it keeps its GPUs idle for that many seconds more (once).
  // The queue is not told: to it the job just runs past its planned end.
  void SetTails(std::unordered_map<JobId, int64_t> tails) { tails_ = std::move(tails); }
  // The jobs whose work ended since the last call and that now idle.
  std::vector<const Job*> TakeIdled() { return std::exchange(idled_, {}); }
  // Ends a running job's run at `now` (a reclaimed zombie): its finish comes
  // in FinishesAt(now), which must follow.
  Status EndNow(JobId job, int64_t now);
  // The job's owner cancels it at `now`: a waiting one leaves the queue at
  // once; a running one ends its run now (its finish comes in
  // FinishesAt(now), which must follow). kNotFound when it is not live.
  Status Cancel(JobId job, int64_t now);
  // An operator drains node `n` (no new work there; its running jobs run
  // on) or returns it to service; the queue forgets what it knew not to
  // fit. Call between a batch's finishes and its pass.
  Status Cordon(NodeId n);
  Status Uncordon(NodeId n);
  // A quota change (TenantQueue::SetTree) from this batch on; forks take
  // the new tree. kFailedPrecondition without a tenant queue.
  Status SetTenants(std::shared_ptr<const tenancy::TenantTree> tree);
  // Returns every GPU in MIG mode whose instances no job holds to the
  // whole-GPU pool (ClusterState::DisableMig); how many it returned.
  Result<int64_t> ReleaseIdleMig();
  // Where the replay's placement evaluations go (metrics); null: nowhere.
  void set_evals(std::unordered_map<JobId, PlacementEval>* evals) { evals_ = evals; }

  // The time of the next batch: the earliest of `next_arrival`
  // (kNoReservation: none), the next finish event and, while a job waits,
  // the next wake-up; kNoReservation when there is none. Moves the clock.
  int64_t NextBatch(int64_t next_arrival);
  // The same without moving the clock.
  int64_t PeekBatch(int64_t next_arrival) const;
  // The finishes at `now` (stale events of preempted runs are skipped);
  // appends the jobs that ended.
  Status FinishesAt(int64_t now, std::vector<const Job*>& finished);
  // A job arrives (the queue may reject it as unresolvable).
  Status Arrive(const Job& job, std::vector<UnresolvableJob>& rejected);
  // One scheduling pass at `now`; records when the started jobs end.
  Result<QueuePass> Pass(int64_t now);

  // A copy of this replay's state that goes its own way: `jobs` are copies
  // of the live jobs (the same ids, every live one once) whose duration_s
  // may differ (redrawn true run times, WorkQueue::Fork). Running jobs get
  // their new ends; wake-ups of jobs not yet submitted are dropped, since a
  // fork knows nothing of the future. The fork owns the copies.
  Result<std::unique_ptr<Replay>> Fork(std::vector<Job> jobs) const;

 private:
  Replay(ReplaySetup setup, Scheduler scheduler, int64_t now);
  void InstallRunTime();

  using Finish = std::pair<int64_t, JobId>;  // (time, job id), earliest first, ties by id
  ReplaySetup setup_;
  Scheduler scheduler_;
  std::unique_ptr<WorkQueue> queue_;
  std::priority_queue<Finish, std::vector<Finish>, std::greater<>> finishes_;
  std::unordered_map<JobId, int64_t> current_end_;  // finish events of preempted runs are stale
  std::vector<std::pair<int64_t, int64_t>> wakes_;  // (time, submit), time ascending
  size_t next_wake_ = 0;
  std::map<JobId, const Job*> live_;
  std::vector<Job> owned_;  // a fork's copies of the live jobs
  int64_t now_ = 0;
  std::unordered_map<JobId, PlacementEval>* evals_ = nullptr;
  std::unordered_map<JobId, int64_t> tails_;  // zombie tails not yet served
  std::vector<const Job*> idled_;
};

}  // namespace tidal::sim
