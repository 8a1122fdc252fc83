// The daemon's core (docs/server.md): the simulator's own Replay — the same
// Scheduler, placer plugins and tenant queue — driven by a wall clock
// instead of a trace's virtual one, with jobs from the API next to the
// embedded cluster's replayed trace, and every input kept in the store.
//
// Durability and restart. The scheduler is deterministic given its inputs:
// the config (its digest is in the store), the trace, and per API job the
// batch time a cycle first saw it (arrived_at) and the one its cancel took
// effect (cancel_at). A submission is written (with its audit entry) before
// it is acknowledged; a scheduling step writes its batches' inputs and the
// resulting job states in one transaction and only then publishes the
// snapshot reads come from. On start the daemon replays the stored inputs
// through a fresh Replay up to now, so after kill -9 it reaches the state
// it had (the embedded cluster's binder is that replay: nothing can be bound
// twice), rewrites any job state the crash kept from the store, and takes up
// jobs accepted but never seen by a cycle.
//
// Batches. Each batch at time t runs, in order: the finishes at t, the trace
// arrivals at t, the API arrivals (by id), the cancels (by id), then one
// scheduling pass. API jobs and cancels are taken at max(now, last batch +
// 1), never into a batch that already ran, so a replay cuts the same batches.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "server/api_error.h"
#include "server/auth.h"
#include "server/daemon_config.h"
#include "server/group_commit.h"
#include "server/job_request.h"
#include "server/op_request.h"
#include "server/metrics.h"
#include "server/snapshot.h"
#include "market/ledger.h"
#include "market/pricing.h"
#include "adapters/slurm/binder.h"
#include "sim/metrics.h"
#include "sim/placement_cost.h"
#include "sim/replay.h"
#include "store/store.h"

namespace tidal::server {

// Seconds since the Unix epoch, as a double (tests pass a manual clock).
using WallClock = std::function<double()>;
WallClock SystemWallClock();

// The call an audit entry records (the caller is the Principal passed along).
struct Audit {
  std::string method, path;
};

// Lists are newest first: by submission time, then id, both descending
// (trace jobs' ids are above every API job's, so ids alone do not order by
// age). A cursor is the last (submitted_at, id) of a page.
struct JobCursor {
  int64_t submitted_at = 0;
  JobId id = 0;
  auto operator<=>(const JobCursor&) const = default;
};

struct JobFilter {
  std::string tenant, state;
  int64_t limit = 100;
  std::optional<JobCursor> before;  // the page after this cursor (none: from the newest)
};

// An operator's input besides jobs, kept in daemon_inputs and replayed on
// restart like a job's arrival: a node drained (cordoned: no new work, its
// running jobs run on) or returned to service, a tenant's quota changed.
struct OpInput {
  int64_t id = 0;
  std::string kind;     // "drain", "resume", "quota", "end" (a real manager reports a job's end)
  nlohmann::json body;  // canonical; quota amounts in the resource's unit (milli-GPU, milli-CPU, MiB)
};

struct JobPage {
  std::vector<JobView> jobs;
  std::vector<std::string> json;  // when set (live lists), jobs[i] as JSON text
  std::optional<JobCursor> next;  // none: the last page
};

// A job on a real manager runs until the manager reports its end: its true
// run time is this (ten years); the queue plans with its estimate.
inline constexpr int64_t kOpenRunS = int64_t{10} * 365 * 86400;

class Daemon {
 public:
  // Opens the daemon's state in `store`: first start records the epoch and
  // the config digest; a restart replays the stored inputs up to now.
  static Result<std::unique_ptr<Daemon>> Open(DaemonConfig config, store::Store& store, WallClock wall);
  ~Daemon();

  // Runs scheduling steps on a thread of its own until Stop.
  void Start();
  void Stop();
  // One step: the batches due by now, then the API's inputs; writes and
  // publishes. The thread calls it with `publish_every_s` > 0: a step that
  // took no API input then writes and publishes only if that long has passed
  // since the last time (events of a busy cluster come many a second; each
  // publish copies every live job), the thread waking to do it in time.
  // Tests without the thread call it as is: every step publishes.
  Status Step(double publish_every_s = 0);

