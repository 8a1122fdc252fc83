// The tenant queue: one shared pool in which every tenant keeps a
// guaranteed floor, borrows what others leave idle and gets it back by
// preemption when it needs it (docs/tenancy.md). The same object serves the
// simulator and, later, the daemon; the Scheduler stays the only writer of
// ClusterState.
//
// A pass at time `now`:
//  1. orders the waiting jobs by the policy (see TenantOrder);
//  2. walks them in order. A job is admitted if its request fits its
//     tenant's quota (tenancy::TenantTree::Fits: own idle floor, or
//     borrowing within the cohort's idle quota and its borrowing limit);
//     `guaranteed`-tier jobs only within their own floor. A job the quota
//     does not admit is skipped (it does not block other tenants) unless it
//     has a right to reclaim: it fits within its tenant's own floor, so the
//     quota it lacks is held by borrowers — then their jobs are preempted.
//  3. an admitted job is placed by the profile's placer. If it does not fit
//     and it has a right to capacity (reclaim of its floor, or a higher
//     priority than running jobs of its tenant; LAS: a higher queue than
//     running jobs anywhere), the smallest-cost victim set inside the domain
//     it will use is sought (scheduler/preemption.h) and checked on the
//     real placer before anything is evicted: victims are released, the
//     job is tried, and the victims go back untouched if it still does not
//     fit. A preemptor stays committed to the domain it chose.
//  4. otherwise, with backfill, the first job that does not fit gets an EASY
//     reservation (scheduler/reservation.h) and later jobs may start only if
//     they end by it or leave room for it; without backfill a job that does
//     not fit is skipped (Kueue's BestEffortFIFO) or, with strict FIFO,
//     blocks all later jobs.
//
// Preempted jobs go back to the queue with their original arrival order
// and resume from their last checkpoint: checkpoints are taken every
// `checkpoint_interval_s` of run time; the work since the last one is lost,
// and each restart costs `restart_penalty_s` of run time. Gangs are always
// preempted whole.
//
// Invariants (checked by property tests): no guaranteed-tier job is ever
// preempted by another tenant; a tenant at or below its floor is never a
// reclaim victim; the quota tree's usage is the sum of the running jobs'.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <span>
#include <vector>

#include "common/result.h"
#include "scheduler/attained_bound.h"
#include "scheduler/queue.h"
#include "scheduler/reservation.h"
#include "scheduler/scheduler.h"
#include "tenancy/fair_share.h"
#include "tenancy/tenant_tree.h"

