// The queue experiment: replays a time-stamped trace through tidal's
// scheduler with a virtual clock. Jobs arrive at their submit time, wait in
// a queue (FIFO or FIFO + EASY backfill, scheduler/queue.h), run for their
// duration once placed by the chosen placer, and leave.
//
// Event order is total and deterministic: time ascending; at equal times all
// finishes (by job id) come before all arrivals (by submit time, then job
// id), and one scheduling pass follows each batch. A job that starts with
// duration 0 finishes in a later batch at the same second. Same inputs and
// seed give the same result, bit for bit.
//
// Metrics (DESIGN.md): queueing delay = start - submit and JCT = finish -
// submit over finished jobs; GPU allocation rate = allocated milli-GPU /
// total milli-GPU, time-averaged over [first submit, last finish]; stranded
// GPU share = time-average of stranded idle milli-GPU (sim/metrics.h) over
// total milli-GPU, over the time when at least one job waits. Jobs that can
// never fit are reported as unresolvable and excluded from the metrics.
//
// The replay's moving parts live in a Replay (sim/replay.h), which a start-
// time estimate forks and runs forward without arrivals (sim/
// start_estimate.h): --explain's estimated start, and --start-estimates'
// measured error. A fork never changes the replay.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cluster/cluster_state.h"
#include "common/result.h"
#include "scheduler/queue.h"
#include "tenancy/tenant_tree.h"
#include "inference/service.h"
#include "sim/inference_fleets.h"
#include "sim/market_sim.h"
#include "sim/metrics.h"
#include "sim/workload_model.h"
#include "topology/topology.h"
#include "workload/job.h"