  int64_t Now() const;
  const DaemonConfig& config() const { return config_; }
  store::Store& store() { return store_; }
  std::shared_ptr<const Snapshot> snapshot() const;
  Metrics& metrics() { return metrics_; }
  // Jobs whose stored state the restart's replay changed (0 after a clean stop).
  int64_t reconciled() const { return reconciled_; }
  // "" while the last step's write succeeded, else what failed.
  std::string last_error() const;

  // --- The API's calls (thread-safe) ---------------------------------------
  struct Submitted {
    JobView job;
    bool created = true;  // false: an earlier submission with the same idempotency key
  };
  ApiResult<Submitted> Submit(SubmitRequest r, const Principal& by, const Audit& audit);
  ApiResult<JobView> Cancel(JobId id, const Principal& by, const Audit& audit);
  ApiResult<JobView> GetJob(JobId id, const Principal& by);
  ApiResult<JobPage> ListJobs(const JobFilter& f, const Principal& by);
  ApiResult<nlohmann::json> Explain(JobId id, const Principal& by);
  ApiResult<std::vector<TenantView>> Tenants(const Principal& by);
  // Operators: drain a node / return it to service (daemon_ops.cc). Each is
  // recorded before it takes effect, in a batch of its own.
  ApiResult<nlohmann::json> Drain(const std::string& node, const std::string& reason, const Principal& by, const Audit& audit);
  ApiResult<nlohmann::json> Resume(const std::string& node, const Principal& by, const Audit& audit);
  // Admins: replace a tenant's quota on one resource.
  ApiResult<nlohmann::json> SetQuota(const QuotaChange& q, const Principal& by, const Audit& audit);
  // A quote for `gpus` GPUs of `model` in `tier` for `duration_s` from now
  // (GET /v1/quote): exact where prices are announced, with the upper bound
  // beyond. 404 without a market or a pool for the model.
  ApiResult<nlohmann::json> Quote(const std::string& model, const std::string& tier, int64_t gpus, int64_t duration_s);
  // What-if changes besides new jobs (POST /v1/simulate).
  struct WhatIf {
    std::vector<SubmitRequest> submit;
    std::vector<std::string> drain;
    std::vector<QuotaChange> quota;
  };
  ApiResult<nlohmann::json> Simulate(const WhatIf& change, const Principal& by);

 private:
  struct Rec {
    std::unique_ptr<Job> job;
    JobView view;
    std::optional<int64_t> arrived_at, cancel_at;
    std::string spec;  // the canonical request (the row's spec)
    std::string json;  // view.ToJson().dump(), refreshed when it is written
  };

  Daemon(DaemonConfig config, store::Store& store, WallClock wall);
  Status Init();
  Status CatchUp(std::vector<Rec> api_jobs, std::vector<std::pair<int64_t, OpInput>> ops);
  // The batch at t (> every earlier batch): see the header. Operator
  // inputs come after the cancels, by id.
  Status RunBatch(int64_t t, std::vector<Rec> arrivals, std::vector<JobId> cancels, std::vector<OpInput> ops = {});
  // An operator input checked against the state now, and what applying it
  // takes (a node, a new tenant tree). Errors: kNotFound (no such node or
  // tenant), kFailedPrecondition (already drained, ...), kInvalidArgument.
  struct PreparedOp {
    NodeId node = -1;
    std::shared_ptr<const tenancy::TenantTree> tree;
  };
  Result<PreparedOp> PrepareOp(const OpInput& op, const sim::Replay& replay) const;
  Status ApplyOp(const OpInput& op, sim::Replay& replay);
  // Records an operator input (with its audit entry) and runs it in a batch
  // of its own; returns the batch time.
  ApiResult<int64_t> RecordOp(std::string kind, nlohmann::json body, const Principal& by, const Audit& audit, int status,
                              std::string object);
  // The same for several inputs in one batch (ids are assigned here); no
  // audit entry when `audit` is null (inputs the daemon records itself).
  ApiResult<int64_t> RecordOps(std::vector<OpInput> ops, const Principal& by, const Audit* audit, int status, std::string object);
  nlohmann::json NodeJson(NodeId n) const;
  // With a Slurm binder (daemon_slurm.cc). A job's run ends when Slurm says
  // so: its true run time is open (kOpenRunS) and its end is an operator
  // input of kind "end", recorded from what squeue reports. Binding is a
  // side effect done after the step that decided it is written (never
  // during the restart's replay), so nothing runs that a restart would not
  // reproduce; the restart reconciles with Slurm by tidal id instead.
  Status OpenSlurm();
  void QueueBindActions(const QueuePass& pass, const std::vector<JobId>& cancelled);
  void RunBindActions();
  Status PollSlurm();
  // Users' own sbatch jobs held in tidal's partition become tidal jobs.
  void AdoptSlurmJobs();
  Status ReconcileSlurm();
  Result<int64_t> SubmitAndPlace(JobId id);
  // Runs the batches strictly before t (bound: inclusive when `inclusive`).
  Status AdvanceTo(int64_t t, bool inclusive);
  int64_t NextTraceArrival() const;
  Status Flush();
  void Publish();
  void RefreshReasons();
  Result<Rec> RecFromRow(const store::Row& row);
  ApiResult<void> CheckSubmit(SubmitRequest& r, const Principal& by) const;
  // Runs fn on the scheduling thread (or here, when it does not run).
  ApiResult<nlohmann::json> OnScheduler(const std::function<ApiResult<nlohmann::json>()>& fn);
  Result<std::optional<JobView>> LoadJob(JobId id);
  void Loop();
  void Ended(Rec& r, std::string state, int64_t t);
  std::string TierOf(const std::string& tenant) const;
  Result<nlohmann::json> ExplainNow(JobId id);
  Result<nlohmann::json> SimulateNow(const WhatIf& change, const Principal& by);

