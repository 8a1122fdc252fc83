// `tidal sim org` (issue 14, docs/org.md): one simulated organisation run
// twice through the same scheduler, planner and market code — as the
// organisation runs today ("before") and with tidal ("after") — and once
// more per lever with that lever alone switched back to its "before"
// setting (the ablations), so the report says which lever buys what.
//
// The levers, each a setting of one queue replay (sim/queue_sim.h):
//   pool      static partitions per business group (each owns its floor, FIFO
//             + backfill inside it) vs one pool with elastic quotas, fair
//             share and reclaim (the tidal tenant queue);
//   topology  a topology-oblivious placer (first-fit in host order) vs the
//             topology-aware placer scored by predicted step time;
//   planner   the layout a typical user launches vs the planner's layout for
//             the placement each job gets (WorkloadModel::planned);
//   market    zombies keep their GPUs vs the market: prices, lending credits
//             and the zombie detector that charges and reclaims.
// Both sides replay the same trace, compressed to the same offered load, on
// the same fleet; a job's work is fixed by the reference model (the trace's
// run time is its run under the typical user's layout on a compact
// placement), so a faster layout finishes the same work sooner.
//
// The figures (docs/org.md gives each definition) are measured over the
// arrival window — first to last submission — where the offered load is the
// one asked for; queueing delays over every job that finished.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "sim/market_sim.h"
#include "sim/queue_sim.h"

namespace tidal::sim {

// One side of the comparison: the settings of the four levers.
struct OrgSide {
  std::string queue;            // queue policy (static-partitions, tidal, ...)
  std::string placer;           // placer (first-fit, topo, ...)
  std::string workload_model;   // file: the layouts jobs run with
  bool market = false;          // the market runs (needs a tenant queue)
  // Inference (OrgConfig::inference): false = a separate fleet sized for
  // each service's peak (its floor never lent, replicas at the peak all
  // the time); true = co-location (forecast autoscaling, the idle floor lent
  // to training and taken back at a checkpoint with notice).
  bool colocation = false;
};

// The inference services of the organisation (docs/org.md).
struct OrgInference {
  std::string services;           // inference/service.h's file
  std::vector<inference::Service> loaded;
  InferenceFleetsOptions knobs;   // replica: and autoscaler: (ReadFleetKnobs), checkpoint_write_s
};

struct OrgConfig {
  std::string source;  // the config file
  std::string name;
  std::string jobs, format = "auto", nodes, topology;
  std::string tenants = "proportional";  // sim queue --tenants
  std::string core_project;               // QueueSimOptions::core_tenant ("" = none, "largest")
  std::string reference_model;            // file: the layouts the trace's run times were measured under
  std::string market;                     // market config file ("" = the defaults)
  // Business groups' budgets and SLA tiers (docs/org.md): every BG's budget is
  // budget_factor x its floor's GPU-hours x the in-floor rate, unless
  // `budgets` gives its own factor; `tiers` sets a BG's tier (guaranteed,
  // standard, spot) on every side.
  double budget_factor = 1.5;
  std::map<std::string, double> budgets;
  std::map<std::string, tenancy::Tier> tiers;
  double load = 0.75;
  int64_t limit = 0;
  uint64_t seed = 1;
  HoardingScenario hoarding;
  int64_t checkpoint_interval_s = 1800, restart_penalty_s = 60;
  std::optional<OrgInference> inference;
  OrgSide before, after;
};

Result<OrgConfig> ReadOrgConfig(const std::string& path);

// The figures of one side (docs/org.md).
struct OrgFigures {
  std::string name;  // before, after, no_pool, ...
  OrgSide side;
  double training_mfu = 0, training_mfu_native = 0, cluster_mfu = 0;
  double comm_share = 0;
  Summary queue_delay_s;
  std::map<std::string, double> queue_delay_mean_s_by_bg;
  double idle_gpu_share = 0, stranded_gpu_share = 0, hoarded_gpu_share = 0;
  // The core project (OrgConfig::core_project): its name, its jobs' mean
  // queueing delay, preemptions and guarantee-violation hours.
  std::string core_project;
  double core_queue_delay_mean_s = 0, core_guarantee_violation_hours = 0;
  int64_t core_preemptions = 0;
  double model_flops = 0;               // delivered in the window
  double effective_compute_gain = 0;    // model_flops / before's - 1
  double locality_leaf = -1;
  int64_t jobs_finished = 0, jobs_unresolvable = 0, preemptions = 0;
  double lost_gpu_hours = 0, hoarded_gpu_hours = 0, guarantee_violation_hours = 0;
  int64_t zombies = 0, zombies_reclaimed = 0;
  // With the market: each BG's grant, spend, lending credits, fees, whether
  // it went over budget, and the ledger's check (the JSON's market_result).
  std::optional<MarketSimResult> market;
  std::vector<std::pair<double, double>> job_mfu;  // (MFU, GPU-hours) per modelled job
  std::vector<ServiceResult> inference;            // per service, over the window
  double inference_gpu_share = 0;                  // GPU time inference replicas held / all GPU time
  std::vector<QueueSimResult::Hour> hourly;        // GPU use by tier and queue length, hour by hour
  double seconds = 0;                              // wall time of its replay
};

struct OrgResult {
  OrgFigures before, after;
  std::vector<OrgFigures> ablations;  // no_pool, no_topology, no_planner, no_market, no_colocation
  int64_t total_gpus = 0, jobs = 0, window_s = 0;
  double offered_load = 0, offered_load_native = 0;
  std::string gpu;  // the workload model's GPU, whose peaks the MFUs are against
};

struct OrgProgress {
  int done = 0, total = 0;
  std::string last;  // the side just finished
  double last_seconds = 0;  // its replay's wall time
};

// Runs before, after and the ablations (threads: 0 = one per core).
Result<OrgResult> RunOrg(const OrgConfig& config, int threads, const std::function<void(const OrgProgress&)>& progress = {});

// {"before": {...}, "after": {...}, "ablations": {"no_topology": {...}, ...},
//  "targets": {...}, "config": {...}}
nlohmann::json OrgJson(const OrgConfig& config, const OrgResult& r);
std::string OrgTable(const OrgResult& r);
// summary.json, figures.csv, jobs_mfu.csv and report.html (bars, MFU distribution).
Status WriteOrgOutputs(const OrgConfig& config, const OrgResult& r, const std::string& dir);

}  // namespace tidal::sim