namespace tidal {

enum class TenantOrder {
  kFifo,              // priority, then arrival
  kFairShare,         // within-floor jobs first, then decayed usage / share, priority, arrival (tidal)
  kSlurmMultifactor,  // Slurm: W_fs 2^(-U/S) + W_age min(1, age / max_age), then arrival
  kKueue,             // Kueue's heads: not borrowing first, then priority, then arrival
  kLas,               // Tiresias 2D-LAS: discretised attained GPU-service queues, FIFO inside
};

struct TenantQueueOptions {
  TenantOrder order = TenantOrder::kFairShare;
  bool quotas = true;            // admit by the tenant tree; false: one pool, no quota check
  bool backfill = true;          // EASY reservation for the first job that does not fit
  bool strict_fifo = false;      // without backfill: a job that does not fit blocks all later ones
  bool reclaim = false;          // preempt borrowers to give a tenant its floor back
  bool priority_preemption = false;  // higher priority within a tenant (LAS: higher queue, anywhere)
  // tidal: jobs running on borrowed quota are also preempted for waiting
  // jobs in a higher LAS queue (less attained GPU-service), and the order
  // puts lower LAS queues first after within-floor jobs. Jobs within their
  // tenant's floor are never victims of this.
  bool las_on_borrowed = false;
  bool floor_first = true;  // fair share: jobs within their tenant's floor first
  double half_life_s = 7 * 86400.0;  // fair-share usage decay (Slurm PriorityDecayHalfLife)
  // Slurm multifactor (PriorityWeightFairshare, PriorityWeightAge, PriorityMaxAge).
  double slurm_weight_fairshare = 10000;
  double slurm_weight_age = 1000;
  int64_t slurm_max_age_s = 7 * 86400;
  // Tiresias: queue limits on attained GPU-seconds (Q0 below the first,
  // ...); a waiting job whose wait reaches `las_starvation` x its executed
  // time returns to Q0 (0: never).
  std::vector<int64_t> las_limits_gpu_s = {3600};
  double las_starvation = 0;
  int64_t checkpoint_interval_s = 1800;
  int64_t restart_penalty_s = 60;
  // Preemption with notice: >= 0, a victim is told to checkpoint and stops
  // once that is written, this many seconds later (co-location: the
  // forecast gives the notice). It loses no work, only the write and its
  // restart penalty. < 0: victims stop at once and lose the work since
  // their last periodic checkpoint.
  int64_t preempt_checkpoint_s = -1;
  int64_t min_run_s = 0;  // a job runs this long before it may be preempted; < 0: never
  // Preemption searches per pass that no guarantee asks for (priority,
  // LAS on borrowed quota); searches for a floor others hold are uncapped.
  int32_t max_optional_searches = 4;
  // A job reclaiming its floor while others hold part of it takes the best
  // placement there is rather than waiting for a compact one — if that is
  // at most this many times slower than compact (topology placers with a
  // cost model; CycleContext::no_defer_slowdown_max). Otherwise it waits,
  // keeping its right to reclaim, for whole hosts to come back.
  double reclaim_slowdown_max = std::numeric_limits<double>::infinity();
};

// One tenant's state after a pass (leaves only).
struct TenantStatus {
  tenancy::TenantId tenant = tenancy::kNoTenant;
  int64_t usage_gpu_milli = 0;
  int64_t floor_gpu_milli = 0;
  int64_t waiting = 0;
  // The smallest GPU request among its waiting jobs (milli-GPU), -1 if none.
  int64_t min_waiting_gpu_milli = -1;
};

class TenantQueue : public WorkQueue {
 public:
  // `tree` may be null with options.quotas false (one pool; jobs' tenants
  // are then only used for fair share when the tree exists).
  TenantQueue(Scheduler& scheduler, std::shared_ptr<const tenancy::TenantTree> tree, TenantQueueOptions options);

  Status Push(const Job& job, std::vector<UnresolvableJob>& unresolvable) override;
  Status Finish(const Job& job) override;
  Status Withdraw(JobId job) override;
  Status CutRun(JobId job, int64_t now) override;
  void CapacityChanged() override { std::fill(unfit_.begin(), unfit_.end(), 0); }
  void SetRunTime(RunTime run_time) override { run_time_ = std::move(run_time); }
  Result<QueuePass> Schedule(int64_t now) override;
  size_t waiting() const override { return waiting_.size(); }
  size_t running() const override { return running_.size(); }
  const std::map<JobShape, WaitingShape>& waiting_shapes() const override { return shapes_; }
  uint64_t shapes_version() const override { return shapes_version_; }
  const Job* head() const override;
  int64_t reservation_s() const override;
  std::vector<BlockingCause> Explain(const Job& job) override;
  std::unique_ptr<WorkQueue> Fork(Scheduler& scheduler, const JobLookup& jobs) const override;
  int64_t RunEnd(JobId job) const override;
  int64_t RunTimeAtLeast(JobId job, int64_t now) const override;

  const tenancy::TenantTree* tree() const { return tree_.get(); }
  const tenancy::TenantTree& usage_tree() const { return usage_; }
  tenancy::TenantId tenant_of(const Job& job) const;
  std::vector<TenantStatus> TenantStatuses() const;
  // The market's budget rule (docs/market.md, "Budgets"): a tenant over budget
  // runs as spot from now on — its waiting and later jobs; running ones keep
  // their tier until they stop. Guaranteed-tier tenants are not demoted.
  void DemoteToSpot(tenancy::TenantId tenant);
  // A quota change from now on: `tree` has the same tenants and resources
  // (TenantTree::WithQuota) and new quotas. Running jobs keep running — a
  // lowered floor is given back through reclaim and borrowing, never by
  // eviction here; the fair-share meter keeps its decayed usage with the new
  // shares. Waiting jobs that can never fit the new quotas stay waiting
  // (explain names the cause). kInvalidArgument for another tree's shape.
  Status SetTree(std::shared_ptr<const tenancy::TenantTree> tree);
  // TenantQueueOptions::preempt_checkpoint_s from the next pass on (a driver
  // that knows when preemption comes with notice).
  void set_preempt_checkpoint_s(int64_t s) { options_.preempt_checkpoint_s = s; }
  // Notice per preemptor: when set, a preemption made for job p gives its
  // victims notice(p) seconds to checkpoint (< 0: none) instead of
  // preempt_checkpoint_s (co-location: only the scale-outs the forecast
  // asked for come with notice; a surprise preempts at once).
  void set_preempt_notice(std::function<int64_t(const Job& preemptor)> notice) { notice_ = std::move(notice); }
  // Checks the quota usage against the running jobs (tests).
  Status CheckInvariants() const;