  DaemonConfig config_;
  store::Store& store_;
  WallClock wall_;
  int64_t epoch_wall_ = 0;  // wall second of the first start; the daemon clock starts there
  std::unique_ptr<sim::PlannerPlacementCost> cost_;
  std::unique_ptr<sim::Replay> replay_;
  size_t trace_next_ = 0;
  int64_t last_batch_ = -1;
  uint64_t batches_ = 0;
  int32_t largest_host_gpus_ = 0;
  std::unordered_map<JobId, Rec> recs_;  // every job that arrived
  std::deque<JobId> ended_;              // the most recent ends, oldest first
  std::set<JobId> dirty_;
  sim::StrandedTracker stranded_;
  std::optional<market::MarketPrices> prices_;  // with a market config: one pool per GPU model
  std::optional<market::Ledger> ledger_;        // tenants' balances (the same store)
  std::map<std::string, std::string> balances_;  // by account, refreshed every 2 s of wall time
  double balances_at_ = -1e18;
  Status ObservePrices(int64_t t);
  int64_t price_clock_ = 0;  // the pricers have been advanced to here
  double published_at_ = -1e18;  // wall time of the last publish
  bool unpublished_ = false;     // batches ran since it
  std::unordered_map<JobId, std::string> reasons_;  // pending job -> its first blocking cause
  double reasons_at_ = -1e18;
  bool catching_up_ = false;
  std::map<NodeId, std::string> drained_;  // drained nodes and why
  // The Slurm binder (none: the embedded simulated cluster).
  struct BindAction {
    enum Kind { kPlace, kRequeue, kCancel, kDrain, kResume } kind;
    JobId job = 0;
    std::string node, reason;  // kDrain, kResume
  };
  std::unique_ptr<slurm::ProcessRunner> slurm_run_;
  std::unique_ptr<slurm::SlurmBinder> binder_;
  std::map<JobId, int64_t> slurm_id_;      // tidal job -> its Slurm job
  std::vector<BindAction> bind_actions_;   // decided, written, not yet done
  std::map<JobId, std::pair<std::string, std::string>> ended_by_slurm_;  // job -> (state, reason) for the batch ending it
  double polled_at_ = -1e18;
  int64_t next_op_id_ = 1;
  int64_t reconciled_ = 0;

  GroupCommit commit_;
  std::atomic<JobId> next_api_id_{1};

  mutable std::mutex mu_;  // the inbox, accepted jobs, tasks
  std::condition_variable cv_;
  std::vector<Rec> inbox_jobs_;
  std::vector<JobId> inbox_cancels_;
  std::unordered_map<JobId, JobView> accepted_;
  std::deque<std::function<void()>> tasks_;
  std::atomic<std::shared_ptr<const Snapshot>> snapshot_;  // swapped whole; readers take no lock
  bool stop_ = false;
  std::thread thread_;
  std::thread::id scheduler_thread_;

  std::string last_error_;  // under mu_

  Metrics metrics_;
};

}  // namespace tidal::server