namespace tidal::sim {

struct QueueProgress {
  int64_t jobs_done = 0;   // finished + unresolvable
  int64_t jobs_total = 0;
  int64_t now_s = 0;       // virtual time
  int64_t waiting = 0;
  int64_t running = 0;
};

struct QueueSimOptions {
  std::string policy = "bestfit";  // placer, plugins::PolicyNames()
  QueuePolicy queue = QueuePolicy::kFifoBackfill;
  uint64_t seed = 42;
  int64_t limit = 0;  // replay only the first N jobs by (submit, id); 0 = all
  // Locality: a gang that fits on one node of the cluster (num_gpu <= the
  // largest node's GPU count) must be placed on one node — Philly's rule
  // before its scheduler relaxed locality for long-waiting jobs. Larger gangs
  // still span nodes.
  bool single_node_if_fits = false;
  // The interconnect (hosts must be the node list's nodes; GPU counts are
  // filled in from it where the format has none). With a topology, every
  // multi-GPU job runs step_time(placement) / step_time(compact) times its
  // trace run time (the planner's model, sim/placement_cost.h).
  std::shared_ptr<const topo::Topology> topology;
  // Which model each multi-GPU job trains; the shipped default when unset.
  std::optional<WorkloadModel> workload_model;
  // The model the trace's run times were measured under (sim/
  // placement_cost.h): with it, a job runs its trace time x its rate under
  // the reference's layout on a compact placement / its rate here.
  std::optional<WorkloadModel> reference_model;
  // The measurement window (QueueSimResult::window_*), from the first
  // submission: 0 = the arrival span (first to last submission).
  int64_t window_s = 0;
  // Arrivals compressed to this offered load (GPU-seconds asked / (GPUs x
  // arrival span)); 0 = as recorded. Exclusive with time_scale.
  double load = 0;
  // Inter-arrival times divided by this; 0 or 1 = as recorded.
  double time_scale = 0;
  // Every multi-GPU job waits up to this long for a placement at most
  // `slowdown_ok` times slower than compact (topology placers with a cost
  // model; Job::topo_max_wait_s). Negative (the default): as long as it
  // takes; 0: take the best placement now.
  int64_t max_wait_s = -1;
  double slowdown_ok = 1.0;
  // Every multi-GPU job's topology constraint (Job::topo_required /
  // topo_preferred), as users write them: "must fit in one leaf", "prefer".
  std::optional<topo::Level> require_level, prefer_level;
  // Tenants (tenant-queue policies, scheduler/tenant_queue.h): "" = none,
  // "proportional" = one per value of the trace's tenant column (Philly's
  // virtual cluster) with floors in proportion to its GPU-hours, or a
  // tenants file (docs/tenancy.md). `tenant_tree` overrides it.
  std::string tenants;
  std::shared_ptr<const tenancy::TenantTree> tenant_tree;
  // The organisation's core project: a leaf tenant whose jobs are all
  // guaranteed tier — they run within its floor and no other tenant's reclaim
  // or priority ever preempts them (a hard floor). "" = none; "largest" =
  // the leaf with the largest GPU floor (ties: the first by name).
  std::string core_tenant;
  // Per business group (leaf tenant name), the tier of its jobs instead of
  // the tenants file's (an SLA tier: guaranteed, standard or spot). A name
  // that is no leaf is an error, as is any tier but guaranteed for the core
  // project.
  std::map<std::string, tenancy::Tier> tenant_tiers;
  // Preemption: checkpoints every this many seconds of run time; a
  // restart costs restart_penalty_s of run time.
  int64_t checkpoint_interval_s = 1800;
  int64_t restart_penalty_s = 60;
  // Tenant queues: the slowest placement (x compact) a job reclaiming its
  // floor takes now rather than waiting (TenantQueueOptions::
  // reclaim_slowdown_max); 0 = the policy's default.
  double reclaim_slowdown_max = 0;
  // Run-time estimates the queues plan backfill with: "exact" (perfect
  // knowledge, the default) or "f-model:F" (Mu'alem & Feitelson's f-model:
  // each job's estimate = its run time x a factor uniform in [1, F], seeded
  // by the seed and the job id). Jobs still run their real time.
  std::string estimate = "exact";
  // --explain JOB --at T: in the state that holds T seconds after the
  // first submission, why job JOB (its id) is waiting and when it is
  // estimated to start (sim/start_estimate.h).
  int64_t explain_job = -1;
  int64_t explain_at_s = 0;
  // Start-time estimates: forward runs per estimate (K; with exact
  // estimates always one).
  int start_estimate_samples = 20;
  // --start-estimates N: N jobs drawn by the seed get a start estimate
  // right after the pass at their arrival, compared at the end with their
  // actual start (start_estimate_error_s). Off (0) by default: each costs K
  // forward runs of the queue.
  int64_t start_estimates = 0;
  // Called now and then during the replay (about every 1% of jobs).
  std::function<void(const QueueProgress&)> progress;
  // Zombies: a seeded share of jobs keep their GPUs idle after their work
  // ends (sim/market_sim.h); hoarded GPU-hours are measured for every queue.
  HoardingScenario hoarding;
  // The market (tenant-queue policies only): prices, budgets, lending
  // credits, and the zombie detector that reclaims hoarded GPUs.
  std::optional<MarketSimOptions> market;
  // Inference services in the same pool (sim/inference_fleets.h): each
  // minute their replicas are scaled to the fleets' targets and wait, start
  // and preempt like any job (priority 1000). Each service's replicas form
  // their own tenant (InferenceFleetsOptions::groups, default "inf-NAME"):
  // with --tenants proportional a guaranteed-tier leaf whose floor is the
  // service's peak GPUs over the window, the training tenants sharing the
  // rest in proportion. `lend` false: its idle floor is never lent (a
  // separate inference fleet); true: training borrows it and gives it back
  // when the service scales out (co-location). The horizon is the window.
  struct Inference {
    std::vector<inference::Service> services;
    InferenceFleetsOptions fleets;
    bool lend = true;
  };
  std::optional<Inference> inference;
};

enum class JobOutcome { kFinished, kUnresolvable };

struct QueueJobRecord {
  JobId id = 0;
  std::string name;
  int32_t num_gpu = 0;
  int32_t gpu_milli = 0;
  int64_t submit_s = 0;
  int64_t start_s = -1;
  int64_t finish_s = -1;
  // The first backfill reservation the job got as the blocked head (-1 if
  // none). With exact run times EASY guarantees start_s <= reserved_s.
  int64_t reserved_s = -1;
  JobOutcome outcome = JobOutcome::kFinished;
  std::string reason;  // why unresolvable
  // Placement (multi-GPU jobs): hosts and host switches spanned, the
  // slowdown the run time was stretched by and the exposed communication
  // share on that placement (-1: no model for this job).
  int32_t nodes = 0;
  int32_t switches = 0;
  double slowdown = 1;
  double comm_share = -1;
  std::string tenant;       // "" without tenants
  int32_t preemptions = 0;  // times it was evicted
  int64_t lost_gpu_s = 0;   // work redone + restart penalties, GPU-seconds
  int64_t run_s = 0;        // wall time it ran, over all its runs
  int64_t run_start_s = -1; // start of its current run
  int64_t idle_since_s = -1;  // a zombie: when its work ended (-1: working, or not a zombie)
  int64_t hoarded_gpu_s = 0;  // GPU-seconds it held idle as a zombie
  bool reclaimed = false;     // the market's zombie detector ended it
  // Its modelled work (sim/placement_cost.h): model FLOPs of the whole job
  // and its MFU against dense BF16 on its last placement (-1: unmodelled).
  double model_flops = 0;
  double mfu = -1;
  // --start-estimates: its estimated start (P50, P90) given after its
  // arrival pass; -1 if it was not sampled or started at once.
  int64_t estimate_p50_s = -1, estimate_p90_s = -1;
};

// Per tenant (leaves), over its finished jobs.
struct TenantResult {
  std::string name;
  int64_t floor_gpus = 0;
  int64_t jobs = 0;
  Summary queue_delay_s;
  double jct_mean_s = 0;
  double wait_mean_s = 0;       // JCT - time run (QueueSimResult::wait_s)
  double slowdown_mean = 0;     // mean of JCT / run time
  double ftf_mean = 0;          // Themis-style finish-time fairness rho (see QueueSimResult)
  double gpu_hours = 0;         // GPU-hours of its jobs' runs
  int64_t preemptions = 0;      // of its jobs
  double lost_gpu_hours = 0;
  double guarantee_violation_hours = 0;
};

struct QueueSimResult {
  std::string policy;
  std::string queue;
  uint64_t seed = 0;
  bool single_node_if_fits = false;
  int64_t nodes = 0;
  int64_t total_gpus = 0;
  int64_t jobs_total = 0;
  int64_t jobs_finished = 0;
  int64_t jobs_unresolvable = 0;
  Summary queue_delay_s;
  Summary jct_s;
  // Time spent waiting in the queue over all queue stays: JCT - time run.
  // Equals the queueing delay without preemption; with it (LAS, reclaim) a
  // job that starts at once and is then preempted for hours waited hours,
  // which start - submit does not see.
  Summary wait_s;
  double allocation_rate = 0;     // fraction in [0, 1]
  double stranded_gpu_share = 0;  // fraction in [0, 1]
  double waiting_time_share = 0;  // share of the run with at least one job waiting
  // Idle GPU share averaged over the same moments as the stranded share: the
  // gap between the two is idle capacity some waiting job could use but the
  // queue policy holds back (head-of-line blocking, backfill reservations).
  double idle_gpu_share_while_waiting = 0;
  int64_t start_s = 0;            // first submit
  int64_t end_s = 0;              // last finish
  int64_t makespan_s = 0;
  int64_t max_waiting = 0;
  int64_t backfilled = 0;         // jobs that started while an earlier job waited
  // Offered load: requested GPU-seconds / (GPUs x arrival span), as recorded
  // and after compression; the factor inter-arrival times were divided by.
  double offered_load_native = 0;
  double offered_load = 0;
  double time_scale = 1;
  std::string topology;           // its source, "" without one
  // DESIGN.md: share of multi-GPU-job GPU-hours whose gang spans > 1 node /
  // > 1 leaf switch (the switch a host hangs from); GPU-time-weighted exposed
  // communication share and mean placement slowdown over modelled multi-GPU
  // jobs. Negative: not measured (locality_node: no multi-GPU job; the
  // others also without a topology).
  double locality_node = -1;
  double locality_leaf = -1;
  double comm_share = -1;
  double slowdown_mean = -1;
  int64_t jobs_multi_gpu = 0;
  int64_t jobs_modelled = 0;      // multi-GPU jobs with a workload model
  // Tenants and preemption (zero / empty without them). A guarantee
  // violation (DESIGN.md) is a moment after a pass when a tenant has a
  // waiting job that fits in its own unused floor while others hold
  // capacity within that floor (free + its usage < its floor): counted per
  // pass and tenant, and integrated in tenant-hours.
  std::string tenants;
  std::string core_tenant;  // the leaf made the core project ("" = none)
  std::string estimate = "exact";
  int64_t preemptions = 0;
  double lost_gpu_hours = 0;
  int64_t guarantee_violations = 0;
  double guarantee_violation_hours = 0;
  // max / min over tenants of the mean per-job slowdown JCT / run time, and
  // the largest per-tenant mean finish-time fairness rho = JCT / (run time x
  // max(1, GPUs / (total GPUs / tenants))): the job against running alone on
  // an equal 1/N share (Themis, NSDI '20). Negative without tenants.
  double fairness_max_min_slowdown = -1;
  double finish_time_fairness_max = -1;
  std::vector<TenantResult> per_tenant;
  // Zombies (HoardingScenario): how many turned zombie, the GPU-hours they
  // held idle (DESIGN.md's hoarded GPU-hours), how many the market reclaimed.
  int64_t zombies = 0;
  int64_t zombies_reclaimed = 0;
  double hoarded_gpu_hours = 0;
  std::optional<MarketSimResult> market;
  // Over the window [first submission, + window_s] (QueueSimOptions::
  // window_s), integrals of: GPUs allocated (zombies included), GPUs
  // stranded (sim/metrics.h, 0 while nothing waits), model FLOPs delivered
  // by modelled jobs (work redone after a preemption not counted twice),
  // and the dense BF16 / native-precision peak FLOPs of the GPUs allocated
  // to modelled jobs. All in GPU-seconds or FLOPs.
  int64_t window_s = 0;
  double window_allocated_gpu_s = 0;
  double window_stranded_gpu_s = 0;
  double window_hoarded_gpu_s = 0;
  double window_model_flops = 0;
  double window_peak_bf16_flops = 0;
  double window_peak_native_flops = 0;
  // Inference (QueueSimOptions::inference): per service over the window's
  // minutes, and the GPUs its replicas held (GPU-seconds in the window).
  std::vector<ServiceResult> inference;
  double window_inference_gpu_s = 0;
  // Hour by hour from the first submission to the end: GPUs held by
  // training (zombies included) and by inference replicas, GPUs zombies hold
  // idle, and jobs waiting (training only), as they stood at each hour.
  struct Hour {
    double training_gpus = 0, inference_gpus = 0, hoarded_gpus = 0;
    int64_t waiting = 0;
  };
  std::vector<Hour> hourly;
  // --explain: the job's state at the chosen time and its blocking causes.
  struct Explained {
    int64_t job = -1;
    int64_t at_s = -1;       // the pass it was asked at (seconds from the first submission)
    std::string state;       // waiting, running, finished, not arrived, unresolvable
    std::vector<BlockingCause> causes;
    // Waiting: its estimated start, P50 and P90 over the forward runs
    // (seconds from the first submission; -1: it never starts in any).
    int64_t start_p50_s = -1, start_p90_s = -1;
    int start_samples = 0;  // forward runs; 0: no estimate (not waiting)
  } explain;
  // --start-estimates: the estimates' measured error (samples 0 when off).
  StartEstimateError start_estimate_error;
  double seconds = 0;             // wall time of the replay (not part of the JSON)
  std::vector<QueueJobRecord> jobs;  // in (submit, id) order
};

Result<QueueSimResult> RunQueueSim(const std::vector<NodeSpec>& nodes, const std::vector<Job>& jobs,
                                   const QueueSimOptions& options);

// The --json document: the DESIGN.md metrics under fixed keys, plus context.
nlohmann::json QueueSimJson(const QueueSimResult& r);

// Writes summary.json and jobs.csv (one row per job) into `dir`.
Status WriteQueueSimOutputs(const QueueSimResult& r, const std::string& dir);

}  // namespace tidal::sim