 private:
  struct Entry {
    const Job* job = nullptr;
    PodRequest request;
    JobShape shape;
    int32_t shape_id = 0;  // interned: per-shape flags are indexed by it
    tenancy::TenantId tenant = tenancy::kNoTenant;
    tenancy::QuotaRequest quota;
    int32_t quota_id = 0;  // interned (tenant, quota): per-pass quota verdicts are indexed by it
    tenancy::Tier tier = tenancy::Tier::kStandard;
    uint64_t seq = 0;
    int64_t remaining_s = 0;   // base run seconds still to do
    int64_t attained_gpu_s = 0;  // executed GPU-seconds over all runs (LAS)
    int64_t executed_s = 0;    // executed seconds over all runs
    int64_t waiting_since = 0;
    int32_t restarts = 0;
    bool running = false;
    bool dropping = false;  // inside DropWaiting(span) only
    int64_t start_s = 0, end_s = 0;
    int64_t planned_end_s = 0;  // the end the queue plans with (estimates)
    size_t running_index = 0;   // in running_list_ while running
    double stretch = 1;        // run seconds per base second on this placement
    std::optional<int64_t> committed_domain;
  };
  struct OrderKey {
    int32_t cls = 0;     // within-floor / LAS queue / ...
    double value = 0;    // fair share, -slurm priority
    int32_t priority = 0;
    uint64_t seq = 0;
    auto operator<=>(const OrderKey&) const = default;
  };

  // A waiting job's place in a pass's order, with what the pass's quick
  // skips read, copied when the key is taken (none of it changes while the
  // job waits in the pass): a skip then reads no Entry or Job.
  struct Keyed {
    OrderKey key;
    Entry* e = nullptr;
    int64_t planned_run = 0;  // e->job->PlannedRun(e->remaining_s)
    int32_t shape_id = 0, quota_id = 0, priority = 0, num_gpu = 0, las_queue = 0;
    tenancy::TenantId tenant = tenancy::kNoTenant;
    tenancy::Tier tier = tenancy::Tier::kStandard;
    bool single_node = true;
  };
  // e's copy under its FIFO key (las_queue 0), as its quota group lists it.
  Keyed ListedOf(Entry& e) const;

  TenantQueue(const TenantQueue&) = default;  // for Fork, which rebinds the pointers

