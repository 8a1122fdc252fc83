// Job queues over the Scheduler: FIFO and FIFO + EASY backfill.
//
// The queue owns the waiting jobs (in arrival order) and the set of running
// jobs with their known end times; the Scheduler stays the only writer of
// ClusterState (the queue binds through ScheduleAndBind and frees through
// Release). A driver (the simulator's virtual clock, later the daemon's wall
// clock) calls Push on arrival, Finish when a job ends and Schedule(now) after
// each batch of events.
//
// FIFO: start the head while it fits; a head that does not fit blocks all.
// A head whose placer defers it (ErrorCode::kDeferred: it fits, but waits for
// a compact placement) blocks like one that does not fit, and its backfill
// reservation is for a compact placement: on one node when it fits on one.
// FIFO + EASY backfill (Lifka '95; Mu'alem & Feitelson '01): when the head is
// blocked it gets a reservation at the earliest time the running jobs' known
// end times free enough capacity for it; a later job may start now only if
// it fits now and either ends by the reservation or leaves enough capacity at
// the reservation for the head. End times are start + the job's duration_s
// (in a trace replay: exact run times, i.e. perfect user estimates).
//
// "Capacity for the head" at a future time is judged on a detached copy of
// the free state with the node filters' rules (CPU, memory, GPU model, devices
// with enough free milli-GPU; a gang may also gather whole free GPUs across
// nodes of allowed models, as GangPack does). The real placer decides the
// actual placement when the time comes; if it disagrees, the head simply
// waits for the next event and gets a fresh reservation.
//
// Invariants and exactness arguments the implementation relies on:
//  * Between two releases capacity only shrinks, so a request shape that did
//    not fit once does not fit until the next release (a flag per interned
//    shape, cleared on release). Shapes are compared on everything the
//    filters read.
//  * A shape rejected because it would delay the reservation is not retried
//    until the reservation changes (head change or release). This is a policy
//    rule, not an approximation of one: it is conservative (the head is never
//    delayed) and keeps a pass at O(distinct shapes) scheduling cycles. A
//    pass stops as soon as no waiting shape can start, and a pass with no
//    release since the last one only looks at the jobs that arrived since.
//  * With exact run times and the filters' view matching the placer's (true
//    for the framework's filters and GangPack), a head starts no later than
//    the first reservation it got (checked by a property test).
//  * A job that does not fit while nothing runs can never fit (the cluster is
//    empty): it is reported as unresolvable and removed, so no queue blocks
//    forever.
#pragma once

#include <compare>
#include <functional>
#include <cstdint>
#include <limits>
#include <list>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "framework/plugin.h"
#include "scheduler/explain.h"
#include "scheduler/reservation.h"
#include "scheduler/scheduler.h"
#include "workload/job.h"

namespace tidal {

// fifo and fifo-backfill run on JobQueue (one pool, no tenants); the others
// on TenantQueue (tenant_queue.h: TenantQueueOptionsFor says how each is
// configured).
enum class QueuePolicy { kFifo, kFifoBackfill, kStaticPartitions, kSlurmMultifactor, kKueue, kLas, kTidal };

Result<QueuePolicy> ParseQueuePolicy(std::string_view name);
std::string_view QueuePolicyName(QueuePolicy policy);
bool UsesTenantQueue(QueuePolicy policy);


// Everything the filters and the gang placer read from a request: two jobs
// with equal shapes fit exactly the same nodes.
struct JobShape {
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int32_t num_gpu = 0;
  int32_t gpu_milli = 0;
  bool single_node = true;
  std::string gpu_spec_key;  // models joined by '|', "" = any
  // What topology placers read (Job's topology fields).
  int32_t tp_group = 0;
  int topo_required = -1;
  int topo_preferred = -1;
  int64_t topo_max_wait_s = 0;
  int64_t topo_slowdown_ok_milli = 1000;
  std::string mig_profile;

