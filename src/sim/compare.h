// `tidal sim compare`: one matrix of queue replays — placers x offered loads
// x seeds — on one workload and one topology, every run the same code as
// `tidal sim queue`. The config (YAML, version 1; docs/topology.md):
//
//   version: 1
//   name: philly-fat-tree
//   jobs: ../../../shared/traces/philly/pollux_philly_jobs.csv   # relative to this file
//   format: philly            # or openb, auto
//   nodes: ...                # optional when the topology gives every host's GPUs
//   topology: ../topologies/philly-fat-tree.yaml
//   workload_model: ...       # optional; the built-in default otherwise
//   queue: fifo-backfill
//   placers: [topo, first-fit, random, slurm-tree, kueue-tas, hived]
//   loads: [0.6, 0.75, 0.9]   # offered load; or time_scales: [4, 5, 6]
//   seeds: [1]
//   limit: 0                  # first N jobs only
//   max_wait: -1              # see sim queue --max-wait / --slowdown-ok
//   slowdown_ok: 1.0
//
// The tenant comparison replaces `placers:` by `policies:` (docs/tenancy.md):
//
//   tenants: proportional     # or a tenants file
//   policies:
//     - {name: static-partitions, queue: static-partitions, placer: bestfit}
//     - {name: tidal, queue: tidal, placer: topo}
//   checkpoint_interval: 1800
//   restart_penalty: 60
//   reclaim_slowdown_max: 2.0 # optional: sim queue --reclaim-slowdown-max
//   start_estimates: 200      # optional: sim queue --start-estimates (error of
//   start_estimate_samples: 20  # the start-time estimates, per row)
//
// Runs are independent and deterministic, so running them on several
// threads gives the same rows in the same order.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "sim/market_sim.h"
#include "sim/queue_sim.h"

namespace YAML {
class Node;
}

namespace tidal::sim {

// A config's `hoarding: {share, min_tail, max_tail, seed}` map (path: the
// config file, for messages).
Result<HoardingScenario> ReadHoardingNode(const YAML::Node& h, const std::string& path);
// A path in a config file, relative to the file's directory unless absolute.
std::string ResolveConfigPath(const std::string& config_file, const std::string& p);

// One compared policy: a queue policy and a placer under a label.
struct ComparePolicy {
  std::string name, queue, placer;
  bool market = false;  // runs the market (the config's `market:` file)
};

struct CompareConfig {
  std::string source;  // the config file
  std::string name;
  std::string jobs, format = "auto", nodes, topology, workload_model;
  std::string queue = "fifo-backfill";
  std::vector<std::string> placers;
  // Either placers (each with `queue`) or policies: a list of {name, queue,
  // placer} (the tenant comparison, docs/tenancy.md).
  std::vector<ComparePolicy> policies;
  std::string tenants;  // sim queue --tenants: "proportional" or a file
  HoardingScenario hoarding;  // zombies, for every policy (sim queue --hoarding)
  std::string market;         // the market config for policies with `market: true` ("" = the defaults)
  int64_t checkpoint_interval_s = 1800, restart_penalty_s = 60;
  int64_t start_estimates = 0;  // sim queue --start-estimates; 0 = off
  int start_estimate_samples = 20;
  std::vector<std::string> estimates = {"exact"};  // sim queue --estimate; a row per value
  std::vector<double> loads;        // offered loads (exclusive with time_scales)
  std::vector<double> time_scales;
  std::vector<uint64_t> seeds = {1};
  int64_t limit = 0;
  int64_t max_wait_s = -1;
  double slowdown_ok = 1.0;
  bool single_node_if_fits = false;
  double reclaim_slowdown_max = 0;  // 0: each policy's default
};

Result<CompareConfig> ReadCompareConfig(const std::string& path);

struct CompareRow {
  std::string policy;     // the label: the placer, or the policy's name
  std::string queue, placer;
  bool market = false;
  std::string estimate = "exact";
  double load = 0;        // the requested offered load (or 0 with time scales)
  double time_scale = 1;
  uint64_t seed = 0;
  QueueSimResult result;  // jobs cleared to keep memory small
};

struct CompareProgress {
  int done = 0, total = 0;
  std::string last;  // "topo @ 0.75 seed 1"
};

// threads: 0 = one per core (at most the number of runs).
Result<std::vector<CompareRow>> RunCompare(const CompareConfig& config, int threads,
                                           const std::function<void(const CompareProgress&)>& progress = {});

// {"name", "rows":[{"policy","load","seed", <every sim queue JSON key>}], "targets": {...}}
nlohmann::json CompareJson(const CompareConfig& config, const std::vector<CompareRow>& rows);
// The targets checked on the rows: per load, whether `topo` has the
// lowest comm share and mean JCT, no worse mean delay than the best other
// placer, and comm share < 12% where first-fit's is >= 20%.
nlohmann::json CompareTargets(const std::vector<CompareRow>& rows);
// The tenant issue's targets, where a policy named "tidal" is compared: per
// load, tidal's mean wait <= 0.1 x static-partitions' and <= 0.5 x the best
// other policy's, p99 wait no worse than the best other's, zero guarantee
// violations, fewer lost GPU-hours than kueue and slurm-multifactor where
// those preempt.
nlohmann::json CompareTenantTargets(const std::vector<CompareRow>& rows);
// The market comparison's targets (docs/market.md): per load, each market row
// against the static-partitions row: mean queueing cut >= 5x and hoarded
// GPU-hours cut >= 80%, and the ledger check (sum of balances = grants).
nlohmann::json CompareMarketTargets(const std::vector<CompareRow>& rows);
std::string CompareTable(const std::vector<CompareRow>& rows);
// rows.json, rows.csv and report.html (plots per metric over load, one line per placer).
Status WriteCompareOutputs(const CompareConfig& config, const std::vector<CompareRow>& rows, const std::string& dir);

}  // namespace tidal::sim