  OrderKey KeyOf(const Entry& e, int64_t now) const;
  // KeyOf in two parts: what is the same for one quota group (one tenant and
  // request), and the key of one of its jobs from that part, its FIFO key
  // and its LAS queue (read only where KeyReadsLasQueue()).
  OrderKey GroupKey(int32_t quota_id, tenancy::TenantId tenant) const;
  OrderKey EntryKey(const OrderKey& group, OrderKey fifo, const Entry& e, int64_t now, int32_t las_queue) const;
  bool KeyReadsLasQueue() const;
  // The key under FIFO (priority, then arrival); it never changes.
  static OrderKey FifoKey(const Entry& e) { return {.priority = -e.job->priority, .seq = e.seq}; }
  // Wall seconds of e's next (or current) run: what is left, stretched by
  // the placement, plus the restart penalty after a preemption.
  int64_t RunSeconds(const Entry& e) const;
  int32_t LasQueue(const Entry& e, int64_t now) const;
  int64_t GpusOf(const Entry& e) const { return e.request.num_gpu(); }
  void AddShape(const Entry& e);
  void RemoveShape(const Entry& e);
  void Start(Entry& e, const Placement& p, int64_t now, QueuePass& pass);
  void Account(Entry& e, int sign);
  bool AdmitsNow(const Entry& e) const;
  // Whether the quota would admit `e` were the stopped jobs not running,
  // given by their quota ids (Entry::quota_id, one per job).
  bool AdmitsWithout(const Entry& e, std::span<const int32_t> stopped_quotas);
  // Whether the quota could admit `e` were every running job that a victim
  // rule may ever take for it stopped: by tenant, all of its jobs where a
  // rule takes any (LAS; priority within `e`'s tenant when a job of lower
  // priority runs there: `prio`), its non-guaranteed ones where only those
  // go (reclaim, LAS on borrowed quota). A superset of any victim set, read
  // from held_all_ / held_free_ in O(tenants x resources): if it fails,
  // every search for `e` fails on the quota.
  bool AdmitsWithoutAny(const Entry& e, bool las, bool prio, bool reclaim, bool las_borrowed);
  // The freed_ rows of freed_tenants_ taken off the usage: does the quota
  // admit `e` then? Leaves the usage as it was and the rows zero.
  bool AdmitsWithFreed(const Entry& e);
  // usage_.FitsOwnQuota / usage_.Fits for e's quota, remembered per
  // interned (tenant, quota) until the usage changes (a pass asks the same
  // question for thousands of waiting jobs with a handful of requests).
  // The same by interned quota id and tier (what a pass's order carries).
  bool FitsOwn(const Entry& e) const { return FitsOwn(e.quota_id); }
  bool FitsQuota(const Entry& e) const { return FitsQuota(e.quota_id); }
  bool FitsOwn(int32_t quota_id) const;
  bool FitsQuota(int32_t quota_id) const;
  bool AdmitsNow(int32_t quota_id, tenancy::Tier tier) const;
  bool ReclaimRight(const Entry& e) const { return ReclaimRight(e.quota_id, e.tier); }
  bool ReclaimRight(int32_t quota_id, tenancy::Tier tier) const;
  // Others hold part of its tenant's floor: their GPUs > total - floor.
  bool OthersHoldFloor(const Entry& e) const { return OthersHoldFloor(e.tenant); }
  bool OthersHoldFloor(tenancy::TenantId tenant) const;
  // Tries to make room for e by preemption; true if e was started.
  Result<bool> TryPreempt(Entry& e, int64_t now, QueuePass& pass);
  // notice_s: the checkpoint write the preemptor gives its victims, < 0 none.
  int64_t LostIfPreempted(const Entry& v, int64_t now, int64_t notice_s, int64_t* saved_run_s) const;
  Status Evict(Entry& v, int64_t now, const Job& by, int64_t notice_s, QueuePass& pass);
  int64_t NoticeFor(const Job& preemptor) const { return notice_ ? notice_(preemptor) : options_.preempt_checkpoint_s; }

  Scheduler* scheduler_;  // a pointer so that Fork can copy the rest and rebind it
  std::shared_ptr<const tenancy::TenantTree> tree_;
  tenancy::TenantTree usage_;  // the tree with live usage (copy of *tree_)
  TenantQueueOptions options_;
  std::function<int64_t(const Job&)> notice_;  // set_preempt_notice
  std::optional<tenancy::UsageMeter> meter_;
  std::optional<tenancy::ResourceId> gpu_res_;
  RunTime run_time_;