  static JobShape Of(const PodRequest& pod);
  auto operator<=>(const JobShape&) const = default;
};

struct UnresolvableJob {
  const Job* job = nullptr;
  std::string reason;
};

// A running job the queue evicted: it is waiting again and resumes from its
// last checkpoint; `lost_gpu_s` is the GPU-seconds of work it must redo
// plus its restart penalty. `by` is the job it made room for; `notice`
// whether it was told to checkpoint first (it stopped once that was
// written: the preemptor waits for the write).
struct PreemptedJob {
  const Job* job = nullptr;
  int64_t lost_gpu_s = 0;
  const Job* by = nullptr;
  bool notice = false;
};

// What one Schedule() pass did, in order.
struct QueuePass {
  std::vector<const Job*> started;
  std::vector<int64_t> ends;  // end time of each started job (its run time on the placement it got)
  std::vector<UnresolvableJob> unresolvable;
  std::vector<PreemptedJob> preempted;  // evicted in this pass (before `started` took their room)
  int64_t backfilled = 0;  // of `started`, those that jumped a blocked head
  // Victim sets tried on the placer (victims released, the job placed, the
  // victims bound again when it failed): the costly part of preemption.
  int64_t what_ifs = 0;
  // Victim searches that read the running jobs (those a quota check over
  // every possible victim, and for LAS's rules the most any running job has
  // attained, did not end first).
  int64_t victim_scans = 0;
};

struct WaitingShape {
  PodRequest request;  // of one waiting job of this shape (the oldest)
  int64_t count = 0;
};

// What a driver (the simulator, later the daemon) needs of a queue.
class WorkQueue {
 public:
  virtual ~WorkQueue() = default;
  virtual Status Push(const Job& job, std::vector<UnresolvableJob>& unresolvable) = 0;
  virtual Status Finish(const Job& job) = 0;
  // A waiting job leaves the queue without running (cancelled by its
  // owner); kNotFound when it is not waiting (it runs: end its run instead).
  virtual Status Withdraw(JobId job) = 0;
  // A running job's current run ends at `now` (>= its start), before its
  // planned end (cancelled while running): what the queue accounts for the
  // run stops there. Finish must follow at `now`.
  virtual Status CutRun(JobId job, int64_t now) = 0;
  // The cluster's capacity changed outside the queue (a node cordoned or
  // uncordoned): every earlier "does not fit" and any reservation are stale.
  virtual void CapacityChanged() = 0;
  using RunTime = std::function<int64_t(const Job&, const Placement&)>;
  virtual void SetRunTime(RunTime run_time) = 0;
  virtual Result<QueuePass> Schedule(int64_t now) = 0;
  virtual size_t waiting() const = 0;
  virtual size_t running() const = 0;
  virtual const std::map<JobShape, WaitingShape>& waiting_shapes() const = 0;
  virtual uint64_t shapes_version() const = 0;
  virtual const Job* head() const = 0;
  virtual int64_t reservation_s() const = 0;
  // Why a waiting job has not started (scheduler/explain.h).
  virtual std::vector<BlockingCause> Explain(const Job& job) = 0;

  // --- Forward runs (sim/start_estimate.h) ---------------------------------
  // The fork's copy of a live (waiting or running) job by id; nullptr for
  // any other id.
  using JobLookup = std::function<const Job*(JobId)>;
  // A copy of this queue that runs on `scheduler` (a Scheduler::Fork of the
  // one this queue runs on) and whose entries point at `jobs(id)`. A copy
  // may carry another duration_s (a redrawn true run time): the queue keeps
  // the work each job has done so far and recomputes from it what is left
  // and when a running job's current run ends (RunEnd). What the queue
  // plans with is unchanged: the jobs' estimate_s, and the planned ends of
  // the running jobs. The copy has no run-time function: set one.
  virtual std::unique_ptr<WorkQueue> Fork(Scheduler& scheduler, const JobLookup& jobs) const = 0;
  // When a running job's current run ends (its QueuePass::ends entry, or
  // its new end after a Fork with another run time); -1 if not running.
  virtual int64_t RunEnd(JobId job) const = 0;
  // The least a live job's true run time (duration_s, base seconds) can be
  // given what the queue has seen by `now`: the work it has done (the
  // checkpointed work of earlier runs plus its current run's progress) plus
  // one second if it is known not to be done (it runs, or was preempted
  // with work left); 0 for a job that never ran or that the queue does not
  // hold.
  virtual int64_t RunTimeAtLeast(JobId job, int64_t now) const = 0;
};

class JobQueue : public WorkQueue {
 public:
  JobQueue(Scheduler& scheduler, QueuePolicy policy);

  QueuePolicy policy() const { return policy_; }

  // Enqueues a job that arrived; it waits behind every earlier Push. The job
  // must outlive its time in the queue and its run. A job whose GPU models do
  // not exist in this cluster is not queued: it is returned as unresolvable.
  Status Push(const Job& job, std::vector<UnresolvableJob>& unresolvable) override;

  // The running job ended: frees its capacity.
  Status Finish(const Job& job) override;
  Status Withdraw(JobId job) override;
  Status CutRun(JobId job, int64_t now) override;
  void CapacityChanged() override;

  // How long a job runs on the placement it got (default: its duration_s).
  // The simulator stretches multi-GPU jobs by their placement slowdown.
  void SetRunTime(RunTime run_time) override { run_time_ = std::move(run_time); }

  // One scheduling pass at virtual time `now` (seconds).
  Result<QueuePass> Schedule(int64_t now) override;

  size_t waiting() const override { return waiting_.size(); }
  size_t running() const override { return running_.size(); }
  // Distinct shapes of the waiting jobs (deterministic order).
  const std::map<JobShape, WaitingShape>& waiting_shapes() const override { return shapes_; }
  // Increases whenever the set of distinct waiting shapes changes.
  uint64_t shapes_version() const override { return shapes_version_; }
  // The job at the head of the queue, nullptr if none waits.
  const Job* head() const override { return waiting_.empty() ? nullptr : waiting_.front().job; }
  // The current head's reservation (backfill only; computed when a pass has
  // later jobs to consider), kNoReservation if there is none.
  std::vector<BlockingCause> Explain(const Job& job) override {
    const int64_t res = reservation_s();
    return ExplainPending(*scheduler_, job, {.reserved_for = head(), .reservation_s = res == kNoReservation ? -1 : res});
  }
  int64_t reservation_s() const override {
    return reservation_valid_ && !waiting_.empty() && reservation_head_seq_ == waiting_.front().seq
               ? reservation_.time_s()
               : kNoReservation;
  }
  std::unique_ptr<WorkQueue> Fork(Scheduler& scheduler, const JobLookup& jobs) const override;
  int64_t RunEnd(JobId job) const override;
  int64_t RunTimeAtLeast(JobId job, int64_t now) const override;

 private:
  JobQueue(const JobQueue&) = default;  // for Fork, which rebinds the pointers

  struct Entry {
    const Job* job = nullptr;
    PodRequest request;
    JobShape shape;
    int32_t shape_id = 0;  // interned: flags below are indexed by it
    uint64_t seq = 0;
  };
  using EntryList = std::list<Entry>;

  void AddShape(const Entry& e);
  void RemoveShape(const Entry& e);
  EntryList::iterator Remove(EntryList::iterator it);
  int64_t RunTimeOf(const Job& job, const Placement& p) const;
  void MarkStarted(const Entry& e, int64_t now, int64_t run_s, QueuePass& pass);
  void ComputeReservation(const Entry& head, int64_t now);
  Status Backfill(int64_t now, QueuePass& pass);

  Scheduler* scheduler_;  // a pointer so that Fork can copy the rest and rebind it
  QueuePolicy policy_;
  RunTime run_time_;
  EntryList waiting_;
  uint64_t next_seq_ = 0;
  std::map<JobShape, WaitingShape> shapes_;
  uint64_t shapes_version_ = 0;

  std::set<std::pair<int64_t, JobId>> running_;  // (planned end time, job id)
  struct Running {
    int64_t planned_end = 0;
    const Job* job = nullptr;
    int64_t start = 0, end = 0;  // the current run, as it really goes
  };
  std::unordered_map<JobId, Running> running_jobs_;

  std::map<JobShape, int32_t> shape_ids_;
  std::vector<int64_t> waiting_by_id_;  // waiting jobs per interned shape
  // Run times of the waiting jobs per interned shape: a shape that would
  // delay the head can still start its jobs that end by the reservation.
  std::vector<std::multiset<int64_t>> durations_by_id_;
  // Shapes that failed to fit since the last release (capacity only shrank).
  // When every waiting shape is blocked (does not fit, or would delay the
  // head with all its waiting jobs), a pass stops scanning the queue.
  std::vector<uint8_t> unfit_;
  // Shapes that would delay the current reservation (long jobs only).
  std::vector<uint8_t> delays_head_;
  // Shapes whose oldest job's placer deferred it in this pass.
  std::vector<uint8_t> deferred_;
  bool head_deferred_ = false;     // the head's placer deferred it this pass
  bool deferred_in_backfill_ = false;  // a backfill candidate was deferred: rescan next pass
  int32_t largest_node_gpus_ = -1;  // computed once
  // Backfill candidates with seq < scanned_below_ were examined under the
  // current reservation and state-since-release.
  uint64_t scanned_below_ = 0;
  // The head's reservation (valid until a release or a head change).
  bool reservation_valid_ = false;
  uint64_t reservation_head_seq_ = 0;
  BackfillReservation reservation_;
};

}  // namespace tidal