  std::unordered_map<JobId, Entry> entries_;
  std::vector<Entry*> waiting_;  // arrival order (by seq)
  // The waiting entries by quota id, each group in FIFO order with its key
  // (FifoKey) and the copy a pass's quick skips read (ListedOf; las_queue
  // 0): a pass takes whole groups (without preemption only those its quota
  // admits) and merges them; under FIFO it reads no entry to do so.
  std::vector<std::vector<Keyed>> waiting_by_quota_;
  void ListWaiting(Entry& e);
  void UnlistWaiting(Entry& e);
  // Removes e from waiting_ (found by its seq) and from its quota group.
  void DropWaiting(Entry& e);
  // The same for many at once, one sweep per list (a pass starts hundreds
  // of jobs; an erase each moved the rest of the list every time).
  void DropWaiting(std::span<Entry* const> drop);
  std::vector<bool> demoted_;     // by tenant id: DemoteToSpot
  std::set<std::pair<int64_t, JobId>> running_;  // (planned end time, id)
  std::vector<Entry*> running_list_;             // the running entries, for victim searches
  // What a victim search filters running_list_[i] by, side by side in one
  // array (none of it changes while the job runs): the filter then reads
  // no Entry or Job of a job it does not take.
  struct RunningHot {
    int64_t start_s = 0;
    int64_t attained_gpu_s = 0;  // before this run
    int32_t gpus = 0;
    int32_t priority = 0;
    tenancy::TenantId tenant = tenancy::kNoTenant;
    tenancy::Tier tier = tenancy::Tier::kStandard;
    int32_t quota_id = -1;  // Entry::quota_id
  };
  std::vector<RunningHot> running_hot_;  // parallel to running_list_
  // The most attained by the running jobs, all of them and those not in the
  // guaranteed tier: a victim search for LAS's rules ends before its scan
  // when no running job can be in a higher LAS queue than the waiting one.
  AttainedBound attained_all_, attained_not_guaranteed_;
  void UnlistRunning(Entry& e);
  // The LAS queue of a job that has attained this many GPU-seconds.
  int32_t LasQueueOf(int64_t attained_gpu_s) const;
  uint64_t next_seq_ = 0;
  std::map<JobShape, WaitingShape> shapes_;
  uint64_t shapes_version_ = 0;
  std::map<tenancy::TenantId, std::multiset<int64_t>> waiting_gpu_;  // per tenant: waiting requests
  std::map<tenancy::TenantId, std::multiset<int32_t>> running_priorities_;  // per tenant
  int64_t spot_running_ = 0;
  std::vector<tenancy::TenantId> leaves_;
  std::map<JobShape, int32_t> shape_ids_;
  std::map<std::pair<tenancy::TenantId, tenancy::QuotaRequest>, int32_t> quota_ids_;
  std::vector<std::pair<tenancy::TenantId, tenancy::QuotaRequest>> quota_keys_;  // by id (copies: Fork copies the queue)
  struct QuotaVerdict {
    uint64_t epoch = 0;  // usage_epoch_ the verdicts were taken at
    int8_t fits = -1, fits_own = -1;  // -1: not asked yet
  };
  mutable std::vector<QuotaVerdict> verdicts_;  // by quota id
  QuotaVerdict& VerdictOf(int32_t quota_id) const;  // reset if the usage changed since
  uint64_t usage_epoch_ = 1;  // bumped by every change of usage_
  // AdmitsWithout's scratch: victims per quota id and freed usage per
  // [tenant][resource] (both zero between calls), the quota ids and tenants
  // it touched, one tenant's freed request; TryPreempt's eligible victims'
  // quota ids.
  std::vector<int32_t> freed_count_;
  std::vector<int32_t> freed_quotas_;
  std::vector<int64_t> freed_;
  std::vector<tenancy::TenantId> freed_tenants_;
  tenancy::QuotaRequest freed_request_;
  std::vector<int32_t> eligible_quotas_;
  // By [tenant][resource], sized with the tree: the quota requests of the
  // jobs accounted in usage_ (Account), all of them and the non-guaranteed
  // ones.
  std::vector<int64_t> held_all_, held_free_;
  // By leaf tenant: bumped when its own usage changes (a job of it starts or
  // stops). A waiting job's order key depends on its own tenant's usage
  // only, so within a pass it is recomputed only when this moved.
  std::vector<uint64_t> tenant_usage_stamp_;
  std::vector<uint8_t> unfit_;  // per interned shape: did not fit since the last release
  std::vector<int32_t> waiting_by_shape_;  // per interned shape: how many wait
  const Job* head_ = nullptr;
  int64_t head_reservation_ = kNoReservation;
  int32_t largest_node_gpus_ = -1;
};

Result<TenantOrder> ParseTenantOrder(std::string_view name);

// How each tenant-queue policy is configured (docs/tenancy.md):
//  static-partitions: quotas without borrowing (the caller gives a tree
//      whose leaves have borrowing_limit 0), FIFO + backfill, no preemption;
//  slurm-multifactor: one pool, Slurm's multifactor priority (fair share
//      with decay + age) + backfill, no preemption (PreemptType=none);
//  kueue: cohorts with borrowing, Kueue's head order, BestEffortFIFO (no
//      backfill reservation), reclaim within the cohort and lower-priority
//      preemption within a queue;
//  las: one pool, Tiresias 2D-LAS, preemptive, no backfill;
//  tidal: elastic quotas, fair share, EASY backfill, reclaim and priority
//      preemption with minimal-loss, domain-local victims.
// fifo and fifo-backfill are JobQueue's: an error here.
Result<TenantQueueOptions> TenantQueueOptionsFor(QueuePolicy policy);
// Whether the policy needs a tenant tree (all but las do; slurm uses it for fair share).
bool NeedsTenants(QueuePolicy policy);

}  // namespace tidal
